"""The Table 2 layout: Overall, Perceptivity (OR MR CS), Interactivity (AR TS PI).

One layout, four sinks (terminal, Markdown, CSV, LaTeX; the HTML report builds on the same
helpers). Model names are untrusted text and go through :mod:`mtvbench.util.escape`.

Incomplete runs (``Scores.complete`` is False: a task without a score, missing responses,
judge runs without a verdict) are marked INCOMPLETE with their reasons in every sink, and
their Overall is never shown as the paper's Overall: the cell reads ``partial, k/6 tasks: x``
or ``–`` (``Scores.overall_label``). Ranking rule: complete runs come first, ordered by
Overall; incomplete runs follow, ordered by their (partial) Overall; only complete runs
compete for the best (bold) and second-best (underlined) marks, because a score over fewer
turns or tasks is not comparable with a complete one.

Runs on data that is not a real benchmark (``Scores.not_a_benchmark``: built with a scripted model, or the
bundled synthetic sample) say so in every sink: ``NOT A BENCHMARK`` in the Markdown status, a
``not_a_benchmark`` column in CSV, a double dagger in LaTeX, and one line per run under every table
(:func:`benchmark_notes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY
from mtvbench.render.tables import Col, RichTable, TextTable
from mtvbench.scoring.aggregate import Counts, Scores, fmt
from mtvbench.util.escape import csv_cell, latex, markdown

COLUMNS = ["Overall", *(t.abbr for t in PERCEPTIVITY), *(t.abbr for t in INTERACTIVITY),
           "Perceptivity", "Interactivity"]

#: scores.json key behind each column (for its CI)
CI_KEYS = ["overall", *(t.value for t in PERCEPTIVITY), *(t.value for t in INTERACTIVITY),
           "perceptivity", "interactivity"]

RANK_RULE = ("Incomplete runs are listed after complete ones and take no part in the best/second marks "
             "(their scores cover fewer turns or tasks).")


def row_values(s: Scores) -> list[float | None]:
    return [s.overall, *(s.tasks.get(t.value) for t in PERCEPTIVITY),
            *(s.tasks.get(t.value) for t in INTERACTIVITY), s.perceptivity, s.interactivity]


def _sort_key(s: Scores) -> tuple[int, float]:
    value = s.overall if s.complete else (s.overall if s.overall is not None else s.overall_partial)
    return (0 if s.complete else 1, -(value if value is not None else -1.0))


def ordered(rows: Sequence[tuple[str, Scores]]) -> list[tuple[str, Scores]]:
    """Complete runs by Overall, then incomplete runs by their partial Overall (see module doc)."""
    return sorted(rows, key=lambda r: _sort_key(r[1]))


_ordered = ordered  # earlier name


def overall_cell(s: Scores, digits: int = 2) -> str:
    """The Overall cell: the paper's Overall, or ``partial, k/6 tasks: x``, or ``–``."""
    return s.overall_label(digits)


def counts_summary(c: Counts) -> str:
    """The counts of a run in words (for the terminal and the Markdown notes)."""
    parts = [f"{c.dialogues} dialogues", f"{c.model_turns} model turns", f"{c.scored_turns} scored turns",
             f"{c.unscored_turns} unscored turns", f"{c.unscored_judge_runs} unscored judge runs",
             f"{c.missing_responses} missing responses"]
    if c.dialogues_without_score:
        parts.append(f"{c.dialogues_without_score} dialogues without a score")
    return ", ".join(parts)


def incomplete_notes(rows: Sequence[tuple[str, Scores]]) -> list[str]:
    """One plain-text line per incomplete run: ``NAME: INCOMPLETE — reason; reason``."""
    out = []
    for name, s in rows:
        if not s.complete:
            why = "; ".join(s.incomplete_reasons) or "not every turn has a score"
            out.append(f"{name}: INCOMPLETE — {why}")
    return out


def _detail(name: str, s: Scores) -> str:
    ci = s.ci95.get("overall")
    ci_txt = f"95% CI of Overall [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "no CI of Overall"
    return (f"{name}: {s.status}; protocol {s.protocol} (model sent: {s.inference}); judge {s.judge} "
            f"x{s.judge_runs} (spread of Overall across runs: sd {fmt(s.judge_run_std)}), context {s.context}, "
            f"{ci_txt}; {counts_summary(s.counts)}")


def protocol_notes(rows: Sequence[tuple[str, Scores]]) -> list[str]:
    """One line when rows were scored under different protocols (their numbers do not compare)."""
    found = sorted({s.protocol for _, s in rows})
    if len(found) < 2:
        return []
    which = "; ".join(f"{p}: {', '.join(n for n, s in rows if s.protocol == p)}" for p in found)
    return [f"These runs were scored under different protocols ({which}); their numbers are not comparable: "
            "rerun them under one --protocol."]


