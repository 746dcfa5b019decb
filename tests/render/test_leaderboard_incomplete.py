"""INCOMPLETE is shown wherever a score appears, and a partial Overall is never the paper's Overall."""

from __future__ import annotations

import csv
import io
import re

import pytest
from rich.console import Console

from mtvbench.render.leaderboard import (
    column_ranks,
    leaderboard_csv,
    leaderboard_latex,
    leaderboard_markdown,
    leaderboard_markdown_marked,
    leaderboard_table,
    ordered,
)
from mtvbench.scoring.aggregate import Counts, Scores
from tests.support.hostile import PageReader

TASKS6 = ["object_reference", "memory_recall", "content_summary", "answer_refusal", "topic_shifting",
          "proactive_interaction"]


def _scores(overall, *, complete=True, partial=None, k=6, reasons=(), task=None):
    tasks = {t: (task if task is not None else overall if overall is not None else partial) for t in TASKS6}
    if k < 6:
        tasks["proactive_interaction"] = None
    return Scores(overall=overall, overall_partial=partial, tasks_scored=k, perceptivity=tasks["memory_recall"],
                  interactivity=None if k < 6 else tasks["answer_refusal"], tasks=tasks,
                  ci95={"overall": (overall - 1, overall + 1)} if overall is not None else {},
                  counts=Counts(dialogues=6, unscored_judge_runs=0 if complete else 4), model="m", judge="j",
                  complete=complete, incomplete_reasons=list(reasons))


SOLID = ("solid", _scores(50.0))
WEAK = ("weak", _scores(40.0))
FLAKY = ("flaky", _scores(90.0, complete=False, reasons=["4 judge runs without a verdict"]))
PARTIAL = ("partial", _scores(None, complete=False, partial=80.0, k=5,
                              reasons=["1 of 6 tasks without a score (PI)"]))
ROWS = [PARTIAL, FLAKY, WEAK, SOLID]


def test_incomplete_rows_come_last_and_take_no_marks():
    names = [n for n, _ in ordered(ROWS)]
    assert names == ["solid", "weak", "flaky", "partial"]
    ranks = column_ranks(ordered(ROWS))
    assert ranks[0][0] == 1 and ranks[1][0] == 2  # the complete runs hold best and second
    assert ranks[2] == [None] * len(ranks[2]) and ranks[3] == [None] * len(ranks[3])


@pytest.mark.parametrize("render", [leaderboard_markdown, leaderboard_markdown_marked])
def test_markdown_says_incomplete_with_reasons(render):
    md = render(ROWS)
    lines = md.splitlines()
    partial = next(line for line in lines if line.startswith("| partial |"))
    flaky = next(line for line in lines if line.startswith("| flaky |"))
    assert "| partial, 5/6 tasks: 80.00 |" in partial and partial.endswith("| **INCOMPLETE** |")
    assert flaky.endswith("| **INCOMPLETE** |") and "**90.00**" not in flaky
    assert next(line for line in lines if line.startswith("| solid |")).endswith("| complete |")
    assert "partial: INCOMPLETE — 1 of 6 tasks without a score (PI)" in md
    assert "flaky: INCOMPLETE — 4 judge runs without a verdict" in md


def test_csv_has_status_partial_overall_and_reasons():
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(leaderboard_csv(ROWS)))}
    assert rows["partial"]["Overall"] == "" and rows["partial"]["overall_partial"] == "80.0000"
    assert rows["partial"]["tasks_scored"] == "5" and rows["partial"]["status"] == "INCOMPLETE"
    assert rows["partial"]["incomplete_reasons"] == "1 of 6 tasks without a score (PI)"
    assert rows["flaky"]["Overall_mark"] == "" and rows["solid"]["Overall_mark"] == "best"
    assert rows["solid"]["status"] == "complete"


def test_latex_marks_incomplete_rows_and_explains_them():
    tex = leaderboard_latex(ROWS)
    partial = next(line for line in tex.splitlines() if line.startswith("partial"))
    assert partial.startswith(r"partial$^\dagger$ & partial, 5/6 tasks: 80.00 &")
    assert r"\textbf" not in next(line for line in tex.splitlines() if line.startswith("flaky"))
    assert "INCOMPLETE" in tex and "1 of 6 tasks without a score (PI)" in tex


def test_terminal_table_says_incomplete_at_80_columns():
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(leaderboard_table(ROWS, title="t"))
    out = buf.getvalue()
    assert all(len(line) <= 80 for line in out.splitlines())
    flat = " ".join(out.split())
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("partial "))
    # the Overall cell wraps inside its column: "partial, 5/6" / "tasks: 80.00"
    assert re.match(r"partial +partial, 5/6 +80\.00", lines[i]) and re.match(r" +tasks: 80\.00 *$", lines[i + 1])
    assert "partial: INCOMPLETE — 1 of 6 tasks without a score (PI)" in flat
    assert "flaky: INCOMPLETE — 4 judge runs without a verdict" in flat
    assert out.index("solid") < out.index("weak") < out.index("flaky")


def test_report_html_of_a_run_with_a_missing_task(tmp_path):
    from mtvbench.analysis.report import build_report
    from tests.support.datasets import make_dataset
    from tests.support.runs import make_store_run

    data = make_dataset(tmp_path / "data")
    (data / "checklist" / "proactive_interaction_CheckList.json").unlink()
    run = make_store_run(data, tmp_path / "run", model="five-tasks")
    res = build_report([run], tmp_path / "rep", thumbs=0, bootstrap=20)
    html = (tmp_path / "rep" / "report.html").read_text()
    lb = html.split('<table class="lb">')[1].split("</table>")[0]
    p = PageReader("<table>" + lb + "</table>")
    header, row = p.rows[0], p.rows[1]
    assert header[-1] == "Status" and row[0] == "five-tasks" and row[-1] == "INCOMPLETE"
    assert row[1] == "partial, 5/6 tasks: 100.00"
    assert "1 of 6 tasks without a score (PI)" in html
    assert any("INCOMPLETE" in n for n in res.notes)
    md = (tmp_path / "rep" / "leaderboard.md").read_text()
    assert "partial, 5/6 tasks: 100.00" in md and "INCOMPLETE" in md
    assert not re.search(r"\| five-tasks \| \*\*", md)  # the partial Overall is not marked best
