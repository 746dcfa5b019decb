"""Who asks the model: the local pipelined executor (and the interface a distributed one implements).

The runner (:mod:`mtvbench.run.runner`) plans what to ask, records every result and runs the
judge; an *executor* gets the frames and asks the model under test, video by video, and hands
each result back to the runner the moment it exists (``runner.record``), which decides whether
that dialogue goes on (a failed round stops its dialogue in self context).

:class:`LocalExecutor` is a three-stage pipeline in one process:

1. **Frames, decoded ahead.** Videos are taken in order; a video first takes one of
   ``videos_in_flight`` slots (the memory bound: frames are held for at most that many
   videos), then its frames are decoded (or read from the frame cache) in a pool of
   ``decode_workers`` threads. Decoding never holds a call slot, so while the calls of the
   first videos are in flight the next videos are decoded.
2. **Turns.** In golden/none context every pending round of a video is asked at once; in self
   context each dialogue is a chain whose next round is asked when the previous one was
   recorded, while the dialogues of a video run side by side.
3. **One call gate.** Every model call passes :class:`CallGate`: at most ``concurrency``
   calls (or batches) in flight; a batching backend (``hf:``, ``vllm:``) gets up to
   ``batch_size`` ready requests at once, gathered across every video in flight.

A video's slot is released when its last turn is recorded, so memory stays bounded by the
videos held, while the model calls stay near ``concurrency`` as long as decoding keeps up.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mtvbench.data.schema import Dialogue, Round
from mtvbench.media.frames import VideoError, VideoFrames
from mtvbench.models.backend import ModelBackend, abilities, generate_many
from mtvbench.models.resilience import CircuitOpenError
from mtvbench.records import GenerationRequest, GenerationResult

if TYPE_CHECKING:
    from mtvbench.run.runner import Runner


@dataclass
class DialogueTurns:
    """The rounds of one dialogue that still need a model call, in order."""

    dialogue: Dialogue
    rounds: list[Round]


@dataclass
class VideoJob:
    """Everything a video still needs from the model under test."""

    video: str
    path: Path
    dialogues: list[DialogueTurns]

    @property
    def turns(self) -> int:
        return sum(len(d.rounds) for d in self.dialogues)


class Executor(Protocol):
    """Runs video jobs and hands every result to ``runner.record`` as it arrives."""

    name: str

    async def run(self, runner: Runner, jobs: Sequence[VideoJob]) -> None: ...


def default_decode_workers() -> int:
    """Two videos decoded at a time: each decode already uses every CPU (media.frames), a second
    one overlaps its I/O and JPEG encoding."""
    return max(1, min(2, os.cpu_count() or 1))


class NotSent(Exception):
    """The run stopped while the call waited for its slot: nothing was sent (asked on the next run)."""


class CallGate:
    """The one way to the model: ``concurrency`` calls (or batches) in flight; a backend with
    ``generate_batch`` and ``batch_size`` gets the ready requests in batches, across videos.
    ``stopped`` is checked once a slot is free: a stopped run sends nothing more."""

    def __init__(self, model: ModelBackend, concurrency: int, stopped: Callable[[], bool] = lambda: False):
        self.model = model
        self.stopped = stopped
        self.sem = asyncio.Semaphore(concurrency)
        self.batch_size = abilities(model).batch_size
        self._queue: list[tuple[GenerationRequest, asyncio.Future[GenerationResult]]] = []
        self._flushing = False
        #: calls (or batches) in flight right now, and the largest number seen
        self.in_flight = 0
        self.peak = 0

    async def call(self, request: GenerationRequest) -> GenerationResult:
        if self.batch_size:
            return await self._batched(request)
        async with self.sem:
            if self.stopped():
                raise NotSent
            self._enter(1)
            try:
                return await self.model.generate(request)
            finally:
                self._leave(1)

    def _enter(self, n: int) -> None:
        self.in_flight += n
        self.peak = max(self.peak, self.in_flight)

    def _leave(self, n: int) -> None:
        self.in_flight -= n

    async def _batched(self, request: GenerationRequest) -> GenerationResult:
        fut: asyncio.Future[GenerationResult] = asyncio.get_running_loop().create_future()
        self._queue.append((request, fut))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush())
        return await fut

    async def _flush(self) -> None:
        seen = -1
        for _ in range(10):  # let every request that is ready now join (turns start a few loop steps apart)
            if len(self._queue) == seen or len(self._queue) >= self.batch_size:
                break
            seen = len(self._queue)
            await asyncio.sleep(0)
        try:
            while self._queue:
                batch, self._queue = self._queue[: self.batch_size], self._queue[self.batch_size:]
                asyncio.get_running_loop().create_task(self._run_batch(batch))
                await asyncio.sleep(0)
        finally:
            self._flushing = False

    async def _run_batch(self, batch: list[tuple[GenerationRequest, asyncio.Future[GenerationResult]]]) -> None:
        async with self.sem:
            try:
                if self.stopped():
                    raise NotSent
                self._enter(len(batch))
                try:
                    results = await generate_many(self.model, [r for r, _ in batch])
                finally:
                    self._leave(len(batch))
            except BaseException as e:  # noqa: BLE001 - every waiting turn gets the error
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                return
        for (_, fut), res in zip(batch, results):
            if not fut.done():
                fut.set_result(res)


class LocalExecutor:
    """The pipelined executor of one process (see the module docstring)."""

    name = "local"

    def __init__(self, decode_workers: int | None = None):
        self.decode_workers = decode_workers or default_decode_workers()
        self.gate: CallGate | None = None

    async def run(self, runner: Runner, jobs: Sequence[VideoJob]) -> None:
        cfg = runner.cfg
        self.gate = CallGate(runner.model, cfg.concurrency, lambda: runner.stopped)
        held = asyncio.Semaphore(cfg.videos_in_flight)  # asyncio semaphores wake waiters in order
        with ThreadPoolExecutor(self.decode_workers, thread_name_prefix="mtvbench-frames") as pool:
            await asyncio.gather(*(self._guarded(runner, job, held, pool) for job in jobs))

    async def _guarded(self, runner: Runner, job: VideoJob, held: asyncio.Semaphore,
                       pool: ThreadPoolExecutor) -> None:
        try:
            async with held:
                if runner.stopped:
                    return
                frames = await self._frames(runner, job, pool)
                if frames is False:
                    return
                await asyncio.gather(*(self._dialogue(runner, d, frames) for d in job.dialogues))
        except Exception as e:  # noqa: BLE001 - the runner decides: a user error stops the run, once
            runner.fail(e)

    async def _frames(self, runner: Runner, job: VideoJob, pool: ThreadPoolExecutor) -> VideoFrames | None | bool:
        if not abilities(runner.model).needs_frames:
            runner.progress.advance("frames")
            return None
        loop = asyncio.get_running_loop()
        try:
            frames = await runner.frames(job.video, lambda f, *a: loop.run_in_executor(pool, f, *a))
        except VideoError as e:
            runner.video_failed(job, str(e))
            return False
        runner.progress.advance("frames")
        return frames

    async def _dialogue(self, runner: Runner, turns: DialogueTurns, frames: VideoFrames | None) -> None:
        if runner.cfg.context != "self":  # every round is independent of the model's other answers
            await asyncio.gather(*(self._turn(runner, turns.dialogue, r, frames) for r in turns.rounds))
            return
        for i, r in enumerate(turns.rounds):
            if not await self._turn(runner, turns.dialogue, r, frames):
                runner.turns_not_reached(len(turns.rounds) - i - 1)  # the next rounds need this answer
                return

    async def _turn(self, runner: Runner, d: Dialogue, r: Round, frames: VideoFrames | None) -> bool:
        assert self.gate is not None
        if runner.stopped:  # not sent, not stored: asked on the next run
            return False
        request = runner.request(d, r, frames)
        try:
            result = await self.gate.call(request)
        except NotSent:
            return False
        except CircuitOpenError as e:  # the endpoint's breaker is open: not sent, not stored
            runner.abort(e)
            return False
        return runner.record(d, r, request, result)


__all__ = ["CallGate", "DialogueTurns", "Executor", "LocalExecutor", "NotSent", "VideoJob", "default_decode_workers"]
