"""The Table 2 layout: Overall, Perceptivity (OR MR CS), Interactivity (AR TS PI)."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY
from mtvbench.scoring.aggregate import Scores, fmt

COLUMNS = ["Overall", *(t.abbr for t in PERCEPTIVITY), *(t.abbr for t in INTERACTIVITY),
           "Perceptivity", "Interactivity"]


def row_values(s: Scores) -> list[float | None]:
    return [s.overall, *(s.tasks.get(t.value) for t in PERCEPTIVITY),
            *(s.tasks.get(t.value) for t in INTERACTIVITY), s.perceptivity, s.interactivity]


def leaderboard_markdown(rows: Sequence[tuple[str, Scores]], note: str | None = None) -> str:
    ordered = sorted(rows, key=lambda r: -(r[1].overall if r[1].overall is not None else -1))
    lines = ["| Model | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, s in ordered:
        lines.append(f"| {name} | " + " | ".join(fmt(v) for v in row_values(s)) + " |")
    lines.append("")
    for name, s in ordered:
        ci = s.ci95.get("overall")
        ci_txt = f"95% CI of Overall [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "no CI"
        c = s.counts
        lines.append(
            f"- {name}: judge {s.judge} x{s.judge_runs} (spread of Overall across runs: sd {fmt(s.judge_run_std)}), "
            f"context {s.context}, {ci_txt}; {c.dialogues} dialogues, {c.scored_turns} scored turns, "
            f"{c.unscored_judge_runs} unscored judge runs, {c.missing_responses} missing responses")
    if note:
        lines += ["", f"> {note}"]
    return "\n".join(lines) + "\n"


def leaderboard_table(rows: Sequence[tuple[str, Scores]], title: str = "MT-Video-Bench") -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("Model", style="bold", no_wrap=True, overflow="fold")
    for c in COLUMNS:
        table.add_column({"Perceptivity": "Perc.", "Interactivity": "Inter."}.get(c, c), justify="right",
                         no_wrap=True)
    for name, s in sorted(rows, key=lambda r: -(r[1].overall if r[1].overall is not None else -1)):
        table.add_row(name, *(fmt(v) for v in row_values(s)))
    return table


# ---------------------------------------------------------------------------- marked tables
# (added for the report: best value bold, second underlined, 95% CIs)

#: scores.json key behind each column (for its CI)
CI_KEYS = ["overall", *(t.value for t in PERCEPTIVITY), *(t.value for t in INTERACTIVITY),
           "perceptivity", "interactivity"]


def _ordered(rows: Sequence[tuple[str, Scores]]) -> list[tuple[str, Scores]]:
    return sorted(rows, key=lambda r: -(r[1].overall if r[1].overall is not None else -1))


def column_ranks(rows: Sequence[tuple[str, Scores]], digits: int = 2) -> list[list[int | None]]:
    """Per row and column: 1 for the best value, 2 for the second best, else ``None``.

    Values are compared as displayed (rounded to ``digits``), so ties share a mark; the
    second best is the next distinct value below the best. Rows in the given order."""
    vals = [[None if v is None else round(v, digits) for v in row_values(s)] for _, s in rows]
    out: list[list[int | None]] = [[None] * len(COLUMNS) for _ in rows]
    for j in range(len(COLUMNS)):
        distinct = sorted({v[j] for v in vals if v[j] is not None}, reverse=True)
        for i, v in enumerate(vals):
            if v[j] is None:
                continue
            if v[j] == distinct[0]:
                out[i][j] = 1
            elif len(distinct) > 1 and v[j] == distinct[1]:
                out[i][j] = 2
    return out


def marked_cells(s: Scores, ranks: list[int | None], marks: tuple[str, str], ci_format: str | None,
                 missing: str | None = None) -> list[str]:
    """One row's cells: ``marks`` (format strings) wrap the best / second value; ``ci_format``
    (two ``{}``) appends the 95% CI when given."""
    cells = []
    for j, (v, key) in enumerate(zip(row_values(s), CI_KEYS)):
        txt = missing if v is None and missing is not None else fmt(v)
        if ranks[j] in (1, 2):
            txt = marks[ranks[j] - 1].format(txt)
        c = s.ci95.get(key)
        if ci_format and c is not None and v is not None:
            txt += ci_format.format(fmt(c[0]), fmt(c[1]))
        cells.append(txt)
    return cells


def leaderboard_markdown_marked(rows: Sequence[tuple[str, Scores]], ci: bool = True) -> str:
    """Table 2 layout in Markdown: best **bold**, second <u>underlined</u>, CI under each value."""
    ordered = _ordered(rows)
    ranks = column_ranks(ordered)
    lines = ["| Model | " + " | ".join(COLUMNS) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]
    for (name, s), rk in zip(ordered, ranks):
        cells = marked_cells(s, rk, ("**{}**", "<u>{}</u>"), " [{}, {}]" if ci else None)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Best in **bold**, second <u>underlined</u>; [lo, hi] = 95% bootstrap CI over dialogues."]
    return "\n".join(lines) + "\n"


def leaderboard_csv(rows: Sequence[tuple[str, Scores]]) -> str:
    """One row per model: each column's value, its 95% CI bounds and its rank mark
    (1 best, 2 second, empty otherwise); also judge, judge runs, context and counts."""
    import csv
    import io

    ordered = _ordered(rows)
    ranks = column_ranks(ordered)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["model"]
    for c in COLUMNS:
        header += [c, f"{c}_ci_lo", f"{c}_ci_hi", f"{c}_mark"]
    header += ["judge", "judge_runs", "context", "dialogues", "scored_turns", "unscored_judge_runs",
               "missing_responses", "judge_run_std"]
    w.writerow(header)

    def num(x: float | None) -> str:
        return "" if x is None else f"{x:.4f}"

    for (name, s), rk in zip(ordered, ranks):
        row: list[str] = [name]
        for j, (v, key) in enumerate(zip(row_values(s), CI_KEYS)):
            c = s.ci95.get(key)
            row += [num(v), num(c[0]) if c else "", num(c[1]) if c else "",
                    {1: "best", 2: "second"}.get(rk[j] or 0, "")]
        row += [s.judge, str(s.judge_runs), s.context, str(s.counts.dialogues), str(s.counts.scored_turns),
                str(s.counts.unscored_judge_runs), str(s.counts.missing_responses), num(s.judge_run_std)]
        w.writerow(row)
    return buf.getvalue()


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def leaderboard_latex(rows: Sequence[tuple[str, Scores]], ci: bool = True,
                      caption: str = "Evaluation results on MT-Video-Bench.", label: str = "tab:mtvbench") -> str:
    """Table 2 layout as a LaTeX ``table`` (booktabs): best ``\\textbf``, second
    ``\\underline``; with ``ci`` each value is followed by its 95% CI in ``\\scriptsize``."""
    ordered = _ordered(rows)
    ranks = column_ranks(ordered)
    n = len(COLUMNS)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{l" + "r" * n + "}", r"\toprule",
             r" & & \multicolumn{3}{c}{Perceptivity} & \multicolumn{3}{c}{Interactivity} & & \\",
             r"\cmidrule(lr){3-5}\cmidrule(lr){6-8}",
             "Model & " + " & ".join(latex_escape(c) for c in COLUMNS) + r" \\", r"\midrule"]
    for (name, s), rk in zip(ordered, ranks):
        cells = marked_cells(s, rk, (r"\textbf{{{}}}", r"\underline{{{}}}"),
                             r" {{\scriptsize [{}, {}]}}" if ci else None, missing="--")
        lines.append(latex_escape(name) + " & " + " & ".join(cells) + r" \\")
    note = " The best and second-best values are in bold and underlined."
    if ci:
        note += " Brackets: 95\\% bootstrap CI over dialogues."
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(caption)}{note}}}",
              rf"\label{{{label}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"
