"""``await mtvbench.evaluate_async(cfg)`` runs inside a running event loop (a notebook, a service), where
``evaluate`` cannot; ``evaluate`` is the same run in a loop of its own, and resumes what the other stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import mtvbench
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cfg_for, model_requests


async def test_evaluate_async_runs_inside_a_running_event_loop(dataset: Path, tmp_path: Path) -> None:
    asyncio.get_running_loop()  # this test body is a coroutine of a running loop, as in a notebook cell
    with LoopbackServer() as srv:
        cfg = cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache")
        with pytest.raises(RuntimeError, match=r"cannot run inside a running event loop") as e:
            mtvbench.evaluate(cfg)  # one error that says what to do, before anything is written
        assert isinstance(e.value, mtvbench.MtvbenchError) and "evaluate_async" in str(e.value)
        assert not (tmp_path / "run").exists()
        scores, summary = await mtvbench.evaluate_async(cfg)
        asked = len(model_requests(srv.state))
        # the loop is still usable, and evaluate() (in a thread: a loop of its own) resumes: nothing asked again
        again, summary_again = await asyncio.to_thread(mtvbench.evaluate, cfg)
        asked_again = len(model_requests(srv.state)) - asked
    assert scores.complete and summary.calls == asked == 12 and summary.judge_calls == 24
    assert again.complete and summary_again.calls == asked_again == 0
    assert again.overall == scores.overall


def test_evaluate_async_is_public_and_documented() -> None:
    assert "evaluate_async" in mtvbench.__all__
    assert asyncio.iscoroutinefunction(mtvbench.evaluate_async)