def leaderboard_markdown(rows: Sequence[tuple[str, Scores]], note: str | None = None) -> str:
    """Table 2 layout in Markdown with a Status column and one detail line per run."""
    rows = ordered(rows)
    lines = ["| Model | " + " | ".join(COLUMNS) + " | Protocol | Status |",
             "|---" + "|---:" * len(COLUMNS) + "|---|---|"]
    for name, s in rows:
        cells = [overall_cell(s)] + [fmt(v) for v in row_values(s)[1:]]
        lines.append(f"| {markdown(name)} | " + " | ".join(cells) + f" | {markdown(s.protocol)} | {_status_md(s)} |")
    lines.append("")
    lines += ["- " + markdown(_detail(name, s)) for name, s in rows]
    lines += ["", *("> " + markdown(n) for n in protocol_notes(rows))] if protocol_notes(rows) else []
    lines += _incomplete_md(rows)
    lines += _benchmark_md(rows)
    if note:
        lines += ["", "> " + markdown(note)]
    return "\n".join(lines) + "\n"


def _status_md(s: Scores) -> str:
    status = "complete" if s.complete else "**INCOMPLETE**"
    return status + ("; **NOT A BENCHMARK**" if s.not_a_benchmark is not None else "")


def benchmark_notes(rows: Sequence[tuple[str, Scores]]) -> list[str]:
    """One plain-text line per run whose data is not a real benchmark: ``NAME: NOT a real benchmark: why``."""
    return [f"{name}: {s.not_a_benchmark.line}" for name, s in rows if s.not_a_benchmark is not None]


def _benchmark_md(rows: Sequence[tuple[str, Scores]]) -> list[str]:
    notes = benchmark_notes(rows)
    if not notes:
        return []
    return ["", "**NOT A BENCHMARK** (these numbers exercise the tools; they are not MT-Video-Bench scores):",
            ""] + ["- " + markdown(n) for n in notes]


def _incomplete_md(rows: Sequence[tuple[str, Scores]]) -> list[str]:
    notes = incomplete_notes(rows)
    if not notes:
        return []
    return ["", "**INCOMPLETE runs** (a partial Overall is not the paper's Overall):", ""] + [
        "- " + markdown(n) for n in notes]


def leaderboard_text_table(rows: Sequence[tuple[str, Scores]], title: str | None = "MT-Video-Bench") -> TextTable:
    """The Table 2 layout as a :class:`TextTable` (terminal, and Markdown/CSV of simple prints)."""
    rows = ordered(rows)
    cols = [Col("Model", "id"), Col("Overall", "text", right=True)] + [
        Col({"Perceptivity": "Perc.", "Interactivity": "Inter."}.get(c, c), "num") for c in COLUMNS[1:]]
    body: list[list[str | float | None]] = [[name, overall_cell(s), *row_values(s)[1:]] for name, s in rows]
    return TextTable(columns=cols, rows=body, title=title, notes=incomplete_notes(rows) + benchmark_notes(rows),
                     row_styles=[None if s.complete else "yellow" for _, s in rows], note_style="bold yellow")


def leaderboard_table(rows: Sequence[tuple[str, Scores]], title: str = "MT-Video-Bench") -> RichTable:
    """The terminal table (used by ``run``, ``score`` and ``demo``): fits the terminal's width,
    model names whole, INCOMPLETE runs in yellow with their reasons under the table."""
    return RichTable(leaderboard_text_table(rows, title))


# ---------------------------------------------------------------------------- marked tables
# (the report: best value bold, second underlined, 95% CIs)


def column_ranks(rows: Sequence[tuple[str, Scores]], digits: int = 2) -> list[list[int | None]]:
    """Per row and column: 1 for the best value, 2 for the second best, else ``None``.

    Values are compared as displayed (rounded to ``digits``), so ties share a mark; the
    second best is the next distinct value below the best. Only complete runs are ranked
    (incomplete rows get no mark). Rows in the given order."""
    vals = [[None if v is None or not s.complete else round(v, digits) for v in row_values(s)] for _, s in rows]
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
                 missing: str | None = None, partial: str | None = None) -> list[str]:
    """One row's cells: ``marks`` (format strings) wrap the best / second value; ``ci_format``
    (two ``{}``) appends the 95% CI when given; ``partial`` is the Overall cell of a run
    without the paper's Overall (default: ``Scores.overall_label``)."""
    cells = []
    for j, (v, key) in enumerate(zip(row_values(s), CI_KEYS)):
        if j == 0 and v is None:
            cells.append(partial if partial is not None else overall_cell(s))
            continue
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
    rows = ordered(rows)
    ranks = column_ranks(rows)
    lines = ["| Model | " + " | ".join(COLUMNS) + " | Protocol | Status |",
             "|---" + "|---:" * len(COLUMNS) + "|---|---|"]
    for (name, s), rk in zip(rows, ranks):
        cells = marked_cells(s, rk, ("**{}**", "<u>{}</u>"), " [{}, {}]" if ci else None)
        lines.append(f"| {markdown(name)} | " + " | ".join(cells) + f" | {markdown(s.protocol)} | {_status_md(s)} |")
    lines += ["", "Best in **bold**, second <u>underlined</u>; [lo, hi] = 95% bootstrap CI over dialogues. "
              + RANK_RULE]
    lines += ["", *("> " + markdown(n) for n in protocol_notes(rows))] if protocol_notes(rows) else []
    lines += _incomplete_md(rows)
    lines += _benchmark_md(rows)
    return "\n".join(lines) + "\n"


