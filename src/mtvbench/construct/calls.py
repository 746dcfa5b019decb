"""How the construction stages call a model: any backend, bounded concurrency, the call journal.

Every stage asks through a :class:`StageModel`, which wraps a
:class:`~mtvbench.models.backend.ModelBackend` (``openai:``, ``gemini:``, ``hf:`` ... built by
:func:`~mtvbench.models.registry.create_backend`). For one item of one stage and video,
:meth:`StageModel.caller` gives a backend for the shared ask/parse/re-ask loop
(:func:`mtvbench.models.ask.ask`) that

- answers from the call journal (:mod:`.journal`) when this exact request was paid for
  before, without decoding any frame;
- otherwise decodes the item's frames (once, :class:`LazyFrames`), asks the backend under
  the role's concurrency bound and commits the reply to the journal before returning it.

Transport retries are the backend's; a call that still fails comes back as ``error``,
which the stage records as a failure and the next run asks again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

from mtvbench.construct.artifacts import Failure
from mtvbench.construct.clipframes import sample_ranges_frames
from mtvbench.construct.journal import CallJournal, request_key
from mtvbench.media.frames import FrameSettings, VideoFrames
from mtvbench.models.ask import AskOutcome
from mtvbench.models.backend import BackendBase, ModelBackend
from mtvbench.records import GenerationRequest, GenerationResult, Rejected

T = TypeVar("T")


class LazyFrames:
    """Frames decoded on first use only (in a worker thread), shared by every request that names them."""

    def __init__(self, key: str, load: Callable[[], VideoFrames]):
        self.key = key
        self._load = load
        self._task: asyncio.Future[VideoFrames] | None = None

    async def get(self) -> VideoFrames:
        """The frames, decoded the first time they are asked for (every caller awaits the same decode)."""
        if self._task is None:
            self._task = asyncio.ensure_future(asyncio.to_thread(self._load))
        return await self._task


class StageModel:
    """One model role of the build (caption, merge, suitability, generate, checklist)."""

    def __init__(self, backend: ModelBackend, concurrency: int = 4, journal: CallJournal | None = None,
                 max_tokens: int | None = None, temperature: float | None = None,
                 on_reply: Callable[[str], None] | None = None):
        self.backend = backend
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.journal = journal
        self.max_tokens = max_tokens
        self.temperature = temperature
        #: (video, stage) -> calls sent to the backend / replies read from the journal
        self.asked: Counter[tuple[str, str]] = Counter()
        self.replayed: Counter[tuple[str, str]] = Counter()
        #: called with the stage's name for every reply (asked or replayed), e.g. to show progress
        self.on_reply = on_reply

    @property
    def name(self) -> str:
        """The backend's name."""
        return self.backend.name

    @property
    def calls(self) -> int:
        """How many calls this role has sent to its backend (replies read from the journal not counted)."""
        return sum(self.asked.values())

    def replied(self, stage: str) -> None:
        """Tell ``on_reply`` that a reply of ``stage`` came (sent or read from the journal)."""
        if self.on_reply is not None:
            self.on_reply(stage)

    def caller(self, video: str, stage: str, item: str, frames: LazyFrames | None = None) -> ItemCaller:
        """The backend the ask loop talks to for one item of ``stage`` on ``video`` (journal first, then this role's
        backend)."""
        return ItemCaller(self, video, stage, item, frames)

    async def aclose(self) -> None:
        """Close the role's backend."""
        await self.backend.aclose()


class ItemCaller(BackendBase):
    """A :class:`ModelBackend` for one item: journal first, then the real backend (see module doc)."""

    def __init__(self, model: StageModel, video: str, stage: str, item: str, frames: LazyFrames | None):
        self.model, self.video, self.stage, self.item, self.frames = model, video, stage, item, frames
        self.name = model.name

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """The stored reply of this exact request when the journal has one; else ask the backend (frames decoded now,
        within the role's concurrency) and store the reply unless the call failed."""
        m = self.model
        g = request.generation
        request = request.model_copy(update={  # the id is part of the stored key
            "id": f"{self.stage}/{self.video}/{request.id}",
            "generation": g.model_copy(update={
                "max_tokens": g.max_tokens if g.max_tokens is not None else m.max_tokens,
                "temperature": g.temperature if g.temperature is not None else m.temperature})})
        key = request_key(m.name, request, self.frames.key if self.frames else None)
        if m.journal is not None:
            stored = m.journal.get(self.video, self.stage, key)
            if stored is not None:
                m.replayed[(self.video, self.stage)] += 1
                m.replied(self.stage)
                return stored.result()
        if self.frames is not None:
            request = request.model_copy(update={"frames": await self.frames.get()})
        async with m.sem:
            m.asked[(self.video, self.stage)] += 1
            result = await m.backend.generate(request)
        if m.journal is not None and result.outcome != "error":
            m.journal.put(self.video, self.stage, self.item, key, request.id, m.name, result)
        m.replied(self.stage)
        return result

    async def aclose(self) -> None:  # the role's backend is closed by its owner
        return None


async def gather_all(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Await every item (none is left running), then raise the first exception, if any."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]


def ranges_frames(video_fp: str, path: Path, ranges: list[tuple[float, float]], num: int,
                  settings: FrameSettings) -> LazyFrames:
    """Frames from time ranges of a video (decoded only when a request is really sent)."""
    key = f"{video_fp}:{[(round(s, 4), round(e, 4)) for s, e in ranges]}:{num}:{settings.key()}"
    return LazyFrames(key, lambda: sample_ranges_frames(path, ranges, num, settings))


def text_check(text: str) -> str | Rejected:
    """A reply that is any non-empty text (captions)."""
    t = text.strip()
    return t if t else Rejected(["the reply is empty"])


def failure(item: str, out: AskOutcome) -> Failure:
    """The artifact record of an item without a result."""
    if out.status == "error":
        return Failure(item=item, kind="error", problems=[f"model call failed: {out.error}"], attempts=out.attempts)
    return Failure(item=item, kind="rejected", problems=list(out.problems), attempts=out.attempts)
