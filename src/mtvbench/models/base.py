"""One protocol for every model backend, and the registry that picks one by prefix.

A backend turns a :class:`GenerationRequest` (frames + one text prompt) into a
:class:`GenerationResult`. Prompt building, frame sampling and the call path of every remote
backend (retries, deadline, size cap, circuit breaker: ``models.resilience``; which key goes to
which URL: ``models.endpoints``) live elsewhere and are shared by all backends.

Adding a backend is one new module that calls :func:`register_backend` plus an entry in
``_BUILTIN_MODULES`` so that it is imported lazily when its prefix is used.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
#: values shorter than this are not scrubbed (a 3-letter "key" would blank ordinary words)
MIN_SECRET_LEN = 8
_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a key a backend read (from any variable, whatever its name) so that
    :func:`redact_secrets` scrubs its value from every message, log line and store."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _SECRETS_LOCK:
            _SECRETS.add(value)


def _secret_values(named_like_keys: bool) -> list[str]:
    with _SECRETS_LOCK:
        values = set(_SECRETS)
    if named_like_keys:
        values.update(v for k, v in os.environ.items()
                      if v and len(v) >= MIN_SECRET_LEN and _SECRET_ENV.search(k))
    return sorted(values, key=len, reverse=True)  # longest first: a key that contains another


def scrub_secret_values(text: str | None, named_like_keys: bool = False) -> str | None:
    """Replace the value of every key a backend read (and, with ``named_like_keys``, of every
    environment variable named like a key) by ``***``. Model replies get only the first: it
    touches nothing but exact values of keys that were really read."""
    if not text:
        return text
    for value in _secret_values(named_like_keys):
        if value in text:
            text = text.replace(value, "***")
    return text


def redact_secrets(text: str | None) -> str | None:
    """Remove API keys from a message before it is stored or shown: every key value a backend
    read (:func:`register_secret`), the values of environment variables named like
    keys/tokens/secrets, and key-shaped strings (``sk-...``)."""
    text = scrub_secret_values(text, named_like_keys=True)
    return _KEYLIKE.sub("***", text) if text else text


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

    @field_validator("text", "raw_text", "reasoning")
    @classmethod
    def _no_key_values(cls, v: str | None) -> str | None:
        return scrub_secret_values(v)  # a server that echoes the key it was sent


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
    """Settings a backend may read; unknown keys go to ``extra``.

    The call-path settings (``timeout_s`` .. ``breaker_threshold``) are read by
    :mod:`mtvbench.models.resilience` for every remote backend (openai, gemini, and the judge,
    which is one of them); local backends ignore them.
    """

    base_url: str | None = None
    #: the environment variable holding this role's key; a key named here goes to ``base_url``
    api_key_env: str | None = None
    #: deadline of one call in seconds: every attempt, connect to last byte, and every wait between them
    timeout_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    #: attempts after the first one for retryable failures (429, 408/409, 5xx, connection, malformed reply)
    max_retries: int = Field(6, ge=0)
    #: backoff with full jitter: a wait is uniform in [0, min(retry_cap_s, retry_base_s * 2**n)]
    retry_base_s: float = Field(1.0, gt=0, allow_inf_nan=False)
    #: the longest wait between attempts, also for a server's Retry-After / retry-after-ms
    retry_cap_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    #: a reply body (error replies included) larger than this is cut off and the call fails
    max_response_bytes: int = Field(8 << 20, gt=0)
    #: this many failed calls in a row to one endpoint stop the run (circuit breaker)
    breaker_threshold: int = Field(8, ge=1)
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    system: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _call_settings_from_extra(cls, data: Any) -> Any:
        """A call-path setting given as a backend option (``--model-option timeout_s=60``, or the
        old ``extra: {retry_base_s: ...}``) sets the field, unless the field is given itself."""
        if not isinstance(data, dict) or not isinstance(data.get("extra"), dict):
            return data
        moved = {k: v for k, v in data["extra"].items() if k in CALL_SETTINGS}
        if not moved:
            return data
        extra = {k: v for k, v in data["extra"].items() if k not in CALL_SETTINGS}
        return {**moved, **data, "extra": extra}


#: the settings of the call path (models.resilience) that ``--model-option`` / ``extra`` may also set
CALL_SETTINGS = ("timeout_s", "max_retries", "retry_base_s", "retry_cap_s", "max_response_bytes", "breaker_threshold")


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
