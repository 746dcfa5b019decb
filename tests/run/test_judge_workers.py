"""The judge's workers: every queued judge run is taken, also one queued in the moment the last worker found
the queue empty and ended (before its task's end was noticed)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from mtvbench.run.runner import JudgeRun, Runner


def test_a_judge_run_queued_as_the_last_worker_ends_gets_a_worker() -> None:
    runner: Any = Runner.__new__(Runner)  # the judging part only: a queue, one worker at most
    runner.judge_queue, runner.judge_tasks, runner.judge_workers, runner.judge_active = deque(), set(), 1, 0
    runner._stopped_by = None
    judged: list[int] = []

    def queued(run: int) -> JudgeRun:
        return JudgeRun("t", None, "a", None, run)  # type: ignore[arg-type]

    async def judge_run(job: JudgeRun) -> None:
        judged.append(job.run)
        if job.run == 1:  # run 2 is queued right after this worker returns, before its task's done callback runs
            asyncio.get_running_loop().call_soon(runner._queue_judge_runs, [queued(2)])

    runner._judge_run = judge_run

    async def go() -> None:
        runner._queue_judge_runs([queued(1)])
        for _ in range(100):  # a stranded run would leave the queue non-empty with no worker
            await asyncio.sleep(0)
            if runner.judge_tasks:
                await asyncio.gather(*list(runner.judge_tasks))

    asyncio.run(go())
    assert judged == [1, 2] and not runner.judge_queue and runner.judge_active == 0
