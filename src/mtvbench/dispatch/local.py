"""The dispatcher of one process: the pipelined local executor.

The videos go through :func:`~mtvbench.dispatch.run_videos` with three stages in this process:

1. **Frames, decoded ahead.** Videos are taken in order; a video first takes one of
   ``videos_in_flight`` video slots (the memory bound: frames are kept for at most that many
   videos; not set, enough for ``concurrency`` calls in flight,
   :func:`~mtvbench.dispatch.video_slots`), then its frames are decoded (or read from the
   frame cache) in a pool of ``decode_workers`` threads. Decoding never takes a call slot, so while the calls of the
   first videos are in flight the next videos are decoded.
2. **Turns.** In golden/none context every pending round of a video is asked at once; in self
   context each dialogue is a chain whose next round is asked when the previous one was
   recorded, while the dialogues of a video run side by side. Under the cache-aware order
   (:class:`~mtvbench.dispatch.VideoOrder`) a video's first turn goes alone and the others
   once it was answered.
3. **A call gate.** Every model call passes the dispatcher's :class:`CallGate`: at most ``concurrency``
   calls (or batches) in flight, taken in order, a video's first turn under the cache-aware
   order ahead of the others; a batching backend (``hf:``, ``vllm:``) gets up to
   ``batch_size`` ready requests at once, gathered across every video in flight.

A video's slot is released when its last turn is recorded, so memory stays bounded by the
videos in flight, while the model calls stay near ``concurrency`` as long as decoding keeps up.
Construction uses the same dispatcher for its per-video computations (a thread each) and its
model roles (the backends themselves).
"""

from __future__ import annotations

import asyncio
import heapq
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from mtvbench.dispatch import NotSent, TurnRecorder, VideoJob, VideoState, cache_order, run_videos, video_slots
from mtvbench.models.backend import abilities, generate_many, video_done
from mtvbench.models.registry import create_backend

if TYPE_CHECKING:
    from mtvbench.media.frames import VideoFrames
    from mtvbench.models.backend import ModelBackend
    from mtvbench.models.settings import BackendOptions
    from mtvbench.records import GenerationRequest, GenerationResult

T = TypeVar("T")
#: what one call carries to the gate's backend: a request here, a request and its frames to a Ray replica
C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


class CallTarget(Protocol[C_contra]):
    """What a gate sends calls to: a backend (``generate``; ``generate_batch`` and ``batch_size`` when it batches)."""

    async def generate(self, call: C_contra) -> GenerationResult:
        """Make one model call."""
        ...


def default_decode_workers() -> int:
    """Two videos decoded at a time: each decode already uses every CPU (media.frames), a second
    one overlaps its I/O and JPEG encoding."""
    return max(1, min(2, os.cpu_count() or 1))


