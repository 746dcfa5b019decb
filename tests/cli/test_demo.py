"""The demo explains itself: the columns, the two baselines and why ``refuse`` scores what it scores (from
the sample's own checklists); a rerun of a finished demo says it is complete instead of showing 0/0 bars;
notes wrap at a terminal's width (and stay one line in a pipe)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import mtvbench.render.console as console_module
from mtvbench.cli import app
from mtvbench.data.schema import TASK_ABBR, TASK_LABEL


@pytest.fixture(scope="module")
def demo_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    out = tmp_path_factory.mktemp("demo") / "demo"
    first = CliRunner().invoke(app, ["demo", "--out", str(out)], env={"COLUMNS": "80"})
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(app, ["demo", "--out", str(out)], env={"COLUMNS": "80"})
    assert second.exit_code == 0, second.output
    return out, first.output, second.output


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_demo_says_what_each_column_is(demo_twice: tuple[Path, str, str]) -> None:
    text = _flat(demo_twice[1])
    for task, abbr in TASK_ABBR.items():
        assert f"{abbr} {TASK_LABEL[task]}" in text, abbr
    assert "Perc. (perceptivity) is the mean of OR, MR, CS" in text and "Inter. (interactivity) of AR, TS, PI" in text
    assert "Overall is the mean of the six tasks" in text


def test_the_demo_says_why_refuse_scores_what_it_scores(demo_twice: tuple[Path, str, str]) -> None:
    out, first, _ = demo_twice
    text = _flat(first)
    assert "oracle: answers every turn with the dataset's own golden answer" in text
    refuse = json.loads((out / "runs" / "refuse" / "scores.json").read_text())
    # the figure said is the one the run scored, worked out from the sample's checklists
    said = float(text.split("so refuse scores exactly ")[1].split()[0])
    assert said == pytest.approx(refuse["overall"]) == pytest.approx(20.0)
    assert "1 of its 5 items expecting No" in text


def test_a_rerun_of_a_finished_demo_says_it_is_complete(demo_twice: tuple[Path, str, str]) -> None:
    _, first, second = demo_twice
    assert "already complete" not in first and "39/39" in first
    assert second.count("is already complete") == 2
    assert "0/0" not in second


def _note_on(console: Console, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(console_module, "make_console", lambda stderr=False: console)
    console_module.note("refuse", "declines every turn; " * 12)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_notes_wrap_at_a_terminals_width_and_stay_one_line_in_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    on_terminal = _note_on(Console(file=io.StringIO(), force_terminal=True, width=60, color_system=None),
                           monkeypatch)
    lines = on_terminal.splitlines()
    assert len(lines) > 2 and all(len(line) <= 60 for line in lines), on_terminal
    assert all(not line.endswith("decli") for line in lines)  # wrapped between words
    in_pipe = _note_on(Console(file=io.StringIO(), force_terminal=False, width=60), monkeypatch)
    assert len(in_pipe.splitlines()) == 1


def test_the_overall_column_is_aligned_like_the_others(demo_twice: tuple[Path, str, str]) -> None:
    lines = [line for line in demo_twice[1].splitlines() if line.startswith(("Model ", "oracle ", "refuse "))]
    assert len(lines) == 3
    header, *rows = lines
    overall_end = header.index("Overall") + len("Overall")
    for row in rows:  # the figure ends where its header ends, as in every number column
        first = re.search(r"\s(\d+\.\d\d)\s", row)
        assert first is not None and first.end(1) == overall_end, (header, row)


def test_a_role_without_a_price_shows_cost_as_a_dash() -> None:
    from mtvbench.scoring.usage import RoleUsage, UsageReport, usage_lines

    lines = usage_lines(UsageReport(model=RoleUsage(calls=3, prompt_tokens=0), judge=RoleUsage(calls=3, cost=0.0)))
    assert lines[0].endswith("cost –") and lines[1].endswith("cost –") and lines[2].endswith("cost –")
    priced = usage_lines(UsageReport(model=RoleUsage(calls=1, prompt_tokens=10, cost=None),
                                     judge=RoleUsage(calls=1)))
    assert priced[0].endswith("cost – (no price in the config)")
