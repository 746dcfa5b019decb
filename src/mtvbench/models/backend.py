"""The interface every model backend implements, and what the callers of backends share.

A backend turns a :class:`~mtvbench.records.GenerationRequest` (frames + one text prompt) into
a :class:`~mtvbench.records.GenerationResult`. Prompt building, frame sampling and the call path
of every remote backend (retries, deadline, size cap, circuit breaker: :mod:`.resilience`; which
key goes to which URL: :mod:`.endpoints`) live elsewhere and are shared by all backends;
backends are found by the prefix of a spec in :mod:`.registry`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from mtvbench.records import GenerationRequest, GenerationResult


@runtime_checkable
class ModelBackend(Protocol):
    """The interface every backend implements.

    Optional attributes the runner reads: ``needs_frames`` (False: no frames are decoded for it),
    ``reads_golden_answer`` (True: the golden answer is part of a result's fingerprint), ``breaker``
    (a remote backend's :class:`~mtvbench.models.resilience.CircuitBreaker`)."""

    name: str

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    async def aclose(self) -> None: ...


class BatchingBackend(ModelBackend, Protocol):
    """Backends that run several ready requests in one forward pass (hf, vllm)."""

    batch_size: int

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]: ...


async def generate_many(backend: ModelBackend, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    """Run requests through ``generate_batch`` when the backend batches, else concurrently."""
    batch = getattr(backend, "generate_batch", None)
    if batch is not None:
        return await batch(list(requests))
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