class Slots:
    """``n`` slots taken in order of arrival, except that an ``urgent`` taker goes ahead of every one
    waiting (a video's first turn under the cache-aware order). A freed slot is handed to the next
    waiter directly."""

    def __init__(self, n: int):
        self.free = n
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []  # (0 urgent / 1 not, arrival, waiter)
        self._arrivals = 0

    async def acquire(self, urgent: bool = False) -> None:
        """Wait for a free slot (``urgent``: ahead of every taker already waiting)."""
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        self._arrivals += 1
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (0 if urgent else 1, self._arrivals, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot as it was cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Free a slot: it goes straight to the next waiter that is still waiting, else back to the free ones."""
        while self._waiting:
            waiter = heapq.heappop(self._waiting)[2]
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


@dataclass
class QueuedCall(Generic[C]):
    """A call waiting in a batching gate for its batch: what it sends, whether it is a video's first turn
    under the cache-aware order (its batch goes first), and where its result goes."""

    call: C
    first: bool
    result: asyncio.Future[GenerationResult]


class CallGate(Generic[C]):
    """The path every model call of a dispatcher takes: at most ``concurrency`` calls (or batches) in flight,
    taken in order of arrival, except that a video's first turn under the cache-aware order goes ahead of the
    others (:class:`Slots`). A backend with ``generate_batch`` and ``batch_size`` gets the ready requests in
    batches, gathered across videos. ``stopped`` is checked once a slot is free, so a stopped run sends
    nothing more."""

    def __init__(self, model: CallTarget[C], concurrency: int, stopped: Callable[[], bool] = lambda: False):
        self.model = model
        self.stopped = stopped
        self.slots = Slots(concurrency)
        self.batch_size = abilities(model).batch_size
        self._queue: list[QueuedCall[C]] = []
        self._flushing = False
        #: calls (or batches) in flight right now, and the largest number seen
        self.in_flight = 0
        self.peak = 0
        #: when the last call (or batch) ended (``time.monotonic``; 0: none yet): what a stall detector reads
        self.last_done = 0.0

    async def call(self, request: C, first: bool = False) -> GenerationResult:
        """One call (``first``: ahead of the calls waiting for a slot)."""
        if self.batch_size:
            return await self._batched(request, first)
        await self.slots.acquire(first)
        try:
            if self.stopped():
                raise NotSent
            self._enter(1)
            try:
                return await self.model.generate(request)
            finally:
                self._leave(1)
        finally:
            self.slots.release()

    def _enter(self, n: int) -> None:
        self.in_flight += n
        self.peak = max(self.peak, self.in_flight)

    def _leave(self, n: int) -> None:
        self.in_flight -= n
        self.last_done = time.monotonic()

    async def _batched(self, request: C, first: bool) -> GenerationResult:
        fut: asyncio.Future[GenerationResult] = asyncio.get_running_loop().create_future()
        self._queue.append(QueuedCall(request, first, fut))
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
                self._queue.sort(key=lambda q: not q.first)  # first turns first (a stable sort keeps the rest in order)
                batch, self._queue = self._queue[: self.batch_size], self._queue[self.batch_size:]
                asyncio.get_running_loop().create_task(self._run_batch(batch))
                await asyncio.sleep(0)
        finally:
            self._flushing = False

    async def _run_batch(self, batch: list[QueuedCall[C]]) -> None:
        await self.slots.acquire(any(q.first for q in batch))
        try:
            if self.stopped():
                raise NotSent
            self._enter(len(batch))
            try:
                results = await generate_many(self.model, [q.call for q in batch])  # type: ignore[arg-type]
            finally:
                self._leave(len(batch))
        except BaseException as e:  # noqa: BLE001 - every waiting turn gets the error
            for q in batch:
                if not q.result.done():
                    q.result.set_exception(e)
            return
        finally:
            self.slots.release()
        for q, res in zip(batch, results):
            if not q.result.done():
                q.result.set_result(res)


class _LocalSession:
    """The video session of every video of a local run: frames from the runner, decoded in the thread pool;
    calls through the call gate."""

    def __init__(self, recorder: TurnRecorder, gate: CallGate[GenerationRequest], pool: ThreadPoolExecutor,
                 model: ModelBackend):
        self.recorder, self.gate, self.pool, self.model = recorder, gate, pool, model

    async def frames(self, job: VideoJob) -> VideoFrames | None:
        if not abilities(self.model).needs_frames:
            return None
        loop = asyncio.get_running_loop()
        return await self.recorder.frames(job.video, lambda f, *a: loop.run_in_executor(self.pool, f, *a))

    def request_frames(self, frames: VideoFrames | None) -> VideoFrames | None:
        return frames

    async def call(self, request: GenerationRequest, frames: VideoFrames | None, first: bool = False
                   ) -> GenerationResult:
        return await self.gate.call(request, first)

    async def video_done(self, frames: VideoFrames | None) -> None:
        if frames is not None:
            await video_done(self.model, frames)

    def close(self) -> None:
        return None


class LocalDispatcher:
    """The :class:`~mtvbench.dispatch.Dispatcher` of one process (see the module docstring)."""

    name = "local"
    remote_calls = False

    def __init__(self, concurrency: int = 1, videos_in_flight: int | None = None, decode_workers: int | None = None,
                 model: ModelBackend | None = None, cache_order: bool | None = None):
        self.concurrency = concurrency
        #: the video slots (None: enough for ``concurrency``, :func:`~mtvbench.dispatch.video_slots`)
        self.videos_in_flight = videos_in_flight
        #: the video slots of the last :meth:`run`
        self.video_slots = 0
        #: the cache-aware order (:func:`~mtvbench.dispatch.cache_order`; None: the model's default)
        self.cache_order = cache_order
        self.decode_workers = decode_workers or default_decode_workers()
        #: the model under test (:meth:`driver_model` creates it)
        self.model = model
        self.gate: CallGate[GenerationRequest] | None = None

    def driver_model(self, spec: str, options: BackendOptions) -> ModelBackend:
        """Create the model under test here; it is also the backend the calls go to."""
        self.model = create_backend(spec, options)
        return self.model

    async def start(self, videos: int) -> None:
        """Nothing to start in one process."""
        return None

    async def run(self, jobs: Sequence[VideoJob], recorder: TurnRecorder) -> None:
        """Run every job in this process (see the module docstring); each result goes to ``recorder.record`` as it
        arrives."""
        if self.model is None:
            raise RuntimeError("LocalDispatcher.run needs the model: call driver_model() first")
        gate = self.gate = CallGate(self.model, self.concurrency, lambda: recorder.stopped)
        with ThreadPoolExecutor(self.decode_workers, thread_name_prefix="mtvbench-frames") as pool:
            session = _LocalSession(recorder, gate, pool, self.model)

            def open_session(state: VideoState) -> _LocalSession:
                return session

            self.video_slots = video_slots([j.at_once for j in jobs], self.concurrency, self.videos_in_flight)
            await run_videos(jobs, recorder, self.video_slots, open_session,
                             first_alone=cache_order(self.cache_order, self.model))

    def backend(self, spec: str, options: BackendOptions) -> ModelBackend:
        """A backend created in this process (a construction role)."""
        return create_backend(spec, options)

    async def offload(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread, off the event loop."""
        return await asyncio.to_thread(fn, *args)

    async def aclose(self) -> None:
        """Nothing to end in one process."""
        return None


__all__ = ["CallGate", "CallTarget", "LocalDispatcher", "QueuedCall", "Slots", "default_decode_workers"]