def leaderboard_csv(rows: Sequence[tuple[str, Scores]]) -> str:
    """One row per model: each column's value, its 95% CI bounds and its rank mark
    (1 best, 2 second, empty otherwise); the status, partial Overall and reasons when
    incomplete; also judge, judge runs, context and counts, and ``not_a_benchmark`` (why the data is not a
    real benchmark; empty for a real one). ``Overall`` is empty unless all six tasks have a score (then see
    ``overall_partial``)."""
    import csv
    import io

    rows = ordered(rows)
    ranks = column_ranks(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["model"]
    for c in COLUMNS:
        header += [c, f"{c}_ci_lo", f"{c}_ci_hi", f"{c}_mark"]
    header += ["status", "overall_partial", "tasks_scored", "incomplete_reasons", "protocol", "inference", "judge",
               "judge_runs", "context", "dialogues", "scored_turns", "unscored_judge_runs", "missing_responses",
               "judge_run_std", "not_a_benchmark"]
    w.writerow(header)
    for (name, s), rk in zip(rows, ranks):
        row: list[str] = [csv_cell(name)]
        for j, (v, key) in enumerate(zip(row_values(s), CI_KEYS)):
            c = s.ci95.get(key)
            row += [csv_cell(v), csv_cell(c[0]) if c else "", csv_cell(c[1]) if c else "",
                    {1: "best", 2: "second"}.get(rk[j] or 0, "")]
        row += [s.status, csv_cell(s.overall_partial), csv_cell(s.tasks_scored),
                csv_cell("; ".join(s.incomplete_reasons)), csv_cell(s.protocol), csv_cell(s.inference),
                csv_cell(s.judge), csv_cell(s.judge_runs),
                csv_cell(s.context), csv_cell(s.counts.dialogues), csv_cell(s.counts.scored_turns),
                csv_cell(s.counts.unscored_judge_runs), csv_cell(s.counts.missing_responses),
                csv_cell(s.judge_run_std),
                csv_cell(s.not_a_benchmark.reason if s.not_a_benchmark is not None else None)]
        w.writerow(row)
    return buf.getvalue()


def latex_escape(text: str) -> str:
    """Kept for callers of the earlier name: :func:`mtvbench.util.escape.latex`."""
    return latex(text)


def leaderboard_latex(rows: Sequence[tuple[str, Scores]], ci: bool = True,
                      caption: str = "Evaluation results on MT-Video-Bench.", label: str = "tab:mtvbench") -> str:
    """Table 2 layout as a LaTeX ``table`` (booktabs): best ``\\textbf``, second
    ``\\underline``; with ``ci`` each value is followed by its 95% CI in ``\\scriptsize``.
    Incomplete runs carry a dagger and are explained under the table."""
    rows = ordered(rows)
    ranks = column_ranks(rows)
    n = len(COLUMNS)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{l" + "r" * n + "}", r"\toprule",
             r" & & \multicolumn{3}{c}{Perceptivity} & \multicolumn{3}{c}{Interactivity} & & \\",
             r"\cmidrule(lr){3-5}\cmidrule(lr){6-8}",
             "Model & " + " & ".join(latex(c) for c in COLUMNS) + r" \\", r"\midrule"]
    for (name, s), rk in zip(rows, ranks):
        partial = latex(overall_cell(s)) if s.overall is None and s.overall_partial is not None else "--"
        cells = marked_cells(s, rk, (r"\textbf{{{}}}", r"\underline{{{}}}"),
                             r" {{\scriptsize [{}, {}]}}" if ci else None, missing="--", partial=partial)
        dagger = ("" if s.complete else r"$^\dagger$") + ("" if s.not_a_benchmark is None else r"$^\ddagger$")
        lines.append(latex(name) + dagger + " & " + " & ".join(cells) + r" \\")
    note = " The best and second-best values are in bold and underlined."
    if ci:
        note += " Brackets: 95\\% bootstrap CI over dialogues."
    protocols = sorted({s.protocol for _, s in rows})
    note += (f" Scored under the {protocols[0]} protocol." if len(protocols) == 1
             else " " + " ".join(protocol_notes(rows)))
    lines += [r"\bottomrule", r"\end{tabular}"]
    notes = incomplete_notes(rows)
    if notes:
        lines.append(r"\par\smallskip{\footnotesize $^\dagger$" + latex(" ".join(n + "." for n in notes) + " "
                                                                          + RANK_RULE) + "}")
    marked = benchmark_notes(rows)
    if marked:
        lines.append(r"\par\smallskip{\footnotesize $^\ddagger$" + latex(" ".join(n + "." for n in marked)) + "}")
    lines += [rf"\caption{{{latex(caption)}{note}}}", rf"\label{{{label}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"

