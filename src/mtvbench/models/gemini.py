"""``gemini:MODEL`` — Google Gemini through the google-genai SDK (``pip install 'mtvbench[gemini]'``).

Keys: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (or the variable named by ``api_key_env``).
Vertex AI: set ``GOOGLE_GENAI_USE_VERTEXAI=true`` with ``GOOGLE_CLOUD_PROJECT`` and
``GOOGLE_CLOUD_LOCATION`` (and application default credentials); the SDK reads them.

Two input modes (``options.extra["input"]``):

- ``frames`` (default): the run's sampled frames (the paper's 128) go inline as JPEG parts,
  followed by the prompt.
- ``upload``: each video file is uploaded once per run through the Files API, the backend
  waits until the file is ``ACTIVE`` and reuses the handle for every turn of every dialogue of
  that video; the files are deleted in :meth:`GeminiBackend.aclose` (the API also expires them
  after 48 hours). Gemini then samples the video itself (``video_fps`` sets its rate). The
  Developer API only: Vertex AI has no Files API.

Other ``extra`` settings: ``thinking_budget`` (tokens; 0 turns thinking off where the model
allows it, -1 dynamic), ``include_thoughts`` (bool), ``media_resolution`` (``low`` / ``medium`` /
``high``), ``safety`` (``default`` or ``off``: BLOCK_NONE for the adjustable categories),
``api_version``, ``upload_poll_s``, ``upload_timeout_s``, ``retry_base_s``.

Outcomes: a prompt blocked by safety (``prompt_feedback.block_reason``) or a candidate stopped
for safety / prohibited content / recitation is ``blocked``; no candidate or no text is
``empty``; HTTP 429 (``RESOURCE_EXHAUSTED``), 408 and 5xx are retried with the one retry policy
(the server's ``RetryInfo.retryDelay`` is honoured) and recorded as ``error`` when retries run
out. None of these raise.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mtvbench.errors import ConfigError, MissingExtraError
from mtvbench.models.base import (
    BackendOptions,
    GenerationRequest,
    GenerationResult,
    Usage,
    register_backend,
    split_thinking,
)
from mtvbench.models.retry import FatalError, RetryableError, RetryPolicy, parse_retry_after, with_retries

try:
    import httpx
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    genai = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = _e
else:
    _IMPORT_ERROR = None


T = TypeVar("T")

KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
BLOCK_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT"}
RETRYABLE_STATUS = {408, 429}
SAFETY_CATEGORIES = ("HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                     "HARM_CATEGORY_DANGEROUS_CONTENT")


def _require_sdk() -> None:
    if _IMPORT_ERROR is not None:
        raise MissingExtraError("the gemini: backend", "gemini", "google-genai") from _IMPORT_ERROR


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def use_vertex() -> bool:
    return _truthy(os.environ.get("GOOGLE_GENAI_USE_VERTEXAI"))


def resolve_key(api_key_env: str | None) -> str:
    from mtvbench.models.base import MissingKeyError

    names = (api_key_env,) if api_key_env else KEY_ENVS
    for env in names:
        key = os.environ.get(env)
        if key:
            return key
    raise MissingKeyError(
        f"no Gemini API key: set {' or '.join(names)} (or GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI)")


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*s\s*$")


def retry_delay(error: Any) -> float | None:
    """Seconds to wait from a Gemini error: ``RetryInfo.retryDelay`` ("12s"), else Retry-After."""
    details = getattr(error, "details", None)
    body = details.get("error", details) if isinstance(details, dict) else None
    for item in (body or {}).get("details", []) if isinstance(body, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            m = _DURATION.match(str(item.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    return parse_retry_after(dict(headers)) if headers is not None else None


def classify_error(error: BaseException) -> Exception:
    """SDK / transport error -> RetryableError or FatalError (the one retry policy decides)."""
    if genai is not None and isinstance(error, genai_errors.APIError):
        code = int(error.code or 0)
        msg = f"HTTP {code} {error.status or ''}: {error.message or ''}".strip()
        if code in RETRYABLE_STATUS or code >= 500:
            return RetryableError(msg, retry_delay(error))
        return FatalError(msg)
    if isinstance(error, (httpx.TimeoutException, httpx.TransportError, asyncio.TimeoutError)):
        return RetryableError(f"{type(error).__name__}: {error}")
    return FatalError(f"{type(error).__name__}: {error}")


def result_from_response(resp: Any, latency: float, attempts: int) -> GenerationResult:
    """A generateContent response -> ok / blocked / empty, with usage and thoughts."""
    usage = Usage()
    um = getattr(resp, "usage_metadata", None)
    if um is not None:
        prompt = um.prompt_token_count or 0
        completion = (um.candidates_token_count or 0) + (um.thoughts_token_count or 0)
        usage = Usage(prompt_tokens=prompt, completion_tokens=completion,
                      total_tokens=um.total_token_count or prompt + completion)
    common = {"usage": usage, "latency_s": latency, "attempts": attempts}
    feedback = getattr(resp, "prompt_feedback", None)
    if feedback is not None and feedback.block_reason:
        reason = _enum_name(feedback.block_reason)
        return GenerationResult(outcome="blocked", error=f"prompt blocked: {reason}", **common)
    if not resp.candidates:
        return GenerationResult(outcome="empty", error="no candidates", **common)
    cand = resp.candidates[0]
    finish = _enum_name(cand.finish_reason) if cand.finish_reason else ""
    answer, thoughts = [], []
    for part in (cand.content.parts if cand.content and cand.content.parts else []):
        if part.text is None:
            continue
        (thoughts if part.thought else answer).append(part.text)
    raw = "".join(answer)
    text, reasoning = split_thinking(raw)
    reasoning = "\n".join(thoughts).strip() or reasoning
    if finish in BLOCK_FINISH:
        return GenerationResult(text=text, raw_text=raw, reasoning=reasoning, outcome="blocked",
                                error=f"finish_reason {finish}", **common)
    if not text:
        return GenerationResult(raw_text=raw, reasoning=reasoning, outcome="empty",
                                error=f"no text (finish_reason {finish or 'none'})", **common)
    return GenerationResult(text=text, raw_text=raw, reasoning=reasoning, outcome="ok", **common)


def _enum_name(value: Any) -> str:
    return str(getattr(value, "value", value))


class GeminiBackend:
    #: True in both modes: upload mode reads the video path from the frames record
    needs_frames = True

    def __init__(self, model: str, options: BackendOptions):
        _require_sdk()
        if not model:
            raise ConfigError("gemini: needs a model name, e.g. gemini:gemini-2.5-pro")
        self.name = f"gemini:{model}"
        self.model = model
        self.options = options
        extra = options.extra
        self.input_mode = str(extra.get("input", "frames"))
        if self.input_mode not in ("frames", "upload"):
            raise ConfigError(f"gemini: input must be 'frames' or 'upload', got {self.input_mode!r}")
        self.policy = RetryPolicy(max_retries=options.max_retries, base_s=float(extra.get("retry_base_s", 1.0)))
        self.poll_s = float(extra.get("upload_poll_s", 2.0))
        self.upload_timeout_s = float(extra.get("upload_timeout_s", 600.0))
        http = types.HttpOptions(base_url=options.base_url, timeout=int(options.timeout_s * 1000),
                                 api_version=extra.get("api_version"))
        self.vertex = use_vertex() and not options.api_key_env
        if self.vertex:
            if self.input_mode == "upload":
                raise ConfigError("gemini: input=upload needs the Gemini Developer API (Vertex AI has no Files API)")
            self.client = genai.Client(http_options=http)
        else:
            self.client = genai.Client(api_key=resolve_key(options.api_key_env), http_options=http)
        self._uploads: dict[Path, asyncio.Task[Any]] = {}
        #: names of the files this backend uploaded (deleted in aclose)
        self.uploaded: list[str] = []

    # -------------------------------------------------------------------- request building
    def _config(self, request: GenerationRequest) -> Any:
        o, extra = self.options, self.options.extra
        cfg: dict[str, Any] = {}
        system = request.system or o.system
        if system:
            cfg["system_instruction"] = system
        for key, field in (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k")):
            value = getattr(request, key) if getattr(request, key) is not None else getattr(o, key)
            if value is not None:
                cfg[field] = value
        max_tokens = request.max_tokens or o.max_tokens
        if max_tokens:
            cfg["max_output_tokens"] = max_tokens
        if extra.get("thinking_budget") is not None or extra.get("include_thoughts"):
            cfg["thinking_config"] = types.ThinkingConfig(
                thinking_budget=extra.get("thinking_budget"), include_thoughts=bool(extra.get("include_thoughts")))
        if extra.get("media_resolution"):
            cfg["media_resolution"] = f"MEDIA_RESOLUTION_{str(extra['media_resolution']).upper()}"
        if extra.get("safety") == "off":
            cfg["safety_settings"] = [types.SafetySetting(category=c, threshold="BLOCK_NONE")
                                      for c in SAFETY_CATEGORIES]
        return types.GenerateContentConfig(**cfg)

    async def _parts(self, request: GenerationRequest) -> list[Any]:
        parts: list[Any] = []
        frames = request.frames
        if self.input_mode == "upload":
            video = request.extra.get("video") or (frames.video if frames is not None else None)
            if video is None:
                raise FatalError("gemini: input=upload needs the video path (frames record or request.extra['video'])")
            f = await self.file_for(Path(video))
            part = types.Part.from_uri(file_uri=f.uri, mime_type=f.mime_type or _mime(Path(video)))
            if self.options.extra.get("video_fps"):
                part.video_metadata = types.VideoMetadata(fps=float(self.options.extra["video_fps"]))
            parts.append(part)
        elif frames is not None:
            parts.extend(types.Part.from_bytes(data=j, mime_type="image/jpeg") for j in frames.jpegs)
        parts.append(types.Part.from_text(text=request.prompt))
        return parts

    # -------------------------------------------------------------------- Files API
    async def file_for(self, path: Path) -> Any:
        """The uploaded, ACTIVE file of ``path``; uploaded once per backend, shared by all turns."""
        key = path.resolve()
        task = self._uploads.get(key)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = asyncio.ensure_future(self._upload(key))
            self._uploads[key] = task
        return await asyncio.shield(task)

    async def _upload(self, path: Path) -> Any:
        async def once() -> Any:
            return await self._guard(self.client.aio.files.upload(
                file=str(path), config=types.UploadFileConfig(mime_type=_mime(path),
                                                              display_name=f"mtvbench-{path.name}")))

        f, _ = await with_retries(once, self.policy)
        self.uploaded.append(f.name)
        deadline = time.monotonic() + self.upload_timeout_s
        while _enum_name(f.state) == "PROCESSING":
            if time.monotonic() > deadline:
                raise FatalError(f"gemini: {path.name} still PROCESSING after {self.upload_timeout_s:.0f}s")
            await asyncio.sleep(self.poll_s)
            f, _ = await with_retries(lambda name=f.name: self._guard(self.client.aio.files.get(name=name)),
                                      self.policy)
        if _enum_name(f.state) != "ACTIVE":
            err = getattr(getattr(f, "error", None), "message", None)
            raise FatalError(f"gemini: upload of {path.name} ended in state {_enum_name(f.state)}: {err or ''}")
        return f

    # -------------------------------------------------------------------- calls
    async def _guard(self, aw: Awaitable[T]) -> T:
        try:
            return await aw
        except (RetryableError, FatalError):
            raise
        except Exception as e:  # SDK and transport errors -> the one policy's two kinds
            raise classify_error(e) from e

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        start = time.perf_counter()
        attempts = 1
        try:
            parts = await self._parts(request)
            config = self._config(request)
            call: Callable[[], Awaitable[Any]] = lambda: self._guard(  # noqa: E731
                self.client.aio.models.generate_content(model=self.model, contents=[
                    types.Content(role="user", parts=parts)], config=config))
            resp, attempts = await with_retries(call, self.policy)
        except RetryableError as e:
            return GenerationResult(outcome="error", error=str(e), latency_s=time.perf_counter() - start,
                                    attempts=self.policy.max_retries + 1)
        except FatalError as e:
            return GenerationResult(outcome="error", error=str(e), latency_s=time.perf_counter() - start,
                                    attempts=attempts)
        return result_from_response(resp, time.perf_counter() - start, attempts)

    async def aclose(self) -> None:
        for task in self._uploads.values():
            if not task.done():
                task.cancel()
        for name in list(self.uploaded):
            try:
                await self.client.aio.files.delete(name=name)
            except Exception:  # noqa: BLE001 - the API expires files after 48 h anyway
                continue
            self.uploaded.remove(name)
        self._uploads.clear()
        close = getattr(self.client.aio, "aclose", None)  # older SDKs have no aclose
        if close is not None:
            await close()


def _mime(path: Path) -> str:
    return mimetypes.guess_type(str(path))[0] or "video/mp4"


@register_backend("gemini")
def _factory(name: str, options: BackendOptions) -> GeminiBackend:
    return GeminiBackend(name, options)
