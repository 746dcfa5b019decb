"""A backend's optional abilities are declared on BackendBase and read through abilities() only; a backend of
another package that does not derive from it gets what it declares the old way, else the defaults."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Sequence
from pathlib import Path

from mtvbench import BackendBase as PublicBase
from mtvbench.dispatch.local import CallGate
from mtvbench.models.backend import Abilities, BackendBase, abilities, generate_many, video_done
from mtvbench.models.baselines import OracleBackend, RefuseBackend
from mtvbench.models.registry import BACKENDS, create_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult


class Plain(BackendBase):
    name = "plain"

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(text=request.prompt, raw_text=request.prompt)


class Batching(Plain):
    batch_size = 2

    def __init__(self) -> None:
        self.batches: list[int] = []

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.batches.append(len(requests))
        return [GenerationResult(text=r.prompt.upper()) for r in requests]


class OldStyle:
    """A third-party backend written before BackendBase: abilities as class attributes."""

    name = "old"
    needs_frames = False
    reads_golden_answer = True
    batch_size = 3

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(text="one")

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [GenerationResult(text="batched") for _ in requests]

    async def aclose(self) -> None:
        return None


class Bare:
    name = "bare"
    batch_size = 4  # without generate_batch it does not batch

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(text="bare")

    async def aclose(self) -> None:
        return None


def _requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(id=str(i), prompt=f"p{i}") for i in range(n)]


def test_the_base_declares_the_defaults_of_a_plain_backend() -> None:
    assert PublicBase is BackendBase
    assert abilities(Plain()) == Abilities(needs_frames=True, reads_golden_answer=False, batch_size=0, breaker=None)
    out = asyncio.run(Plain().generate_batch(_requests(2)))  # the default batch: one generate each
    assert [r.text for r in out] == ["p0", "p1"]
    assert asyncio.run(Plain().aclose()) is None


def test_built_in_backends_derive_from_the_base_and_declare_theirs() -> None:
    assert abilities(OracleBackend()) == Abilities(needs_frames=False, reads_golden_answer=True)
    assert abilities(RefuseBackend()) == Abilities(needs_frames=False)
    for name in ("oracle", "refuse", "offline"):
        assert isinstance(create_backend(name), BackendBase), name
    openai = create_backend("openai:m", BackendOptions(base_url="http://127.0.0.1:9/v1", api_key_env=None))
    try:
        assert isinstance(openai, BackendBase) and abilities(openai).breaker is openai.breaker is not None
    finally:
        asyncio.run(openai.aclose())
    for prefix in ("hf", "vllm", "gemini"):  # imported lazily: checked by class, without the optional packages
        ref = BACKENDS.get(prefix).factory
        module, _, cls = str(ref).partition(":")
        source = Path(str(importlib.util.find_spec(module).origin))
        assert f"class {cls}(BackendBase)" in source.read_text(encoding="utf-8"), prefix


def test_a_backend_without_the_base_gets_what_it_declares_else_the_defaults() -> None:
    assert abilities(OldStyle()) == Abilities(needs_frames=False, reads_golden_answer=True, batch_size=3)
    assert abilities(Bare()) == Abilities()
    assert [r.text for r in asyncio.run(generate_many(OldStyle(), _requests(2)))] == ["batched", "batched"]
    assert [r.text for r in asyncio.run(generate_many(Bare(), _requests(2)))] == ["bare", "bare"]


def test_the_call_gate_batches_exactly_the_backends_that_declare_a_batch_size() -> None:
    async def ask(model: object, n: int) -> list[str]:
        gate = CallGate(model, concurrency=4)  # type: ignore[arg-type]
        return [r.text for r in await asyncio.gather(*(gate.call(r) for r in _requests(n)))]

    batching = Batching()
    assert CallGate(batching, 1).batch_size == 2 and CallGate(Plain(), 1).batch_size == 0
    assert asyncio.run(ask(batching, 5)) == ["P0", "P1", "P2", "P3", "P4"]
    assert sorted(batching.batches) == [1, 2, 2]
    assert asyncio.run(ask(Plain(), 2)) == ["p0", "p1"]
    assert CallGate(OldStyle(), 1).batch_size == 3 and CallGate(Bare(), 1).batch_size == 0  # type: ignore[arg-type]


def test_a_video_done_reaches_the_backends_that_hold_something_for_it() -> None:
    class Holding(Plain):
        def __init__(self) -> None:
            self.ended: list[str] = []

        async def end_video(self, frames: object) -> None:
            self.ended.append(str(frames))

    class OldHolding(Bare):
        ended: list[str] = []

        async def end_video(self, frames: object) -> None:
            self.ended.append(str(frames))

    held, old = Holding(), OldHolding()
    for backend in (held, old, Plain(), Bare()):
        asyncio.run(video_done(backend, "v1"))  # type: ignore[arg-type]
    assert held.ended == ["v1"] and old.ended == ["v1"]
