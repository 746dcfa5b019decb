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
