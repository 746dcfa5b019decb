"""Baselines that need no API: ``oracle`` (the golden answer, the checklist's sanity ceiling)
and ``refuse`` (always declines; shows how much each task rewards refusing)."""

from __future__ import annotations

from mtvbench.models.backend import BackendBase
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult

REFUSAL_TEXT = "I'm sorry, but I can't help with that based on this video."


class OracleBackend(BackendBase):
    name = "oracle"
    needs_frames = False
    #: its answer is the round's golden answer, so that answer is part of what a stored reply means
    reads_golden_answer = True

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.golden_answer is None:
            return GenerationResult(outcome="error", error="oracle needs the golden answer")
        return GenerationResult(text=request.golden_answer, raw_text=request.golden_answer)


class RefuseBackend(BackendBase):
    name = "refuse"
    needs_frames = False

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(text=REFUSAL_TEXT, raw_text=REFUSAL_TEXT)


def oracle(name: str, options: BackendOptions) -> OracleBackend:
    """The ``oracle`` entry of the backend registry."""
    return OracleBackend()


def refuse(name: str, options: BackendOptions) -> RefuseBackend:
    """The ``refuse`` entry of the backend registry."""
    return RefuseBackend()
