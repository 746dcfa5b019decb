"""`validate`: dialogues without any scored turn are an error (whole dataset and per task), and
`checklists` still accepts such a dataset (writing the missing checklists is its job)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.data.official import load_official
from mtvbench.data.schema import TASKS
from tests.support.build_replies import Scripted
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState

runner = CliRunner()


def _without_checklists(data: Path, stems: list[str]) -> Path:
    for stem in stems:
        (data / "checklist" / f"{stem}_CheckList.json").write_text("{}")
    return data


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_validate_errors_on_a_dataset_without_any_scored_turn(tmp_path: Path) -> None:
    data = _without_checklists(make_dataset(tmp_path / "data"), [t.official_stem for t in TASKS])
    res = runner.invoke(app, ["validate", str(data)])
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "ERROR: mtqa: 6 dialogue(s) but no scored turn in the whole dataset" in out
    for t in TASKS:
        assert f"ERROR: mtqa/{t.official_stem}.json: 1 dialogue(s) but no scored turn" in out, t
    assert "Traceback" not in out
    # loading for other purposes (run's own per-task check, the review app) is unchanged
    bench, problems = load_official(data, check_videos=False)
    assert bench is not None and not [p for p in problems if p.level == "error"]


def test_validate_errors_on_one_task_without_a_scored_turn(tmp_path: Path) -> None:
    data = _without_checklists(make_dataset(tmp_path / "data"), ["memory_recall"])
    res = runner.invoke(app, ["validate", str(data)])
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "ERROR: mtqa/memory_recall.json: 1 dialogue(s) but no scored turn: no model turn has a checklist " \
           "entry in checklist/memory_recall_CheckList.json" in out
    assert "whole dataset" not in out and out.count("no scored turn") == 1
    assert "1 errors" in out


def test_checklists_accepts_a_dataset_without_scored_turns_and_makes_it_valid(tmp_path: Path) -> None:
    data = _without_checklists(make_dataset(tmp_path / "data"), [t.official_stem for t in TASKS])
    out = tmp_path / "filled"
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = runner.invoke(app, ["checklists", "--data", str(data), "--model", "openai:gen",
                                  "--model-base-url", srv.url, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "generated 18" in res.output  # 2 model turns in each labelled task, 5 in TS and PI
    assert json.loads((data / "checklist" / "summary_CheckList.json").read_text()) == {}  # source untouched
    ok = runner.invoke(app, ["validate", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "18 scored turns; 0 errors" in _flat(ok.output)
