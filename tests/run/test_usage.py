"""Researcher's day, point 7: calls, tokens, wall time and cost per role, in scores.json and the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtvbench.run.store import RunStore
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cli_run, scores_of, settings

# the test server reports 10 + 5 per image prompt tokens and 7 completion tokens per call;
# model calls carry 4 frames, judge calls none
MODEL_PROMPT, JUDGE_PROMPT, COMPLETION = 10 + 5 * 4, 10, 7


def test_usage_and_cost_per_role(dataset: Path, tmp_path: Path) -> None:
    prices = {"openai:test-model": {"input": 2.5, "output": 10.0}, "judge": {"input": 1.0, "output": 2.0}}
    with LoopbackServer() as srv:
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", prices=prices))
    assert res.exit_code == 0, res.output
    u = scores_of(tmp_path / "run")["usage"]
    m, j = u["model"], u["judge"]
    assert (m["calls"], m["failed_calls"], m["prompt_tokens"], m["completion_tokens"]) == (
        12, 0, 12 * MODEL_PROMPT, 12 * COMPLETION)
    assert (j["calls"], j["prompt_tokens"], j["completion_tokens"]) == (24, 24 * JUDGE_PROMPT, 24 * COMPLETION)
    assert m["cost"] == pytest.approx((12 * MODEL_PROMPT * 2.5 + 12 * COMPLETION * 10.0) / 1e6)
    assert j["cost"] == pytest.approx((24 * JUDGE_PROMPT * 1.0 + 24 * COMPLETION * 2.0) / 1e6)
    assert u["cost"] == pytest.approx(m["cost"] + j["cost"])
    assert 0 < m["wall_seconds"] <= m["call_seconds"] + 1e-6 and u["sessions"] == 1 and u["wall_seconds"] > 0
    out = " ".join(res.output.split())
    assert f"usage: model: 12 calls, 12 requests, {12 * MODEL_PROMPT:,} prompt + {12 * COMPLETION:,} completion" in out
    assert f"cost {u['cost']:.4f}" in out
    store = RunStore(tmp_path / "run", create=False)  # the judge's usage is stored with each verdict
    try:
        assert {v["verdict"].usage.prompt_tokens for v in store.verdict_rows()} == {JUDGE_PROMPT}
    finally:
        store.close()
    from mtvbench.analysis.report import build_report

    build_report([tmp_path / "run"], tmp_path / "rep", scene_cache_dir=tmp_path / "scenes", thumbs=0, bootstrap=0)
    html = (tmp_path / "rep" / "report.html").read_text()
    usage = html[html.index("Usage and cost"):]
    assert f"<td>{12 * MODEL_PROMPT:,}</td>" in usage and f"<td>{m['cost']:.4f}</td>" in usage


def test_usage_adds_up_across_resumes_and_has_no_cost_without_prices(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        assert cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", limit=1, judge="offline",
                                tasks=["OR"])).exit_code == 0
        (dataset / "mtqa" / "object_reference.json").write_text(
            (dataset / "mtqa" / "object_reference.json").read_text().replace("Question 5", "Edited 5"))
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", limit=1, judge="offline",
                               tasks=["OR"]))
    assert res.exit_code == 0, res.output
    u = scores_of(tmp_path / "run")["usage"]
    assert u["model"]["calls"] == 3 and u["sessions"] == 2  # 2 turns, then the edited one again: all paid
    assert u["model"]["cost"] is None and u["cost"] is None and u["judge"]["cost"] == 0.0  # offline: no tokens
    assert "no price in the config" in res.output


def test_cached_tokens_are_stored_per_call_shown_and_priced(dataset: Path, tmp_path: Path) -> None:
    """A server that simulates a prefix cache reports cached tokens: they reach the calls ledger per call,
    scores.json, the terminal summary and report.html, and the cost prices them at ``cached_input``."""
    from tests.support.openai_server import ServerState

    prices = {"model": {"input": 2.0, "output": 10.0, "cached_input": 0.5}, "judge": {"input": 1.0, "output": 2.0}}
    state = ServerState(prefix_cache=True)
    with LoopbackServer(state) as srv:  # self context: round 5 of a dialogue is sent after round 3 was answered
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", prices=prices,
                               context="self"))
    assert res.exit_code == 0, res.output
    reported = sum(c for judge, c in state.cached if not judge)
    assert reported >= 6 * 5 * 4  # at least each dialogue's second round found its frames cached
    import sqlite3

    with sqlite3.connect(tmp_path / "run" / "store.sqlite") as db:
        rows = db.execute("SELECT role, cached_tokens FROM calls").fetchall()
    assert sum(c for role, c in rows if role == "model") == reported
    assert {c for role, c in rows if role == "judge"} == {0} and None not in {c for _, c in rows}
    m = scores_of(tmp_path / "run")["usage"]["model"]
    assert (m["cached_tokens"], m["cached_not_recorded"]) == (reported, 0)
    prompt, n = m["prompt_tokens"], m["calls"]
    assert prompt == n * MODEL_PROMPT and n >= 12
    assert m["cost"] == pytest.approx(((prompt - reported) * 2.0 + reported * 0.5 + n * COMPLETION * 10.0) / 1e6)
    out = " ".join(res.output.split())
    assert f"({reported:,} of them cached)" in out
    from mtvbench.analysis.report import build_report

    build_report([tmp_path / "run"], tmp_path / "rep", scene_cache_dir=tmp_path / "scenes", thumbs=0, bootstrap=0)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert f"<td class=\"t\">{reported:,} of them cached</td>" in html[html.index("Usage and cost"):]


def test_calls_without_cached_counts_say_not_recorded_and_the_cost_is_an_upper_bound(dataset: Path,
                                                                                    tmp_path: Path) -> None:
    prices = {"model": {"input": 2.0, "output": 10.0, "cached_input": 0.5}, "judge": {"input": 1.0, "output": 2.0}}
    with LoopbackServer() as srv:  # a server that does not report cached tokens
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", prices=prices, limit=1,
                               tasks=["OR"]))
    assert res.exit_code == 0, res.output
    m = scores_of(tmp_path / "run")["usage"]["model"]
    assert (m["cached_tokens"], m["cached_not_recorded"]) == (0, m["calls"]) and m["calls"] == 2
    assert m["cost"] == pytest.approx((2 * MODEL_PROMPT * 2.0 + 2 * COMPLETION * 10.0) / 1e6)
    out = " ".join(res.output.split())
    assert "cached tokens not recorded" in out and "an upper bound" in out
