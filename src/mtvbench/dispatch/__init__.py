"""Who asks the model under test, and how each result gets back to the runner that stores it.

Two sides meet here. The *runner* (:class:`~mtvbench.run.runner.Runner`) decides what is asked and is the
only code that writes to the run store; a *dispatcher* decides where the work runs: in this process
(:mod:`.local`) or on a Ray cluster (:mod:`.ray`). Every dispatcher has the same lifecycle
(:class:`Dispatcher`)::

    model = dispatcher.driver_model(spec, options)  # the backend object the runner keeps
    await dispatcher.start(videos)                  # where the work runs is up (before anything is stored)
    await dispatcher.run(jobs, recorder)            # each result handed to recorder.record as it arrives
    await dispatcher.aclose()

and talks to the runner only through :class:`TurnRecorder`: build the request of a turn, get a video's
frames, record a result (which says whether the dialogue goes on), ask whether the run stopped, and report
turns left pending, a video that failed, a warning or an error.

**The same pipeline for every dispatcher** (:func:`run_videos`). A video first waits for one of
``videos_in_flight`` video slots (the memory bound: frames are kept for at most that many videos at once;
not set, enough videos for the concurrency, :func:`video_slots`), then its frames are fetched where the
dispatcher keeps them (the video's :class:`VideoSession`), then its dialogues run side by side. For every
turn the runner builds the request, the session sends it, and the runner records the result the moment it
exists.

**The order of a video's requests** (:class:`VideoOrder`). With the cache-aware order (``run
--cache-order``, on by default for a backend that declares a prefix cache: :func:`cache_order`) a video's
first turn is sent alone, ahead of the turns already waiting for a call slot, and the video's other turns are
released once it was answered: they then find the video's frame prefix in the provider's (or engine's)
cache, which a turn sent at the same moment cannot. ``videos_in_flight`` stays the memory bound: the next
videos are taken (decoded) while the turns of the first ones run, and their first turns go to the front of
the queue, so the call slots stay busy. Without it, every turn of a video is sent at once.

**Dialogues that build on the model's answers** (:func:`run_dialogue`). In self context
(:attr:`DialogueTurns.chained`) each round's prompt holds the model's own earlier answers, so the rounds
are asked in order, each once the previous round was recorded. A round the runner did not record as an answer
(``record`` returned False because the call failed or its result could not be stored, or the call was not
sent at all) ends its dialogue for this run: the rounds after it are reported as pending and asked on the
next run. Rounds that do not build on each other are asked at once.

A watchdog can run beside the videos (``run_videos(watchdog=...)``, e.g. a stall detector that reads a call
gate's ``in_flight`` and ``last_done``); the Ray dispatcher uses one.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
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
    #: each round builds on the model's answer to the previous round (self context): asked as a chain
    chained: bool = False


@dataclass
class VideoJob:
    """Everything a video still needs from the model under test."""

    video: str
    path: Path
    dialogues: list[DialogueTurns]

    @property
    def turns(self) -> int:
        """How many model calls the video still needs."""
        return sum(len(d.rounds) for d in self.dialogues)

    @property
    def at_once(self) -> int:
        """How many of its calls can be in flight at the same time: every turn of a dialogue whose rounds do
        not build on each other, one per chained dialogue (self context)."""
        return sum(1 if d.chained else len(d.rounds) for d in self.dialogues)


#: the fewest video slots a run gets when ``videos_in_flight`` is not set (:func:`video_slots`)
MIN_VIDEO_SLOTS = 4


def video_slots(at_once: Sequence[int], concurrency: int, setting: int | None = None) -> int:
    """How many videos hold frames at once (the video slots of :func:`run_videos`): ``setting`` (``run
    --videos-in-flight``) when given, else enough to keep ``concurrency`` calls in flight.

    ``at_once``: per video, the calls it can have in flight at the same time (:attr:`VideoJob.at_once`). A video
    keeps its slot from its frames until its last answer, about ``turns / at_once`` latencies of calls plus
    one for its first turn sent alone (the cache-aware order) and one for its turns waiting behind other videos'
    for a call slot; by Little's law ``concurrency`` calls in flight then need about ``3 * concurrency /
    at_once`` videos open, ``4 *`` to spare for latencies that vary. ``at_once`` is the harmonic mean over
    the videos (a run that mixes videos with many and with few turns is bound by the few), the slots at least
    :data:`MIN_VIDEO_SLOTS` and at most ``2 * concurrency`` (a video with one call needs its slot for about one
    latency)."""
    if setting is not None:
        return setting
    counts = [n for n in at_once if n > 0]
    if not counts:
        return MIN_VIDEO_SLOTS
    typical = len(counts) / sum(1 / n for n in counts)
    return max(MIN_VIDEO_SLOTS, min(math.ceil(4 * concurrency / typical), 2 * concurrency))


# ------------------------------------------------------------------------------ the two sides
class Progress:
    """What an evaluation run or a build reports while it works; this class itself shows nothing.

    It is the progress interface of both workflows: the runner reports the stages ``frames``, ``inference``
    and ``judging`` (a dispatcher advances ``frames`` and writes notes), the builder one stage per build
    stage over the videos, and each model reply of a stage. The command line's displays
    (``RichRunProgress`` in :mod:`mtvbench.cli.evaluate`, ``RichBuildProgress`` in
    :mod:`mtvbench.cli.construct`) subclass it; a caller that wants no display passes nothing and gets this
    silent one. Any object with these four methods will do."""

    def start(self, name: str, total: int) -> None:
        """Stage ``name`` begins with ``total`` steps to do (0: nothing to do)."""

    def advance(self, name: str, n: int = 1) -> None:
        """``n`` more steps of stage ``name`` are done."""

    def note(self, label: str, message: str) -> None:
        """Tell the user something now, under ``label`` (a warning, a cleanup, where the work runs)."""

    def reply(self, stage: str) -> None:
        """One model reply of build stage ``stage`` arrived (asked, or read back from the build's call
        journal); an evaluation run does not report replies."""


class TurnRecorder(Protocol):
    """The runner as a dispatcher sees it: everything a dispatcher may ask of it or report to it."""

    progress: Progress

    @property
    def stopped(self) -> bool:
        """Whether the run stopped (a result could not be stored, an endpoint's breaker opened): nothing new
        is sent."""
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

    def turns_pending(self, n: int) -> None:
        """``n`` turns are left pending this run (an earlier round of their dialogue failed, their video
        cannot be read, ...): they are asked on the next run."""
        ...

    def video_failed(self, video: str, why: str) -> None:
        """``video``'s turns are (partly) left pending this run, and why."""
        ...

    def warn(self, message: str) -> None:
        """Show a warning now; the run's summary repeats it."""
        ...

    def stop(self, error: BaseException) -> None:
        """Stop the run because of ``error`` (:meth:`mtvbench.run.runner.Runner.stop`): nothing new is sent,
        the error is raised once the calls in flight are done; an error that is not an mtvbench error is
        raised again at once."""
        ...


class VideoSession(Protocol):
    """Where one video's work runs: opened when the video gets a video slot, closed after its last turn.

    The local dispatcher uses one session for every video (its frames decoded in a thread pool, its calls
    through one call gate); the Ray dispatcher opens one per video, bound to the model replica that video
    was dealt to."""

    async def frames(self, job: VideoJob) -> Any:
        """The video's frames in the form this session sends them (None: the model reads no frames);
        raises VideoError when the video cannot be read."""
        ...

    def request_frames(self, frames: Any) -> VideoFrames | None:
        """The frames the runner puts into a request (None when they travel beside it)."""
        ...

    async def call(self, request: GenerationRequest, frames: Any, first: bool = False) -> GenerationResult:
        """Send one model call (``first``: a video's first turn under the cache-aware order, sent ahead of the
        calls waiting for a call slot). Raises :class:`NotSent` or :class:`TurnGivenUp` when no call was made."""
        ...

    async def video_done(self, frames: Any) -> None:
        """The video's turns are done (or will not be asked this run): the backend frees what it kept for
        it (:func:`~mtvbench.models.backend.video_done`)."""
        ...

    def close(self) -> None:
        """The video left its video slot."""
        ...


class Dispatcher(Protocol):
    """Where model calls and per-video work run (see the module docstring for the lifecycle)."""

    name: str
    #: the model's calls run in other processes: the runner's model object is only the driver's copy, so the
    #: runner counts the call failures against its circuit breaker itself
    remote_calls: bool

    def driver_model(self, spec: str, options: BackendOptions) -> ModelBackend:
        """The backend object the runner keeps for the model under test (cheap: created, nothing started)."""
        ...

    async def start(self, videos: int) -> None:
        """Make ready where the work runs, for at most ``videos`` videos (a cluster joined, replicas up), so
        that a problem here is one error before anything is stored."""
        ...

    async def run(self, jobs: Sequence[VideoJob], recorder: TurnRecorder) -> None:
        """Run every job, handing each result to ``recorder.record`` the moment it exists."""
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
    """The warning shown when the frame cache cannot be written (the run goes on with frames in memory);
    both dispatchers show the same text."""
    return (f"{describe_os_error(root, e, 'frame cache not writable')}; continuing with frames in memory "
            "(decoded again by the next run)")


# ------------------------------------------------------------------------------ dialogues
async def run_dialogue(turns: DialogueTurns, ask: Callable[[Round], Awaitable[bool]],
                       left_pending: Callable[[int], None]) -> None:
    """Ask the rounds of one dialogue (see the module docstring). ``ask(round)`` returns True when the round
    was recorded as an answer; in a chained dialogue the first round that is not ends the dialogue, and the
    number of rounds after it goes to ``left_pending``."""
    if not turns.chained:  # every round is independent of the model's other answers
        await asyncio.gather(*(ask(r) for r in turns.rounds))
        return
    for i, r in enumerate(turns.rounds):
        if not await ask(r):
            left_pending(len(turns.rounds) - i - 1)  # the next rounds need this answer
            return


# ------------------------------------------------------------------------------ the pipeline
class NotSent(Exception):
    """The run stopped while the call waited for its call slot: nothing was sent (asked on the next run)."""


class TurnGivenUp(Exception):
    """The dispatcher gave this turn up for this run (e.g. its video's replicas kept dying): nothing was sent,
    the turn is counted as pending and asked on the next run."""


@dataclass
class VideoState:
    """What became of one video's turns so far (its session reads how many are left)."""

    job: VideoJob
    recorded: int = 0
    #: turns left pending this run (asked on the next run)
    pending: int = 0

    @property
    def left(self) -> int:
        """Turns neither recorded nor left pending yet."""
        return self.job.turns - self.recorded - self.pending


def cache_order(setting: bool | None, model: Any) -> bool:
    """Whether a run uses the cache-aware order: ``setting`` (``run --cache-order on|off``), else on exactly
    for a backend that declares a prefix cache (:attr:`~mtvbench.models.backend.BackendBase.prefix_cache`)."""
    return abilities(model).prefix_cache if setting is None else setting


class VideoOrder:
    """The order of one video's turns (see the module docstring): every turn at once, or with ``first_alone``
    (the cache-aware order) the first turn asked alone, marked ``first`` so that it goes ahead of the calls
    waiting for a call slot, and the other turns once it was answered (or was not sent: they go on without
    it)."""

    def __init__(self, first_alone: bool):
        self._first_taken = not first_alone
        self._answered = asyncio.Event()
        if not first_alone:
            self._answered.set()

    async def ask(self, turn: Callable[[bool], Awaitable[bool]]) -> bool:
        """Run ``turn(first)`` once this video's order lets it go, and return its result."""
        if not self._first_taken:
            self._first_taken = True
            try:
                return await turn(True)
            finally:
                self._answered.set()
        await self._answered.wait()
        return await turn(False)


async def run_videos(jobs: Sequence[VideoJob], recorder: TurnRecorder, videos_in_flight: int,
                     open_session: Callable[[VideoState], VideoSession],
                     watchdog: Callable[[], Awaitable[None]] | None = None, *, first_alone: bool = False) -> None:
    """Run every job through the pipeline (see the module docstring), at most ``videos_in_flight`` videos at a
    time, each in the session ``open_session`` gives it. ``watchdog()`` runs beside the videos until they end
    (an error it raises ends the run); ``first_alone`` selects the cache-aware order (:class:`VideoOrder`)."""
    slots = asyncio.Semaphore(videos_in_flight)  # asyncio semaphores wake waiters in order
    videos = asyncio.gather(*(_video(VideoState(job), recorder, slots, open_session, first_alone) for job in jobs))
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


async def _video(state: VideoState, recorder: TurnRecorder, slots: asyncio.Semaphore,
                 open_session: Callable[[VideoState], VideoSession], first_alone: bool) -> None:
    """One video: wait for a video slot, open its session, run its turns, close the session."""
    try:
        async with slots:
            if recorder.stopped:
                return
            session = open_session(state)
            try:
                await _video_in_slot(state, recorder, session, VideoOrder(first_alone))
            finally:
                session.close()
    except Exception as e:  # noqa: BLE001 - the runner decides: an mtvbench error stops the run, once
        recorder.stop(e)


async def _video_in_slot(state: VideoState, recorder: TurnRecorder, session: VideoSession,
                         order: VideoOrder) -> None:
    """A video that has its slot: its frames, then its dialogues side by side."""
    job = state.job
    try:
        frames = await session.frames(job)
    except VideoError as e:  # its turns are left pending (this run), the run goes on
        recorder.video_failed(job.video, str(e))
        _left_pending(state, recorder, job.turns)
        recorder.progress.advance("frames")
        return
    recorder.progress.advance("frames")

    def ask(d: Dialogue) -> Callable[[Round], Awaitable[bool]]:
        return lambda r: order.ask(partial(_turn, state, recorder, session, d, r, frames))

    try:
        await asyncio.gather(*(run_dialogue(t, ask(t.dialogue), partial(_left_pending, state, recorder))
                               for t in job.dialogues))
    finally:
        await session.video_done(frames)


def _left_pending(state: VideoState, recorder: TurnRecorder, n: int) -> None:
    state.pending += n
    recorder.turns_pending(n)


async def _turn(state: VideoState, recorder: TurnRecorder, session: VideoSession, d: Dialogue, r: Round,
                frames: Any, first: bool) -> bool:
    """One turn: build its request, send it, record the result; True when it was recorded as an answer."""
    if recorder.stopped:  # not sent, not stored: asked on the next run
        return False
    request = recorder.request(d, r, session.request_frames(frames))
    try:
        result = await session.call(request, frames, first)
    except NotSent:
        return False
    except TurnGivenUp:
        _left_pending(state, recorder, 1)
        return False
    except CircuitOpenError as e:  # the endpoint's breaker is open: not sent, not stored
        recorder.stop(e)
        return False
    state.recorded += 1
    return recorder.record(d, r, request, result)


__all__ = ["DialogueTurns", "Dispatcher", "NotSent", "Progress", "TurnGivenUp", "TurnRecorder", "VideoJob",
           "MIN_VIDEO_SLOTS", "VideoOrder", "VideoSession", "VideoState", "cache_order", "frame_cache_warning",
           "run_dialogue", "run_videos", "video_slots"]
