from __future__ import annotations

import csv
import io

from mtvbench.render.leaderboard import (
    column_ranks,
    leaderboard_csv,
    leaderboard_latex,
    leaderboard_markdown,
    leaderboard_markdown_marked,
    leaderboard_table,
)
from mtvbench.scoring.aggregate import Counts, Scores


def _scores(overall, or_, ci=None):
    tasks = {"object_reference": or_, "memory_recall": 50.0, "content_summary": None, "answer_refusal": 40.0,
             "topic_shifting": 60.0, "proactive_interaction": 70.0}
    return Scores(overall=overall, perceptivity=50.0, interactivity=56.0, tasks=tasks,
                  ci95=ci or {}, counts=Counts(dialogues=3), model="m", judge="offline")


ROWS = [("low", _scores(40.0, 10.0)), ("best", _scores(70.0, 90.0, {"overall": (65.5, 74.25)})),
        ("mid", _scores(55.0, 90.004)), ("tie", _scores(55.001, 20.0))]


def test_ranks_best_second_and_ties():
    ordered = sorted(ROWS, key=lambda r: -r[1].overall)
    names = [n for n, _ in ordered]
    assert names == ["best", "tie", "mid", "low"]
    ranks = column_ranks(ordered)
    overall = [r[0] for r in ranks]
    assert overall == [1, 2, 2, None]  # 55.00 and 55.00 tie as displayed
    or_col = [r[1] for r in ranks]
    assert or_col == [1, 2, 1, None]  # 90.00 == 90.00 both best; 20 is the next distinct value
    cs_col = [r[3] for r in ranks]
    assert cs_col == [None] * 4  # no values


def test_latex_bold_underline_and_ci():
    tex = leaderboard_latex(ROWS)
    best_line = next(line for line in tex.splitlines() if line.startswith("best &"))
    low_line = next(line for line in tex.splitlines() if line.startswith("low &"))
    tie_line = next(line for line in tex.splitlines() if line.startswith("tie &"))
    assert best_line.split(" & ")[1] == r"\textbf{70.00} {\scriptsize [65.50, 74.25]}"
    assert tie_line.split(" & ")[1] == r"\underline{55.00}"
    assert low_line.split(" & ")[1] == "40.00"
    assert r"\multicolumn{3}{c}{Perceptivity}" in tex and r"\toprule" in tex and r"\end{tabular}" in tex
    # every row has one cell per column
    assert best_line.count(" & ") == 9 and best_line.endswith(r"\\")
    assert "--" in low_line  # CS has no value
    no_ci = leaderboard_latex(ROWS, ci=False)
    assert r"\scriptsize" not in no_ci


def test_latex_escapes_names():
    tex = leaderboard_latex([("gpt_4o & co 100%", _scores(1.0, 1.0))])
    assert r"gpt\_4o \& co 100\%" in tex


def test_csv_has_ci_and_marks():
    rows = list(csv.DictReader(io.StringIO(leaderboard_csv(ROWS))))
    assert [r["model"] for r in rows] == ["best", "tie", "mid", "low"]
    assert rows[0]["Overall"] == "70.0000" and rows[0]["Overall_ci_lo"] == "65.5000"
    assert rows[0]["Overall_mark"] == "best" and rows[1]["Overall_mark"] == "second" and rows[3]["Overall_mark"] == ""
    assert rows[1]["Overall_ci_lo"] == "" and rows[0]["CS"] == ""


def test_markdown_marked_and_existing_functions_unchanged():
    md = leaderboard_markdown_marked(ROWS)
    assert "| best | **70.00** [65.50, 74.25] |" in md and "<u>55.00</u>" in md
    assert leaderboard_markdown(ROWS).startswith("| Model | Overall |")
    assert len(leaderboard_table(ROWS).table.rows) == 4
