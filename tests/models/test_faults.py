"""Whole evaluations against the loopback fault server: one test (or a few) per failure class.

Class 2: no silently final failure. Class 3: every call ends (deadline, size cap, circuit
breaker, messages that quote the server). Class 5: a key goes only where it belongs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.models.endpoints import PLACEHOLDER_KEY
from mtvbench.run.evaluate import evaluate
from mtvbench.run.settings import build_config
from tests.support.openai_server import (
    BAD_GATEWAY_TEXT,
    BAD_REQUEST_DETAIL,
    BAD_REQUEST_ERROR,
    Call,
    Faults,
    LoopbackServer,
    ServerState,
    always,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")
FAST = {"retry_base_s": 0.01, "timeout_s": 20}


def settings(url: str, **kw: Any) -> dict[str, Any]:
    return {"base_url": url, **FAST, **kw}


def values(data: Path, out: Path, url: str, cache: Path, **kw: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"data": data, "model": "openai:test-model", "judge": "offline", "out": out, "frames": 4,
                         "judge_runs": 1, "concurrency": 4, "cache_dir": cache, "bootstrap": 0,
                         "model_settings": settings(url)}
    v.update(kw)
    return v


def rows(run: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run / "store.sqlite") as c:
        c.row_factory = sqlite3.Row
        return [dict(r) for r in c.execute("SELECT * FROM responses")]


def question(prompt: str) -> str:
    return prompt.rsplit("Current question: ", 1)[-1]


def by_question(run: Path) -> dict[str, dict[str, Any]]:
    return {question(r["prompt"]): r for r in rows(run)}


def run_cli(args: list[str], cfg: dict[str, Any], tmp: Path) -> Any:
    path = tmp / "settings.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(cfg, default=str))))
    return CliRunner().invoke(app, ["run", "--config", str(path), "--quiet", *args])


def by_question_plan(table: dict[str, dict[int, str]]) -> Any:
    """A plan from {current question: {attempt: fault}} for model calls."""
    def plan(call: Call) -> str | None:
        return None if call.judge else table.get(question(call.text), {}).get(call.attempt)

    return plan


# ------------------------------------------------------------------------ class 2
MALFORMED = ("empty_choices", "content_null", "html", "cut_json")


def test_malformed_200_replies_are_retried_and_change_no_score(dataset: Path, tmp_path: Path) -> None:
    both = {"judge": "openai:test-judge", "judge_runs": 2, "judge_settings": None}
    with LoopbackServer() as clean:
        both["judge_settings"] = settings(clean.url)
        evaluate(build_config(values(dataset, tmp_path / "clean", clean.url, tmp_path / "c", **both)))
    # the first attempt of every body, model and judge, is a 200 that holds no answer
    state = ServerState(faults=Faults(plan=lambda c: MALFORMED[c.ordinal % 4] if c.attempt == 1 else None))
    with LoopbackServer(state) as srv:
        both["judge_settings"] = settings(srv.url)
        _, summary = evaluate(build_config(values(dataset, tmp_path / "faulty", srv.url, tmp_path / "c", **both)))
    assert all(state.faults_sent[f] >= 5 for f in MALFORMED), state.faults_sent
    assert summary.call_errors == 0 and summary.judge_errors == 0 and summary.empty == 0
    stored = rows(tmp_path / "faulty")
    assert len(stored) == 12 and all(r["outcome"] == "ok" and r["attempts"] == 2 for r in stored)
    clean_s = json.loads((tmp_path / "clean" / "scores.json").read_text())
    faulty_s = json.loads((tmp_path / "faulty" / "scores.json").read_text())
    for key in ("overall", "tasks", "counts"):
        assert faulty_s[key] == clean_s[key], key


def test_out_of_tokens_is_final_empty_filter_is_blocked_and_both_are_shown(dataset: Path, tmp_path: Path) -> None:
    plan = by_question_plan({"Question 3 about the summary clip?": {1: "length_null"},
                             "Question 5 about the summary clip?": {1: "content_filter"}})
    with LoopbackServer(ServerState(faults=Faults(plan=plan))) as srv:
        res = run_cli([], values(dataset, tmp_path / "run", srv.url, tmp_path / "c"), tmp_path)
    assert res.exit_code == 0, res.output
    assert "1 replies blocked by the provider's content filter, 1 empty" in res.output
    got = by_question(tmp_path / "run")
    empty, blocked = got["Question 3 about the summary clip?"], got["Question 5 about the summary clip?"]
    assert empty["outcome"] == "empty" and "finish_reason length" in empty["error"] and empty["attempts"] == 1
    assert blocked["outcome"] == "blocked" and "content_filter" in blocked["error"] and blocked["attempts"] == 1
    with LoopbackServer() as again:  # final outcomes: a resumed run asks nothing
        res2 = run_cli([], values(dataset, tmp_path / "run", again.url, tmp_path / "c"), tmp_path)
    assert res2.exit_code == 0 and again.state.requests == []


# ------------------------------------------------------------------------ class 3
def test_a_trickling_server_cannot_hold_a_call_open(dataset: Path, tmp_path: Path) -> None:
    """One byte a second: httpx's read timeout never fires; the whole-call deadline does."""
    state = ServerState(faults=Faults(plan=always("trickle"), trickle_s=1.0))
    timeout_s = 1.5
    with LoopbackServer(state) as srv:
        cfg = values(dataset, tmp_path / "run", srv.url, tmp_path / "c", limit=1, concurrency=16,
                     model_settings=settings(srv.url, timeout_s=timeout_s, breaker_threshold=100))
        (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(cfg, default=str))))
        env = os.environ | {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
        try:  # the base commit hangs here for the length of the trickle (minutes)
            out = subprocess.run([sys.executable, "-m", "mtvbench", "run", "--config", str(tmp_path / "cfg.yaml"),
                                  "--quiet"], env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("a trickling server held the run open past every deadline")
    assert out.returncode == 3, out.stdout + out.stderr  # finished, incomplete
    stored = rows(tmp_path / "run")
    assert len(stored) == 12 and all(r["outcome"] == "error" for r in stored)
    assert all(f"no complete reply from {srv.url} within timeout_s=1.5s" in r["error"] for r in stored)
    assert all(r["latency_s"] < timeout_s + 2.0 for r in stored)  # the deadline, with slack for a busy machine
    assert "Traceback" not in out.stderr


def test_a_huge_reply_is_cut_off_and_the_stored_row_stays_small(dataset: Path, tmp_path: Path) -> None:
    sizes = ("huge", "huge_unsized", "gzip_huge")  # with Content-Length, without, and compressed
    state = ServerState(faults=Faults(plan=lambda c: sizes[c.ordinal % 3], huge_bytes=50 << 20))
    with LoopbackServer(state) as srv:
        cfg = values(dataset, tmp_path / "run", srv.url, tmp_path / "c", limit=1, concurrency=2,
                     model_settings=settings(srv.url, max_response_bytes=1 << 20, breaker_threshold=100))
        _, summary = evaluate(build_config(cfg))
    assert all(state.faults_sent[s] >= 3 for s in sizes)
    stored = rows(tmp_path / "run")
    assert len(stored) == 12 and summary.call_errors == 12
    for r in stored:
        assert r["outcome"] == "error" and r["attempts"] == 1  # not asked again in this run
        assert f"reply from {srv.url}/chat/completions is larger than max_response_bytes=1048576" in r["error"]
        assert len(r["text"]) == len(r["raw_text"]) == 0
    assert (tmp_path / "run" / "store.sqlite").stat().st_size < 1 << 20


def test_replies_over_the_cap_on_every_call_exit_3_naming_the_cap_and_how_to_raise_it(dataset: Path,
                                                                                       tmp_path: Path) -> None:
    """The server answers, the replies are only too large: not a URL, key or model problem (exit 2)."""
    state = ServerState(faults=Faults(plan=always("huge_unsized"), huge_bytes=2 << 20))
    with LoopbackServer(state) as srv:
        cfg = values(dataset, tmp_path / "run", srv.url, tmp_path / "c", concurrency=1,
                     model_settings=settings(srv.url, max_response_bytes=1 << 20))
        res = run_cli([], cfg, tmp_path)
    assert res.exit_code == 3, res.output
    out = " ".join(res.output.split())
    assert f"reply from {srv.url}/chat/completions is larger than max_response_bytes=1048576 bytes" in out
    assert ("if such replies are expected, raise the cap: --model-option max_response_bytes=N (YAML: model_settings: "
            "{max_response_bytes: N})") in out
    assert "check its URL, key and model name" not in out and "8 failures in a row" in out


def test_a_server_that_dies_mid_run_trips_the_breaker(dataset: Path, tmp_path: Path) -> None:
    state = ServerState(faults=Faults(die_after=3))  # three answers, then the port is closed
    with LoopbackServer(state) as srv:
        res = run_cli([], values(dataset, tmp_path / "run", srv.url, tmp_path / "c", concurrency=1), tmp_path)
    assert res.exit_code == 3, res.output
    assert f"openai:test-model at {srv.url}: 8 failures in a row" in res.output
    assert f"cannot connect to {srv.url}/chat/completions" in res.output and "Traceback" not in res.output
    stored = rows(tmp_path / "run")
    assert sum(r["outcome"] == "ok" for r in stored) == 3  # the answers before the death are kept
    failed = sorted((r for r in stored if r["outcome"] == "error"), key=lambda r: r["created"])
    # refused connections count at once: the breaker opens at the 8th refused attempt, within the
    # second failing call (the first attempt after the death may meet a dropped connection rather than
    # a refusal), instead of each of the 9 remaining calls spending 7 attempts
    assert len(stored) == 5 and failed[0]["attempts"] == 7 and failed[1]["attempts"] <= 2
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())  # what the run has, marked as such
    assert scores["status"] == "INCOMPLETE" and scores["counts"]["missing_responses"] > 0


def test_a_failing_judge_endpoint_stops_the_run(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as model, LoopbackServer(ServerState(faults=Faults(plan=always("bad_gateway_text",
                                                                                           judge=True)))) as judge:
        cfg = values(dataset, tmp_path / "run", model.url, tmp_path / "c", concurrency=1,
                     judge="openai:test-judge", judge_settings=settings(judge.url, max_retries=1))
        res = run_cli([], cfg, tmp_path)
    assert res.exit_code == 3, res.output
    assert f"openai:test-judge at {judge.url}: 8 failures in a row" in res.output
    assert f'HTTP 502 from {judge.url}/chat/completions: "{BAD_GATEWAY_TEXT}"' in res.output
    assert len(judge.state.requests) == 8 * 2  # 8 calls of 2 attempts each, then nothing more was sent
    with sqlite3.connect(tmp_path / "run" / "store.sqlite") as c:
        statuses = [s for (s,) in c.execute("SELECT status FROM verdicts")]
    assert statuses == ["error"] * 8  # stored as errors: asked again on the next run


def test_errors_quote_the_server_and_name_the_url_and_attempts_are_true(dataset: Path, tmp_path: Path) -> None:
    plan = by_question_plan({
        "Question 3 about the summary clip?": {1: "bad_request_detail"},
        "Question 5 about the summary clip?": {1: "server_error", 2: "bad_request_error"},
        "Question 3 about the memory_recall clip?": {1: "bad_gateway_text", 2: "bad_gateway_text"},
        "Question 5 about the memory_recall clip?": {1: "rate_limit_ms", 2: "hang_up"},
    })
    with LoopbackServer(ServerState(faults=Faults(plan=plan, retry_after_ms="20"))) as srv:
        cfg = values(dataset, tmp_path / "run", srv.url, tmp_path / "c",
                     model_settings=settings(srv.url, max_retries=1))
        evaluate(build_config(cfg))
    url = f"{srv.url}/chat/completions"
    got = by_question(tmp_path / "run")
    detail = got["Question 3 about the summary clip?"]
    assert detail["error"] == f'HTTP 400 from {url}: "{BAD_REQUEST_DETAIL}"' and detail["attempts"] == 1
    error = got["Question 5 about the summary clip?"]
    assert error["error"] == f'HTTP 400 from {url}: "{BAD_REQUEST_ERROR}"' and error["attempts"] == 2
    gateway = got["Question 3 about the memory_recall clip?"]
    assert gateway["error"].startswith(f'HTTP 502 from {url}: "{BAD_GATEWAY_TEXT}" (gave up after 2 attempts')
    assert gateway["attempts"] == 2
    hung = got["Question 5 about the memory_recall clip?"]
    assert hung["error"].startswith(f"connection to {url} failed") and hung["attempts"] == 2
    assert sum(r["outcome"] == "ok" and r["attempts"] == 1 for r in got.values()) == 8


# ------------------------------------------------------------------------ class 5
def test_the_default_key_goes_only_to_its_own_url(dataset: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge uses OPENAI_API_KEY at OPENAI_BASE_URL; the local model server must not see it."""
    secret = "sk-judge-0123456789abcdef"
    with LoopbackServer() as model, LoopbackServer() as provider:
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        monkeypatch.setenv("OPENAI_BASE_URL", provider.url)
        cfg = values(dataset, tmp_path / "run", model.url, tmp_path / "c", limit=1,
                     judge="openai:test-judge", judge_settings=FAST)
        _, summary = evaluate(build_config(cfg))
    assert summary.call_errors == 0 and summary.judge_errors == 0
    assert model.state.auth_headers and set(model.state.auth_headers) == {f"Bearer {PLACEHOLDER_KEY}"}
    assert provider.state.auth_headers and set(provider.state.auth_headers) == {f"Bearer {secret}"}


def test_a_key_named_for_the_role_is_sent_and_scrubbed_whatever_its_name(dataset: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "zq-cred-7f3a9b1c2d4e"  # neither the variable's name nor the value looks like a key
    monkeypatch.setenv("MTVB_MODEL_CRED", secret)
    with LoopbackServer(ServerState(faults=Faults(plan=always("echo_key")))) as srv:
        cfg = values(dataset, tmp_path / "run", srv.url, tmp_path / "c", limit=1,
                     model_settings=settings(srv.url, api_key_env="MTVB_MODEL_CRED"))
        res = run_cli([], cfg, tmp_path)
    assert res.exit_code == 0, res.output
    assert set(srv.state.auth_headers) == {f"Bearer {secret}"}  # sent where it was configured for
    assert all(r["text"].endswith("(you sent Bearer ***)") for r in rows(tmp_path / "run"))
    for f in (tmp_path / "run").rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
    with LoopbackServer(ServerState(unauthorized=True)) as srv2:  # a 401 that echoes the key
        cfg = values(dataset, tmp_path / "run2", srv2.url, tmp_path / "c", concurrency=1,
                     model_settings=settings(srv2.url, api_key_env="MTVB_MODEL_CRED"))
        res2 = run_cli([], cfg, tmp_path)
    assert res2.exit_code == 2 and "Incorrect API key provided: ***" in res2.output
    assert secret not in res2.output
