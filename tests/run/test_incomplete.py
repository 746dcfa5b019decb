"""Class 4, run side: a missing task is an error unless chosen (--tasks); INCOMPLETE is loud and exits 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.openai_server import Faults, LoopbackServer, ServerState
from tests.support.run_helpers import cli, cli_run, model_requests, scores_of, settings


def test_missing_checklist_file_is_an_error_naming_it(dataset: Path, tmp_path: Path) -> None:
    (dataset / "checklist" / "summary_CheckList.json").unlink()
    res = cli("run", "--data", dataset, "--model", "oracle", "--judge", "offline", "--out", tmp_path / "run", "--quiet")
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "CS (content_summary): checklist file missing" in out and "summary_CheckList.json" in out
    assert "--tasks OR,MR,AR,TS,PI" in out and "Traceback" not in out
    assert not (tmp_path / "run").exists()  # an early error leaves no run directory


def test_task_subset_on_purpose_is_complete_with_a_partial_overall(dataset: Path, tmp_path: Path) -> None:
    (dataset / "checklist" / "summary_CheckList.json").unlink()
    with LoopbackServer() as srv:
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache"), "--tasks", "OR,memory_recall")
    assert res.exit_code == 0, res.output
    asked = model_requests(srv.state)
    assert len(asked) == 4 and all("object_reference" in r["text"] or "memory_recall" in r["text"] for r in asked)
    s = scores_of(tmp_path / "run")
    assert s["tasks_selected"] == ["object_reference", "memory_recall"] and s["complete"]
    assert s["overall"] is None and s["tasks_scored"] == 2 and s["overall_partial"] is not None
    assert s["tasks"]["content_summary"] is None
    out = " ".join(res.output.split())
    assert "Overall partial, 2/6 tasks" in out and "tasks selected: object_reference, memory_recall" in out
    # the subset is part of the run identity
    with LoopbackServer() as srv2:
        res = cli_run(settings(dataset, tmp_path / "run", srv2.url, tmp_path / "cache"), "--tasks", "OR")
    assert res.exit_code == 2 and "tasks differ" in " ".join(res.output.split())


def test_unknown_task_is_a_config_error(dataset: Path, tmp_path: Path) -> None:
    res = cli("run", "--data", dataset, "--model", "oracle", "--judge", "offline", "--out", tmp_path / "run",
              "--tasks", "OR,XX")
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert "--tasks" in out and "unknown task 'XX'" in out and "Traceback" not in out
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("protocol", "why"), [("paper", "no parseable verdict"), ("authors", "the reply is not JSON")])
def test_every_judge_call_unparsable_is_incomplete_and_exits_3(dataset: Path, tmp_path: Path, protocol: str,
                                                               why: str) -> None:
    with LoopbackServer(ServerState(faults=Faults(always_malformed_judge=True))) as srv:
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", judge_runs=1,
                               judge_max_attempts=1, protocol=protocol))
    assert res.exit_code == 3, res.output
    out = " ".join(res.output.split())
    assert "INCOMPLETE" in out and "no judge verdict at all" in out and "12 judge runs without a verdict" in out
    assert "12 judge runs gave no parseable verdict" in out and f"last judge failure: {why}" in out
    s = scores_of(tmp_path / "run")
    assert not s["complete"] and s["status"] == "INCOMPLETE" and s["overall"] is None and s["overall_partial"] is None
    assert any("no judge verdict at all" in r for r in s["incomplete_reasons"])
    res = cli("score", str(tmp_path / "run"), "--format", "table")
    assert res.exit_code == 3
    out = " ".join(res.output.split())
    assert "status: INCOMPLETE" in out and "- 6 of 6 tasks without a score" in out
    assert "counts: 6 dialogues, 18 model turns, 0 scored turns, 12 turns without a verdict" in out
    assert '{"dialogues"' not in res.output  # counts are readable, not a raw dict


def test_complete_run_says_so_and_exits_0(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    assert res.exit_code == 0, res.output
    assert "status: complete; Overall 20.00" in res.output and "INCOMPLETE" not in res.output
    s = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert s["complete"] and s["status"] == "complete" and s["incomplete_reasons"] == [] and s["tasks_selected"] == [
        "object_reference", "memory_recall", "content_summary", "answer_refusal", "topic_shifting",
        "proactive_interaction"]
