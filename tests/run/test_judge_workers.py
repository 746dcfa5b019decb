"""The judge's workers: every queued judge run is taken, also one queued in the moment the last worker found
the queue empty and ended (before its task's end was noticed)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from mtvbench.run.runner import Runner


def test_a_judge_run_queued_as_the_last_worker_ends_gets_a_worker() -> None:
    runner: Any = Runner.__new__(Runner)  # the judging part only: a queue, one worker at most
    runner.judge_queue, runner.judge_tasks, runner.judge_workers, runner.judge_active = deque(), set(), 1, 0
    runner._abort = runner._fatal = None
    judged: list[int] = []

    async def judge_run(tid: str, rnd: Any, answer: str, key: Any, run: int) -> None:
        judged.append(run)
        if run == 1:  # run 2 is queued right after this worker returns, before its task's done callback runs
            asyncio.get_running_loop().call_soon(runner._queue_judge_runs, [("t", None, "a", None, 2)])

    runner._judge_run = judge_run

    async def go() -> None:
        runner._queue_judge_runs([("t", None, "a", None, 1)])
        for _ in range(100):  # a stranded run would leave the queue non-empty with no worker
            await asyncio.sleep(0)
            if runner.judge_tasks:
                await asyncio.gather(*list(runner.judge_tasks))

    asyncio.run(go())
    assert judged == [1, 2] and not runner.judge_queue and runner.judge_active == 0
