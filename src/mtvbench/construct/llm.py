"""How the construction stages call a model: the evaluation core's backends, bounded concurrency.

Every stage asks through :class:`StageModel`, which wraps any
:class:`~mtvbench.models.base.ModelBackend` (``openai:``, ``gemini:``, ``hf:`` ... built by
:func:`~mtvbench.models.base.create_backend`). Retries are the backend's; a call that still
fails comes back as an error string, which the stage records as a failure and the next
run asks again.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from mtvbench.media.frames import VideoFrames
from mtvbench.models.base import BackendOptions, GenerationRequest, ModelBackend, create_backend


class StageModel:
    def __init__(self, backend: ModelBackend, concurrency: int = 4, max_tokens: int | None = None,
                 temperature: float | None = None):
        self.backend = backend
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.calls = 0

    @property
    def name(self) -> str:
        return self.backend.name

    async def ask(self, request_id: str, prompt: str, frames: VideoFrames | None = None) -> tuple[str | None, str]:
        """(reply text, '') or (None, error)."""
        async with self.sem:
            self.calls += 1
            res = await self.backend.generate(GenerationRequest(
                id=request_id, prompt=prompt, frames=frames, max_tokens=self.max_tokens,
                temperature=self.temperature))
        if res.outcome in ("ok",) and res.text.strip():
            return res.text, ""
        return None, res.error or res.outcome

    async def aclose(self) -> None:
        await self.backend.aclose()


def make_stage_model(spec: str, options: BackendOptions | None = None, concurrency: int = 4) -> StageModel:
    return StageModel(create_backend(spec, options), concurrency=concurrency)


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a reply (fenced or embedded in prose), or None."""
    cands = [m.group(1) for m in _FENCE.finditer(text)]
    s, e = text.find("{"), text.rfind("}")
    if s != -1 and e > s:
        cands.append(text[s : e + 1])
    for c in cands:
        try:
            obj = json.loads(c)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def run_sync(coro: Any) -> Any:
    """Run a coroutine from synchronous code (the CLI and the pipeline's sync entry points)."""
    return asyncio.run(coro)
