"""One protocol for every model backend, and the registry that picks one by prefix.

A backend turns a :class:`GenerationRequest` (frames + one text prompt) into a
:class:`GenerationResult`. Prompt building, frame sampling and retries live elsewhere
(``prompts``, ``media``, ``models.retry``) and are shared by all backends.

Adding a backend is one new module that calls :func:`register_backend` plus an entry in
``_BUILTIN_MODULES`` so that it is imported lazily when its prefix is used.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mtvbench.errors import MtvbenchError
from mtvbench.media.frames import VideoFrames

Outcome = Literal["ok", "blocked", "empty", "error"]


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     total_tokens=self.total_tokens + other.total_tokens)


class GenerationRequest(BaseModel):
    """What one call asks of a model."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    prompt: str
    system: str | None = None
    frames: VideoFrames | None = None
    #: The dataset's answer for this round. Only the ``oracle`` baseline reads it.
    golden_answer: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET)", re.IGNORECASE)
_KEYLIKE = re.compile(r"\b(sk|AIza|key)[-_][A-Za-z0-9*_\-]{8,}")


def redact_secrets(text: str | None) -> str | None:
    """Remove API keys from a message before it is stored or shown: the values of environment
    variables named like keys/tokens/secrets, and key-shaped strings (``sk-...``)."""
    if not text:
        return text
    import os

    for name, value in os.environ.items():
        if value and len(value) >= 8 and _SECRET_ENV.search(name) and value in text:
            text = text.replace(value, "***")
    return _KEYLIKE.sub("***", text)


class GenerationResult(BaseModel):
    """What one call returned. ``text`` is what gets judged (after any ``</think>``)."""

    text: str = ""
    raw_text: str = ""
    reasoning: str | None = None
    outcome: Outcome = "ok"
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1

    @field_validator("error")
    @classmethod
    def _no_secrets(cls, v: str | None) -> str | None:
        return redact_secrets(v)  # every backend's error text, before anything can store or print it


_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think\s*>", re.IGNORECASE)


def split_thinking(raw: str) -> tuple[str, str | None]:
    """Return (final answer, reasoning). The answer is the text after the last ``</think>``."""
    parts = _THINK_CLOSE.split(raw)
    if len(parts) == 1:
        return raw.strip(), None
    reasoning = _THINK_OPEN.sub("", "</think>".join(parts[:-1])).strip()
    return parts[-1].strip(), reasoning or None


@runtime_checkable
class ModelBackend(Protocol):
    """The interface every backend implements."""

    name: str

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    async def aclose(self) -> None: ...


class BatchingBackend(ModelBackend, Protocol):
    """Backends that run several ready requests in one forward pass (hf, vllm)."""

    batch_size: int

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]: ...


class BackendOptions(BaseModel):
    """Settings a backend may read; unknown keys go to ``extra``."""

    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 300.0
    max_retries: int = 6
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    system: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


BackendFactory = Callable[[str, BackendOptions], ModelBackend]
_REGISTRY: dict[str, BackendFactory] = {}
#: prefix -> module that registers it when imported (lazy, so extras stay optional)
_BUILTIN_MODULES = {
    "openai": "mtvbench.models.openai_api",
    "oracle": "mtvbench.models.baselines",
    "refuse": "mtvbench.models.baselines",
    "gemini": "mtvbench.models.gemini",
    "hf": "mtvbench.models.hf",
    "vllm": "mtvbench.models.vllm_engine",
}


def register_backend(prefix: str) -> Callable[[BackendFactory], BackendFactory]:
    def deco(factory: BackendFactory) -> BackendFactory:
        _REGISTRY[prefix] = factory
        return factory

    return deco


class UnknownModelError(MtvbenchError, ValueError):
    pass


class MissingKeyError(MtvbenchError):
    """No API key in the environment for a backend that needs one."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``'openai:gpt-4o'`` -> (``'openai'``, ``'gpt-4o'``); ``'oracle'`` -> (``'oracle'``, ``''``)."""
    prefix, _, rest = spec.partition(":")
    return prefix.strip().lower(), rest.strip()


def create_backend(spec: str, options: BackendOptions | None = None) -> ModelBackend:
    prefix, name = parse_spec(spec)
    if prefix not in _REGISTRY and prefix in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[prefix])
    if prefix not in _REGISTRY:
        known = sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))
        raise UnknownModelError(f"unknown model '{spec}': the prefix must be one of {', '.join(known)}")
    return _REGISTRY[prefix](name, options or BackendOptions())


def known_prefixes() -> list[str]:
    return sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))


async def generate_many(backend: ModelBackend, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    """Run requests through ``generate_batch`` when the backend batches, else concurrently."""
    batch = getattr(backend, "generate_batch", None)
    if batch is not None:
        return await batch(list(requests))
    return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
