"""The interface every model backend implements, and what the callers of backends share.

A backend turns a :class:`~mtvbench.records.GenerationRequest` (frames + one text prompt) into
a :class:`~mtvbench.records.GenerationResult`. Prompt building, frame sampling and the call path
of every remote backend (retries, deadline, size cap, circuit breaker: :mod:`.resilience`; which
key goes to which URL: :mod:`.endpoints`) live elsewhere and are shared by all backends;
backends are found by the prefix of a spec in :mod:`.registry`.

**Abilities are declared, never guessed.** What a backend may do beyond ``generate`` (skip frame
decoding, read the golden answer, take batches, carry a circuit breaker, reuse a prompt prefix it saw
before, release what it kept for a video when its turns are done) is declared on :class:`BackendBase`,
which every backend of mtvbench derives from, with the defaults of a plain backend. Callers read them
through :func:`abilities` and :func:`video_done` only: a backend of another package that does not
derive from :class:`BackendBase` gets what it declares the old way (attributes of the same names), else
the defaults, in that one place.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mtvbench.media.frames import VideoFrames
from mtvbench.records import GenerationRequest, GenerationResult, ProviderResource


class ResourceLog(Protocol):
    """Where a backend records what it makes on a provider's server (the run store): each
    :class:`~mtvbench.records.ProviderResource` when it is asked for, and again when it is made, deleted or
    could not be deleted (the same ``token``, written over)."""

    def record_resource(self, resource: ProviderResource) -> None:
        """Store ``resource`` (a newer record of the same ``token`` replaces the older)."""
        ...


@runtime_checkable
class ModelBackend(Protocol):
    """The interface every backend implements (its optional abilities: :class:`BackendBase`)."""

    name: str

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """Answer one request (the result's ``outcome`` says whether the call succeeded)."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds: connections, loaded weights, what it made on a provider's server."""
        ...


class BackendBase:
    """The base class of a backend: the optional abilities with the defaults of a plain backend.

    A backend sets the ones it has as class (or instance) attributes and overrides ``generate`` and,
    when it batches, ``generate_batch``; nothing else reads its attributes with ``getattr``."""

    name: str = ""
    #: False: no frames are decoded for it (the baselines, a stand-in whose frames are decoded elsewhere)
    needs_frames: bool = True
    #: True: the round's golden answer is part of what a reply means (a result's fingerprint has it)
    reads_golden_answer: bool = False
    #: more than 0: ``generate_batch`` takes up to this many ready requests in one go (hf, vllm)
    batch_size: int = 0
    #: the :class:`~mtvbench.models.resilience.CircuitBreaker` of a backend that calls a server
    breaker: Any = None
    #: True: a prompt prefix of an earlier request that was answered is served from a cache (a provider's prompt
    #: caching, an engine's prefix caching), so the dispatcher's cache-aware order is on by default for it
    prefix_cache: bool = False
    #: where the resources it makes on a provider's server are recorded (set by the run: :func:`track_resources`)
    resources: ResourceLog | None = None

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """Answer one request; every backend overrides this."""
        raise NotImplementedError

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Several requests at once; the default asks them concurrently, one ``generate`` each."""
        return list(await asyncio.gather(*(self.generate(r) for r in requests)))

    async def end_video(self, frames: VideoFrames) -> None:
        """The turns of the video ``frames`` belongs to are done: release what was kept for it (Gemini's context
        cache). Called through :func:`video_done`; the default keeps nothing."""
        return None

    async def delete_left(self, left: Sequence[ProviderResource]) -> None:
        """Delete what an earlier run left on the provider's server (its records in the run store), each
        outcome recorded in :attr:`resources`; the default makes nothing, so it deletes nothing."""
        return None

    async def aclose(self) -> None:
        """Release everything it holds: what it made on a provider's server is deleted, or its record says why
        not (:attr:`resources`)."""
        return None


@dataclass(frozen=True)
class Abilities:
    """What a backend declares beyond ``generate`` (:class:`BackendBase`)."""

    needs_frames: bool = True
    reads_golden_answer: bool = False
    #: 0: it does not batch
    batch_size: int = 0
    breaker: Any = None
    prefix_cache: bool = False


def abilities(backend: Any) -> Abilities:
    """The abilities of ``backend``: those a :class:`BackendBase` declares; for a backend of another package
    that does not derive from it, the attributes of the same names it sets (the spelling before
    :class:`BackendBase` existed), else the defaults. Callers read abilities only here."""
    if isinstance(backend, BackendBase):
        return Abilities(needs_frames=bool(backend.needs_frames), reads_golden_answer=bool(backend.reads_golden_answer),
                         batch_size=max(0, int(backend.batch_size or 0)), breaker=backend.breaker,
                         prefix_cache=bool(backend.prefix_cache))
    default = Abilities()
    batches = callable(getattr(backend, "generate_batch", None))
    return Abilities(needs_frames=bool(getattr(backend, "needs_frames", default.needs_frames)),
                     reads_golden_answer=bool(getattr(backend, "reads_golden_answer", default.reads_golden_answer)),
                     batch_size=max(0, int(getattr(backend, "batch_size", 0) or 0)) if batches else 0,
                     breaker=getattr(backend, "breaker", None),
                     prefix_cache=bool(getattr(backend, "prefix_cache", default.prefix_cache)))


async def video_done(backend: Any, frames: VideoFrames) -> None:
    """Tell ``backend`` that a video's turns are done (:meth:`BackendBase.end_video`); a backend of another
    package that does not derive from :class:`BackendBase` is told when it has an ``end_video``."""
    if isinstance(backend, BackendBase):
        await backend.end_video(frames)
        return
    done = getattr(backend, "end_video", None)
    if callable(done):
        await done(frames)


def track_resources(backend: Any, log: ResourceLog) -> None:
    """Record what ``backend`` makes on a provider's server in ``log`` (the run store) from now on."""
    if isinstance(backend, BackendBase) or hasattr(backend, "resources"):
        backend.resources = log


async def delete_left(backend: Any, left: Sequence[ProviderResource]) -> None:
    """Ask ``backend`` to delete what an earlier run left on a provider's server (:meth:`BackendBase.delete_left`)."""
    done = getattr(backend, "delete_left", None)
    if left and callable(done):
        await done(left)


async def generate_many(backend: ModelBackend, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    """Run requests through ``generate_batch`` when the backend batches, else concurrently."""
    if abilities(backend).batch_size:
        return list(await backend.generate_batch(list(requests)))  # type: ignore[attr-defined]
    return list(await asyncio.gather(*(backend.generate(r) for r in requests)))


_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think\s*>", re.IGNORECASE)


def split_thinking(raw: str) -> tuple[str, str | None]:
    """Return (final answer, reasoning). The answer is the text after the last ``</think>``."""
    parts = _THINK_CLOSE.split(raw)
    if len(parts) == 1:
        return raw.strip(), None
    reasoning = _THINK_OPEN.sub("", "</think>".join(parts[:-1])).strip()
    return parts[-1].strip(), reasoning or None
