"""`mtvbench run --answers-from RUN_DIR --judge J --out RUN2` (issue 19): another judge on the same answers,
the model asked nothing (a loopback server counts every request), where the answers came from recorded;
resume, identity and INCOMPLETE as for any run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from mtvbench.run.evaluate import evaluate
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cfg_for, cli, judge_requests, model_requests, scores_of


def answers(run: Path) -> dict[str, str]:
    return {x["turn_id"]: x["answer"] for x in map(json.loads, (run / "responses.jsonl").read_text().splitlines())}


def test_answers_from_asks_the_model_nothing_and_judges_the_same_answers(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
        asked, judged = len(model_requests(srv.state)), len(judge_requests(srv.state))
        assert asked == 12 and judged == 24
        args = ["run", "--answers-from", str(a), "--judge", "openai:other-judge", "--judge-base-url", srv.url,
                "--judge-runs", "1", "--out", str(b), "--quiet"]
        res = cli(*args)
        assert res.exit_code == 0, res.output
        # the model: not one request; the other judge: one run per scored turn
        assert len(model_requests(srv.state)) == asked
        assert len(judge_requests(srv.state)) == judged + 12
        assert {r["body"]["model"] for r in judge_requests(srv.state)[judged:]} == {"other-judge"}
        # resume: nothing is asked again
        again = cli(*args)
        assert again.exit_code == 0, again.output
        assert len(model_requests(srv.state)) == asked and len(judge_requests(srv.state)) == judged + 12
    # the same answers, recorded with where they came from
    assert answers(b) == answers(a) and len(answers(b)) == 12
    cfg = yaml.safe_load((b / "config.yaml").read_text())
    assert cfg["answers_from"] == str(a) and cfg["judge"] == "openai:other-judge"
    assert cfg["model"] == "openai:test-model"
    assert cfg["frames"] == 4 and cfg["model_settings"]["base_url"] == srv.url  # the answers' settings are a's
    with sqlite3.connect(b / "store.sqlite") as db:
        inputs = [json.loads(x) for (x,) in db.execute("SELECT inputs FROM responses")]
    assert {i["answers_from"] for i in inputs} == {str(a)} and all(i["fingerprint"] for i in inputs)
    usage = scores_of(b)["usage"]
    assert usage["model"]["requests"] == 0 and usage["model"]["prompt_tokens"] == 0
    assert scores_of(b)["judge"] == "openai:other-judge"
    assert "answers: those stored in" in " ".join(res.output.split())


def test_the_answers_settings_are_the_source_runs(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
        res = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(b), "--frames", "8", "--quiet")
        assert res.exit_code == 2 and "frames differ" in " ".join(res.output.split()) and not b.exists()
        res = cli("run", "--answers-from", str(tmp_path / "nothing"), "--judge", "offline", "--out", str(b), "--quiet")
        assert res.exit_code == 2 and "config.yaml: missing" in " ".join(res.output.split()) and not b.exists()
        res = cli("run", "--answers-from", str(a), "--judge", "offline", "--out", str(a), "--quiet")
        assert res.exit_code == 2 and "is the run directory --out names" in " ".join(res.output.split())
        ok = cli("run", "--answers-from", str(a), "--judge", "offline", "--judge-runs", "1", "--out", str(b),
                 "--quiet")
        assert ok.exit_code == 0, ok.output
        # the run directory belongs to stored answers: resuming it as a run that asks the model is refused
        n = len(model_requests(srv.state))
        res = cli("run", "--data", str(dataset), "--model", "openai:test-model", "--model-base-url", srv.url,
                  "--frames", "4", "--judge", "offline", "--judge-runs", "1", "--out", str(b), "--quiet")
        assert res.exit_code == 2 and "answers_from differ" in " ".join(res.output.split())
        assert len(model_requests(srv.state)) == n


def test_answers_the_source_lacks_leave_the_run_incomplete(dataset: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, a, srv.url, tmp_path / "cache"))
    missing = sorted(answers(a))[0]
    with sqlite3.connect(a / "store.sqlite") as db:
        db.execute("DELETE FROM responses WHERE turn_id=?", (missing,))
    res = cli("run", "--answers-from", str(a), "--judge", "offline", "--judge-runs", "1", "--out", str(b), "--quiet")
    assert res.exit_code == 3, res.output
    s = scores_of(b)
    assert s["complete"] is False and s["counts"]["missing_responses"] == 1
    assert answers(b)[missing] is None and all(answers(b)[t] == v for t, v in answers(a).items() if t != missing)
    with sqlite3.connect(b / "store.sqlite") as db:
        (error,) = db.execute("SELECT error FROM responses WHERE turn_id=?", (missing,)).fetchone()
    assert f"{a} has no final answer to {missing}" in error
