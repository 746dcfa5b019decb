"""The Table 2 layout: Overall, Perceptivity (OR MR CS), Interactivity (AR TS PI)."""

from __future__ import annotations

from collections.abc import Sequence

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
    table = Table(title=title)
    table.add_column("Model", style="bold")
    for c in COLUMNS:
        table.add_column(c, justify="right")
    for name, s in sorted(rows, key=lambda r: -(r[1].overall if r[1].overall is not None else -1)):
        table.add_row(name, *(fmt(v) for v in row_values(s)))
    return table
