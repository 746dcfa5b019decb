"""End-to-end runs against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.run.evaluate import evaluate
from tests.support.datasets import make_dataset, write_video
from tests.support.openai_server import Faults, LoopbackServer, ServerState
from tests.support.run_helpers import SRC, cfg_for, model_requests, scores_of


def test_golden_run_end_to_end(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        scores, summary = evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    reqs = model_requests(srv.state)
    # golden context: only scored model turns are sent (2 per dialogue x 6 dialogues)
    assert len(reqs) == 12 and summary.calls == 12
    assert all(r["images"] == 4 for r in reqs)  # frames reach the model as image parts
    r3 = next(r for r in reqs if r["text"].endswith("Current question: Question 3 about the summary clip?"))
    assert "Assistant: The red square moves right in round 2 and the blue circle stays." in r3["text"]
    assert "Current question: Question 3 about the summary clip?" in r3["text"]
    judge = [r for r in srv.state.requests if r["judge"]]
    assert len(judge) == 12 * 2  # two judge runs per scored turn
    s = scores_of(tmp_path / "run")
    assert set(s) >= {"overall", "perceptivity", "interactivity", "tasks", "ci95", "counts", "model", "judge"}
    assert set(s["tasks"]) == {"object_reference", "memory_recall", "content_summary", "answer_refusal",
                               "topic_shifting", "proactive_interaction"}
    assert s["counts"] == s["counts"] | {"dialogues": 6, "scored_turns": 12, "unscored_judge_runs": 0}
    # the echo answers match only the reversed-fact 'No' item -> 1/5 per turn
    assert s["overall"] == pytest.approx(20.0)
    assert s["ci95"]["overall"][0] <= 20.0 <= s["ci95"]["overall"][1]
    lines = [json.loads(x) for x in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert len(lines) == 12 and all(x["answer"].endswith("[frames=4]") for x in lines)
    assert (tmp_path / "run" / "leaderboard.md").read_text().count("openai:test-model") >= 1
    assert scores.overall == s["overall"]


def test_faults_give_the_same_scores(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "clean", srv.url, tmp_path / "cache"))
    faults = Faults(rate_limit_every=3, error_every=4, slow_every=5, slow_s=0.2, malformed_judge_every=2)
    with LoopbackServer(ServerState(faults=faults)) as srv2:
        evaluate(cfg_for(dataset, tmp_path / "faulty", srv2.url, tmp_path / "cache"))
    codes = [r["attempt"] for r in srv2.state.requests]
    assert max(codes) >= 2  # faults really happened and were retried / re-asked
    clean, faulty = scores_of(tmp_path / "clean"), scores_of(tmp_path / "faulty")
    for key in ("overall", "perceptivity", "interactivity", "tasks", "counts", "ci95"):
        assert faulty[key] == clean[key], key


def test_retry_after_is_honoured(dataset: Path, tmp_path: Path) -> None:
    faults = Faults(rate_limit_every=1, retry_after="0.4")
    with LoopbackServer(ServerState(faults=faults)) as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", limit=1, judge="offline",
                         concurrency=1))
    by_key: dict[str, list[float]] = {}
    for r in srv.state.requests:
        by_key.setdefault(r["key"], []).append(r["t"])
    gaps = [ts[1] - ts[0] for ts in by_key.values() if len(ts) > 1]
    assert gaps and min(gaps) >= 0.35  # waited as the server asked, not the 10 ms base backoff


def test_api_key_never_written(dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("MY_MODEL_KEY", secret)
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache",
                         model_settings={"base_url": srv.url, "api_key_env": "MY_MODEL_KEY"}))
    assert f"Bearer {secret}" in srv.state.auth_headers  # the key was used...
    for f in (tmp_path / "run").rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f  # ...and never written
    assert "MY_MODEL_KEY" in (tmp_path / "run" / "config.yaml").read_text()


def test_self_and_none_context(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "self", srv.url, tmp_path / "cache", context="self", judge="offline"))
    reqs = model_requests(srv.state)
    assert len(reqs) == 6 * 5  # every round up to the last scored one (round 5), in order
    r4 = next(r for r in reqs if "Question 4 about the memory_recall clip" in r["text"])
    assert "Assistant: Answer to: Question 3 about the memory_recall clip? [frames=4]" in r4["text"]
    assert "The red square moves right in round 3" not in r4["text"]  # not the golden answer
    with LoopbackServer() as srv2:
        evaluate(cfg_for(dataset, tmp_path / "none", srv2.url, tmp_path / "cache", context="none", judge="offline"))
    reqs2 = model_requests(srv2.state)
    assert len(reqs2) == 12
    assert all("Conversation history:\n\nCurrent question:" in r["text"] for r in reqs2)


def test_thinking_answers_keep_text_after_think(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer(ServerState(think=True)) as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", limit=1, judge="offline"))
    rows = [json.loads(x) for x in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert rows and all(r["answer"].startswith("Answer to:") for r in rows)
    assert all(r["raw_answer"].startswith("<think>") and r["reasoning"] == "let me look at the frames" for r in rows)


@pytest.mark.parametrize(("protocol", "attempts"), [("paper", 3), ("authors", 5)])
def test_unparseable_judge_is_unscored_not_wrong(dataset: Path, tmp_path: Path, protocol: str, attempts: int) -> None:
    with LoopbackServer(ServerState(faults=Faults(always_malformed_judge=True))) as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", limit=1, protocol=protocol))
    judge = [r for r in srv.state.requests if r["judge"]]
    assert len(judge) == 12 * 2 * attempts  # bounded: 3 (paper) or 5 (authors, as eval.py) asks per run, then unscored
    s = scores_of(tmp_path / "run")
    assert s["overall"] is None and s["counts"]["unscored_judge_runs"] == 24 and s["counts"]["scored_turns"] == 0


def test_score_recomputes_without_calls(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    before = scores_of(tmp_path / "run")
    (tmp_path / "run" / "scores.json").unlink()
    res = CliRunner().invoke(app, ["score", str(tmp_path / "run")])  # server is gone: any call would fail
    assert res.exit_code == 0, res.output
    assert scores_of(tmp_path / "run") == before


def test_other_settings_in_same_run_dir_are_refused(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", judge="offline", limit=1))
        res = CliRunner().invoke(app, ["run", "--data", str(dataset), "--model", "openai:other", "--judge",
                                       "offline", "--out", str(tmp_path / "run"), "--model-base-url", srv.url])
    assert res.exit_code == 2
    assert "other settings" in res.output and "Traceback" not in res.output


def test_bad_data_is_one_clear_error(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d", with_video=False)
    res = CliRunner().invoke(app, ["run", "--data", str(root), "--model", "oracle", "--judge", "offline",
                                   "--out", str(tmp_path / "r")])
    assert res.exit_code == 2
    assert "video file not found" in res.output and "mtqa/object_reference.json" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "r").exists()  # nothing half-written


def test_corrupt_video_fails_that_video_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_dataset(tmp_path / "d")
    (root / "videos" / "vid1.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video")
    # `run` refuses such data up front (tests/data/test_video_checks.py); here the video breaks after that check
    monkeypatch.setattr("mtvbench.data.official._check_video_files", lambda videos, cache, col: None)
    with LoopbackServer() as srv:
        res = CliRunner().invoke(app, ["run", "--data", str(root), "--model", "openai:m", "--judge", "offline",
                                       "--out", str(tmp_path / "r"), "--model-base-url", srv.url, "--frames", "4",
                                       "--cache-dir", str(tmp_path / "c"), "--quiet"])
    assert res.exit_code == 3, res.output
    assert "vid1" in res.output and "Traceback" not in res.output
    s = scores_of(tmp_path / "r")
    assert s["counts"]["missing_responses"] == 6 and s["counts"]["scored_turns"] == 6  # vid0 still evaluated


def _count_responses(run: Path) -> int:
    db = run / "store.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as c:
            return c.execute("SELECT COUNT(*) FROM responses WHERE outcome='ok'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_resume_after_kill(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as ref:
        evaluate(cfg_for(dataset, tmp_path / "ref", ref.url, tmp_path / "cache"))
    state = ServerState(faults=Faults(slow_every=1, slow_s=0.25))
    with LoopbackServer(state) as srv:
        cmd = [sys.executable, "-m", "mtvbench", "run", "--data", str(dataset), "--model", "openai:test-model",
               "--judge", "openai:test-judge", "--out", str(tmp_path / "run"), "--model-base-url", srv.url,
               "--judge-base-url", srv.url, "--frames", "4", "--judge-runs", "2", "--concurrency", "2",
               "--cache-dir", str(tmp_path / "cache"), "--quiet"]
        (tmp_path / "cfg.yaml").write_text("bootstrap: 200\n")
        cmd += ["--config", str(tmp_path / "cfg.yaml")]
        env = os.environ | {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while _count_responses(tmp_path / "run") < 4 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stored_first = _count_responses(tmp_path / "run")
        assert 4 <= stored_first < 12, "the kill must land mid-run"
        with sqlite3.connect(tmp_path / "run" / "store.sqlite") as c:
            done_prompts = {p for (p,) in c.execute("SELECT prompt FROM responses WHERE outcome='ok'")}
        n_before = len(state.requests)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        second = [r for r in state.requests[n_before:] if not r["judge"]]
    assert not done_prompts & {r["text"] for r in second}  # nothing completed is asked again
    assert len(second) == 12 - stored_first
    ref_s, s = scores_of(tmp_path / "ref"), scores_of(tmp_path / "run")
    for key in ("overall", "tasks", "counts", "ci95"):
        assert s[key] == ref_s[key], key


def test_video_shorter_than_frames(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    write_video(root / "videos" / "vid0.mp4", n_frames=3)
    with LoopbackServer() as srv:
        evaluate(cfg_for(root, tmp_path / "run", srv.url, tmp_path / "cache", frames=128, judge="offline"))
    per_video = {r["images"] for r in model_requests(srv.state)}
    assert per_video == {3, 24}  # every frame of the short video; 24 of 24 for the other


def test_frames_as_one_video_part_for_vllm_servers(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", judge="offline", limit=1,
                         model_settings={"base_url": srv.url, "extra": {"video_part": True}}))
    reqs = model_requests(srv.state)
    assert reqs and all(r["images"] == 4 for r in reqs)
    parts = reqs[0]["body"]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["video_url", "text"]


def test_rejected_key_aborts_cleanly_and_is_not_stored(dataset: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-live-ABCDEF0123456789"
    monkeypatch.setenv("MY_MODEL_KEY", secret)
    with LoopbackServer(ServerState(unauthorized=True)) as srv:
        res = CliRunner().invoke(app, ["run", "--data", str(dataset), "--model", "openai:m", "--judge", "offline",
                                       "--out", str(tmp_path / "run"), "--model-base-url", srv.url,
                                       "--model-api-key-env", "MY_MODEL_KEY", "--frames", "4", "--concurrency", "1",
                                       "--cache-dir", str(tmp_path / "c"), "--quiet"])
    assert res.exit_code == 2 and "8 failures in a row" in res.output and "HTTP 401" in res.output
    assert "Incorrect API key provided: ***" in res.output
    assert secret not in res.output and "Traceback" not in res.output
    assert len(srv.state.requests) == 8  # stopped instead of hammering the server with a bad key
    for f in (tmp_path / "run").rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
