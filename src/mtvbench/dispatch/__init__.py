"""Who asks the model, and how each result gets back to the one writer.

A *writer* decides what is asked and is the only one that stores anything (the evaluation's
:class:`~mtvbench.run.runner.Runner`); a *dispatcher* decides where the work runs: in this process
(:mod:`.local`) or on a Ray cluster (:mod:`.ray`). Both implement one lifecycle
(:class:`Dispatcher`)::

    model = dispatcher.driver_model(spec, options)  # the backend the writer holds
    await dispatcher.start(videos)                  # where the work runs is up (before anything is written)
    await dispatcher.run(jobs, writer)              # each result handed to writer.record as it arrives
    await dispatcher.aclose()

and talk to the writer only through :class:`TurnWriter`: build the request of a turn, get a video's
frames, record a result (which says whether the dialogue goes on), stopped?, and fail.

**One pipeline for every dispatcher** (:func:`run_videos`). A video takes one of ``held`` slots (the
memory bound: frames are held for at most that many videos), then its frames are got where the
dispatcher gets them (the video's :class:`Lane`), then its dialogues run side by side. Every turn: the
writer builds the request, the lane sends it, the writer records the result the moment it exists.

**One request order** (:class:`VideoOrder`). With the cache-aware order (``run --cache-order``, on by
default for a backend that declares a prefix cache: :func:`cache_order`) a video's first turn is sent
alone and ahead of the turns already waiting for a call slot, and the video's other turns are released
once it was answered: then they find the video's frame prefix in the provider's (or engine's) cache,
which a turn sent at the same moment cannot. ``held`` stays the memory bound: the next videos are taken
(decoded) while the turns of the first ones run, and their first turns jump the queue, so the call slots
stay full. Without it, every turn of a video is sent at once.

**One chain rule** (:func:`run_dialogue`). Rounds that build on the model's own earlier answers (self
context: :attr:`DialogueTurns.chained`) are asked in order, each once the one before was recorded; a
round the writer did not record as an answer (``record`` returned False: the call failed, or its
result could not be stored; or it was not sent at all) stops its dialogue, and the rounds after it are
reported as not asked (asked on the next run). Rounds that do not build on each other are asked at once.

Where later work plugs in: a watchdog beside the videos (``run_videos(watchdog=...)``, e.g. a stall
detector that reads the gates' ``in_flight`` and ``last_done``); the order of a video's turns is
:class:`VideoOrder`, one place for every dispatcher.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mtvbench.media.frames import VideoError
from mtvbench.models.backend import abilities
from mtvbench.models.resilience import CircuitOpenError
from mtvbench.util.files import describe_os_error

if TYPE_CHECKING:
    from mtvbench.data.schema import Dialogue, Round
    from mtvbench.media.frames import VideoFrames
    from mtvbench.models.backend import ModelBackend
    from mtvbench.models.settings import BackendOptions
    from mtvbench.records import GenerationRequest, GenerationResult

T = TypeVar("T")


# ------------------------------------------------------------------------------ jobs
@dataclass
class DialogueTurns:
    """The rounds of one dialogue that still need a model call, in order."""

    dialogue: Dialogue
    rounds: list[Round]
    #: each round builds on the model's answer to the one before (self context): asked as a chain
    chained: bool = False


@dataclass
class VideoJob:
    """Everything a video still needs from the model under test."""

    video: str
    path: Path
    dialogues: list[DialogueTurns]

    @property
    def turns(self) -> int:
        return sum(len(d.rounds) for d in self.dialogues)


# ------------------------------------------------------------------------------ the two sides
class Progress(Protocol):
    """What a dispatcher reports (the runner's :class:`~mtvbench.run.runner.RunProgress`)."""

    def advance(self, name: str, n: int = 1) -> None: ...

    def note(self, label: str, message: str) -> None: ...


class TurnWriter(Protocol):
    """The writer's side: everything a dispatcher may ask of it."""

    progress: Progress

    @property
    def stopped(self) -> bool:
        """Nothing new is asked (a result could not be stored, an endpoint's breaker opened)."""
        ...

    def request(self, dialogue: Dialogue, rnd: Round, frames: VideoFrames | None) -> GenerationRequest:
        """The request of one turn (in self context with the answers recorded before)."""
        ...

    async def frames(self, video: str, run: Callable[..., Awaitable[VideoFrames]]) -> VideoFrames:
        """The frames of ``video`` (``run(fn, *args)`` runs the decode off the event loop)."""
        ...

    def frame_rule(self, video: str) -> Callable[[int, float], Sequence[int]] | None:
        """Which frames of ``video`` to decode when they are not the frame settings' own (``--sampling clip``:
        the union of its calls' frames, a picklable rule ``(total frames, duration) -> indices``); None else."""
        ...

    def record(self, dialogue: Dialogue, rnd: Round, request: GenerationRequest, result: GenerationResult) -> bool:
        """Store one result as it arrives; False when its dialogue cannot go on (failed, or not stored)."""
        ...

    def turns_not_asked(self, n: int) -> None:
        """``n`` turns are left unasked this run (an earlier round failed, the video cannot be read, ...)."""
        ...

    def video_failed(self, video: str, why: str) -> None:
        """``video`` is left (partly) unasked this run, and why."""
        ...

    def warn(self, message: str) -> None:
        """A warning the run's summary repeats."""
        ...

    def fail(self, e: BaseException) -> None:
        """An error of the work: a user-facing one stops the run (reported once at the end; an open
        circuit breaker as such); any other is raised again."""
        ...


class Lane(Protocol):
    """Where one video's work runs: opened while the video holds a slot, closed after its last turn."""

    async def frames(self, job: VideoJob) -> Any:
        """The video's frames as this lane carries them (None: the model reads none); VideoError when
        the video cannot be read."""
        ...

    def request_frames(self, frames: Any) -> VideoFrames | None:
        """The frames the writer puts into a request (None when they travel beside it)."""
        ...

    async def call(self, request: GenerationRequest, frames: Any, first: bool = False) -> GenerationResult:
        """One model call (``first``: a video's first turn under the cache-aware order, sent ahead of the calls
        waiting for a slot); :class:`NotSent` or :class:`NotAsked` when it was not made."""
        ...

    async def video_done(self, frames: Any) -> None:
        """The video's turns are done (or will not be asked this run): the backend frees what it held for
        it (:func:`~mtvbench.models.backend.video_done`)."""
        ...

    def close(self) -> None: ...


class Dispatcher(Protocol):
    """Where model calls and per-video work run (see the module docstring for the lifecycle)."""

    name: str
    #: the model's calls run in other processes: the writer's model is only the driver's copy, so the
    #: writer counts the call failures against its breaker itself
    remote_calls: bool

    def driver_model(self, spec: str, options: BackendOptions) -> ModelBackend:
        """The backend the writer holds for the model under test (cheap: created, nothing started)."""
        ...

    async def start(self, videos: int) -> None:
        """Make ready where the work runs, for at most ``videos`` videos (a cluster joined, replicas up);
        a problem here is one error before anything is written."""
        ...

    async def run(self, jobs: Sequence[VideoJob], writer: TurnWriter) -> None:
        """Run every job, each result handed to ``writer.record`` the moment it exists."""
        ...

    def backend(self, spec: str, options: BackendOptions) -> ModelBackend:
        """A backend whose calls run where this dispatcher runs them (construction's model roles)."""
        ...

    async def offload(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` off the event loop: a thread here, a task on a cluster (a per-video computation)."""
        ...

    async def aclose(self) -> None:
        """End what :meth:`start` (or a backend) started."""
        ...


def frame_cache_warning(root: Path, e: OSError) -> str:
    """The one warning of a frame cache that cannot be written (the run goes on with frames in memory)."""
    return (f"{describe_os_error(root, e, 'frame cache not writable')}; continuing with frames in memory "
            "(decoded again by the next run)")


# ------------------------------------------------------------------------------ the chain rule
async def run_dialogue(turns: DialogueTurns, ask: Callable[[Round], Awaitable[bool]],
                       not_asked: Callable[[int], None]) -> None:
    """Ask the rounds of one dialogue (see the module docstring): ``ask(round)`` is True when the round
    was recorded as an answer; in a chain, the first that is not stops the dialogue."""
    if not turns.chained:  # every round is independent of the model's other answers
        await asyncio.gather(*(ask(r) for r in turns.rounds))
        return
    for i, r in enumerate(turns.rounds):
        if not await ask(r):
            not_asked(len(turns.rounds) - i - 1)  # the next rounds need this answer
            return


# ------------------------------------------------------------------------------ the pipeline
class NotSent(Exception):
    """The run stopped while the call waited for its slot: nothing was sent (asked on the next run)."""


class NotAsked(Exception):
    """The dispatcher gave this turn up for this run (e.g. its video's replicas kept dying): not sent,
    counted as not asked (asked on the next run)."""


@dataclass
class VideoState:
    """What became of one video's turns so far (its lane reads how many are left)."""

    job: VideoJob
    recorded: int = 0
    not_asked: int = 0

    @property
    def left(self) -> int:
        return self.job.turns - self.recorded - self.not_asked


def cache_order(setting: bool | None, model: Any) -> bool:
    """Whether a run uses the cache-aware order: ``setting`` (``run --cache-order on|off``), else on exactly
    for a backend that declares a prefix cache (:attr:`~mtvbench.models.backend.BackendBase.prefix_cache`)."""
    return abilities(model).prefix_cache if setting is None else setting


class VideoOrder:
    """The order of one video's turns (the module docstring): every turn at once, or (``first_alone``, the
    cache-aware order) the first turn asked alone, marked ``first`` so it goes ahead of the calls waiting for
    a slot, and the others once it was answered (or was not asked: they go on without it)."""

    def __init__(self, first_alone: bool):
        self._first_taken = not first_alone
        self._answered = asyncio.Event()
        if not first_alone:
            self._answered.set()

    async def ask(self, turn: Callable[[bool], Awaitable[bool]]) -> bool:
        """``turn(first)`` when this video's order lets it go; its result."""
        if not self._first_taken:
            self._first_taken = True
            try:
                return await turn(True)
            finally:
                self._answered.set()
        await self._answered.wait()
        return await turn(False)


async def run_videos(jobs: Sequence[VideoJob], writer: TurnWriter, held: int,
                     open_lane: Callable[[VideoState], Lane],
                     watchdog: Callable[[], Awaitable[None]] | None = None, *, first_alone: bool = False) -> None:
    """Every job through the pipeline (module docstring); ``watchdog()`` runs beside them until they end
    (an error it raises ends the run); ``first_alone``: the cache-aware order (:class:`VideoOrder`)."""
    slots = asyncio.Semaphore(held)  # asyncio semaphores wake waiters in order
    videos = asyncio.gather(*(_video(VideoState(job), writer, slots, open_lane, first_alone) for job in jobs))
    if watchdog is None:
        await videos
        return
    watch = asyncio.ensure_future(watchdog())
    try:
        await asyncio.wait([videos, watch], return_when=asyncio.FIRST_COMPLETED)
        error = watch.exception() if watch.done() and not watch.cancelled() else None
        if error is not None:
            videos.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await videos
            raise error
        await videos
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
        if not videos.done():  # cancelled (SIGINT, SIGTERM): the videos end here, before the dispatcher closes
            videos.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await videos


async def _video(state: VideoState, writer: TurnWriter, slots: asyncio.Semaphore,
                 open_lane: Callable[[VideoState], Lane], first_alone: bool) -> None:
    try:
        async with slots:
            if writer.stopped:
                return
            lane = open_lane(state)
            try:
                await _video_held(state, writer, lane, VideoOrder(first_alone))
            finally:
                lane.close()
    except Exception as e:  # noqa: BLE001 - the writer decides: a user error stops the run, once
        writer.fail(e)


async def _video_held(state: VideoState, writer: TurnWriter, lane: Lane, order: VideoOrder) -> None:
    job = state.job
    try:
        frames = await lane.frames(job)
    except VideoError as e:  # its turns are not asked (this run), the run goes on
        writer.video_failed(job.video, str(e))
        _not_asked(state, writer, job.turns)
        writer.progress.advance("frames")
        return
    writer.progress.advance("frames")

    def ask(d: Dialogue) -> Callable[[Round], Awaitable[bool]]:
        return lambda r: order.ask(partial(_turn, state, writer, lane, d, r, frames))

    try:
        await asyncio.gather(*(run_dialogue(t, ask(t.dialogue), partial(_not_asked, state, writer))
                               for t in job.dialogues))
    finally:
        await lane.video_done(frames)


def _not_asked(state: VideoState, writer: TurnWriter, n: int) -> None:
    state.not_asked += n
    writer.turns_not_asked(n)


async def _turn(state: VideoState, writer: TurnWriter, lane: Lane, d: Dialogue, r: Round, frames: Any,
                first: bool) -> bool:
    if writer.stopped:  # not sent, not stored: asked on the next run
        return False
    request = writer.request(d, r, lane.request_frames(frames))
    try:
        result = await lane.call(request, frames, first)
    except NotSent:
        return False
    except NotAsked:
        _not_asked(state, writer, 1)
        return False
    except CircuitOpenError as e:  # the endpoint's breaker is open: not sent, not stored
        writer.fail(e)
        return False
    state.recorded += 1
    return writer.record(d, r, request, result)


__all__ = ["DialogueTurns", "Dispatcher", "Lane", "NotAsked", "NotSent", "Progress", "TurnWriter", "VideoJob",
           "VideoOrder", "VideoState", "cache_order", "frame_cache_warning", "run_dialogue", "run_videos"]
