"""``gemini:MODEL`` — Google Gemini through the google-genai SDK (``pip install 'mtvbench[gemini]'``).

Keys: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``, sent only to Google's endpoint (or to
``GOOGLE_GEMINI_BASE_URL``); a variable named by ``api_key_env`` goes to ``base_url`` too
(:mod:`mtvbench.models.endpoints`). Vertex AI: set ``GOOGLE_GENAI_USE_VERTEXAI=true`` with
``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` (and application default credentials);
the SDK reads them.

Two input modes (``options.options["input"]``):

- ``frames`` (default): the run's sampled frames (the paper's 128) go inline as JPEG parts,
  followed by the prompt.
- ``upload``: each video file is uploaded once per run through the Files API, the backend
  waits until the file is ``ACTIVE`` and reuses the handle for every turn of every dialogue of
  that video; the files are deleted in :meth:`GeminiBackend.aclose` (the API also expires them
  after 48 hours). Gemini then samples the video itself (``video_fps`` sets its rate). The
  Developer API only: Vertex AI has no Files API.

**Context caching** (``options["context_cache"]: true``, with ``input: frames``): the frames of a video (and
the system prompt) go once into an explicit cache (the caches API: ``cachedContents``, ``ttl`` from
``context_cache_ttl_s``, 1800 s by default) made by the first turn that needs it and shared by every
turn of that video; each turn then sends only its text with ``cached_content`` naming the cache (the frames
and the text become two user turns: a different message shape from inline frames). The cache is deleted
when the video ends (:meth:`GeminiBackend.end_video`, which the dispatcher calls when a video's last
turn is recorded) and, for any left, in :meth:`GeminiBackend.aclose` (which a cancelled run, SIGINT or
SIGTERM, reaches too). Nothing made is forgotten:

- every cache is recorded (:attr:`~mtvbench.models.backend.BackendBase.resources`: the run store) before it is
  asked for, under a display name of its own, and again when it is made and when it is deleted;
- a creation still in flight when its video ends (or the run closes) is waited for, at most
  ``context_cache_delete_s`` (30 s); one never answered (the client's timeout, the wait given up) may still
  have been made: it is looked for among the caches the server lists, by its display name, and deleted;
- a delete is retried (5xx, 429, no answer) until ``context_cache_delete_s`` has passed; 403/404 means gone.
  A cache that could not be deleted keeps its record with the error and its expiry: the run names it (its
  summary, ``scores.json``), and the next run in the same directory deletes it (:meth:`GeminiBackend.delete_left`),
  as it does the caches of a run killed with ``kill -9``, which only their TTL ends otherwise.

A cache the API refuses to make (400: e.g. fewer tokens than the model's minimum for explicit caching) sends
that video's frames inline. A cache gone before its video ended (403/404: expired, deleted) is made again once:
the first turn told so takes it out of the table and every turn told so retries, so the next of them makes
a single new cache that the others share; a turn told late about the old cache leaves the new one alone.
The tokens of making a cache count as uncached prompt tokens of the turn that made it;
``cached_content_token_count`` of each reply is its cached tokens (:class:`~mtvbench.records.Usage`).
The hours of cache storage the API bills are not counted. Requests whose text goes before the frames
(``text_first``) are sent inline.

Other backend options: ``thinking_budget`` (tokens; 0 turns thinking off where the model
allows it, -1 dynamic), ``include_thoughts`` (bool), ``media_resolution`` (``low`` / ``medium`` /
``high``), ``safety`` (``default`` or ``off``: BLOCK_NONE for the adjustable categories),
``api_version``, ``upload_poll_s``, ``upload_timeout_s`` (the deadline of one upload, polling
included).

Outcomes: a prompt blocked by safety (``prompt_feedback.block_reason``) or a candidate stopped
for safety / prohibited content / recitation is ``blocked``; a candidate without text that
stopped at ``MAX_TOKENS`` is ``empty`` (the model spent its tokens). Every call goes through
:class:`~mtvbench.models.resilience.Resilient`: no candidate, a candidate without text for any
other reason, a reply that is not JSON, HTTP 429 (``RESOURCE_EXHAUSTED``, the server's
``RetryInfo.retryDelay`` honoured), 408 and 5xx are retried and recorded as ``error`` when
retries or the deadline run out; 4xx are not retried. None of these raise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from mtvbench.errors import ConfigError, MissingExtraError, MtvbenchError
from mtvbench.media.frames import VideoFrames
from mtvbench.models.backend import BackendBase, split_thinking
from mtvbench.models.endpoints import gemini_endpoint, use_vertex
from mtvbench.models.resilience import (
    RETRYABLE_STATUS,
    CallFailed,
    CallFailure,
    FatalError,
    Resilient,
    RetryableError,
    backoff_s,
    capped_http_client,
    causes,
    http_error_message,
    parse_retry_after,
    quote_server_text,
)
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult, ProviderResource, Usage
from mtvbench.util.timecodes import frame_label

T = TypeVar("T")
#: a video's context cache: (video, frame settings key, system prompt, frame times before the frames)
_CacheKey = tuple[str, str, str, bool]

try:
    import httpx
    import pydantic
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    genai = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = _e
else:
    _IMPORT_ERROR = None

BLOCK_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT"}
SAFETY_CATEGORIES = ("HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                     "HARM_CATEGORY_DANGEROUS_CONTENT")


def _require_sdk() -> None:
    if _IMPORT_ERROR is not None:
        raise MissingExtraError("the gemini: backend", "gemini", "google-genai") from _IMPORT_ERROR


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


def classify_error(error: BaseException, url: str = "the Gemini API") -> CallFailure | None:
    """An SDK error -> RetryableError / FatalError (None: not an SDK error; transport errors are
    classified by the wrapper)."""
    if genai is not None and isinstance(error, genai_errors.APIError):
        code = int(error.code or 0)
        request = getattr(getattr(error, "response", None), "request", None)
        where = str(request.url) if request is not None else url
        msg = http_error_message(code, where, json.dumps(error.details) if error.details else error.message)
        if code in RETRYABLE_STATUS or code >= 500:
            return RetryableError(msg, retry_after=retry_delay(error))
        return FatalError(msg)
    decode = next((e for e in causes(error) if isinstance(e, json.JSONDecodeError)), None)
    if decode is not None:  # the SDK parses the reply body (raw, or as UnknownApiResponseError)
        return RetryableError(f"malformed reply from {url}: not JSON: {quote_server_text(decode.doc)}")
    if genai is not None and isinstance(error, pydantic.ValidationError):
        return RetryableError(f"malformed reply from {url}: {error.error_count()} fields do not fit the API schema")
    return None


def result_from_response(resp: Any, url: str = "the Gemini API") -> GenerationResult:
    """A generateContent response -> ok / blocked / empty (final), or RetryableError when the
    reply holds no answer for no stated reason."""
    usage = Usage()
    um = getattr(resp, "usage_metadata", None)
    if um is not None:
        prompt = um.prompt_token_count or 0
        completion = (um.candidates_token_count or 0) + (um.thoughts_token_count or 0)
        # cached_content_token_count: part of the prompt count; JSON omits a zero count, so absent is 0
        usage = Usage(prompt_tokens=prompt, completion_tokens=completion,
                      total_tokens=um.total_token_count or prompt + completion,
                      cached_tokens=min(max(um.cached_content_token_count or 0, 0), prompt))
    feedback = getattr(resp, "prompt_feedback", None)
    if feedback is not None and feedback.block_reason:
        reason = _enum_name(feedback.block_reason)
        return GenerationResult(outcome="blocked", error=f"prompt blocked: {reason}", usage=usage)
    if not resp.candidates:
        raise RetryableError(f"malformed reply from {url}: no candidates and no block reason")
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
    common: dict[str, Any] = {"raw_text": raw, "reasoning": reasoning, "usage": usage}
    if finish in BLOCK_FINISH:
        return GenerationResult(text=text, outcome="blocked", error=f"finish_reason {finish}", **common)
    if not raw.strip():
        if finish == "MAX_TOKENS":  # the model spent its tokens (thinking, often): its own failure
            return GenerationResult(outcome="empty", error="no text: finish_reason MAX_TOKENS", **common)
        raise RetryableError(f"malformed reply from {url}: a candidate without text (finish_reason {finish or 'none'})")
    if not text:
        return GenerationResult(outcome="empty", error=f"no answer after </think> (finish_reason {finish})", **common)
    return GenerationResult(text=text, outcome="ok", **common)


def _enum_name(value: Any) -> str:
    return str(getattr(value, "value", value))


#: what a context cache is called in the run store and in every message
CACHE_KIND = "Gemini context cache"


@dataclass
class FrameCache:
    """One explicit context cache of a video's frames (``cachedContents/...``)."""

    name: str
    #: the tokens the API counted when it made the cache (charged once, to the first turn that uses it)
    tokens: int
    #: its record (the run store's row: made, expires, deleted)
    record: ProviderResource
    charged: bool = False


def _epoch(value: Any) -> float | None:
    """An ``expire_time`` of the API (a datetime, or RFC 3339 text) as seconds since the epoch."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def shared(table: dict[Any, asyncio.Task[T]], key: Any, make: Callable[[], Awaitable[T]]) -> Awaitable[T]:
    """The single task that makes ``key``'s value (started by the first caller, awaited by every caller); a task
    that failed or was cancelled is started again by the next caller. A caller that is cancelled does not
    cancel the task (:func:`asyncio.shield`)."""
    task = table.get(key)
    if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
        task = asyncio.ensure_future(make())
        # its failure is read here too: every caller that was waiting may have been cancelled (its own timeout)
        # before it failed, and then nobody would, and asyncio would print it with a traceback
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        table[key] = task
    return asyncio.shield(task)



def frame_parts(frames: VideoFrames, timestamps: bool) -> list[Any]:
    """The frames as inline JPEG parts (sent with each turn, or held by the video's context cache), each after a
    text part with its time under ``--frame-timestamps on``."""
    parts: list[Any] = []
    for t, j in zip(frames.timestamps, frames.jpegs):
        if timestamps:
            parts.append(types.Part.from_text(text=frame_label(t)))
        parts.append(types.Part.from_bytes(data=j, mime_type="image/jpeg"))
    return parts

class GeminiBackend(BackendBase):
    """``gemini:MODEL``: Google Gemini through the google-genai SDK."""

    #: True in both modes: upload mode reads the video path from the frames record
    needs_frames = True
    #: Gemini's implicit caching (and the explicit context cache, made by a video's first turn)
    prefix_cache = True

    def __init__(self, model: str, options: BackendOptions):
        _require_sdk()
        if not model:
            raise ConfigError("gemini: needs a model name, e.g. gemini:gemini-2.5-pro")
        self.name = f"gemini:{model}"
        self.model = model
        self.options = options
        own = options.options
        self.input_mode = str(own.get("input", "frames"))
        if self.input_mode not in ("frames", "upload"):
            raise ConfigError(f"gemini: input must be 'frames' or 'upload', got {self.input_mode!r}")
        self.context_cache = bool(own.get("context_cache", False))
        if self.context_cache and self.input_mode != "frames":
            raise ConfigError("gemini: context_cache caches the frames sent inline: it needs input=frames")
        self.cache_ttl_s = float(own.get("context_cache_ttl_s", 1800.0))
        if not self.cache_ttl_s > 0:
            raise ConfigError(f"gemini: context_cache_ttl_s must be > 0 seconds, got {self.cache_ttl_s:g}")
        self.cache_delete_s = float(own.get("context_cache_delete_s", 30.0))
        if not self.cache_delete_s > 0:
            raise ConfigError(f"gemini: context_cache_delete_s must be > 0 seconds, got {self.cache_delete_s:g}")
        self.poll_s = float(own.get("upload_poll_s", 2.0))
        self.upload_timeout_s = float(own.get("upload_timeout_s", 600.0))
        self.http = capped_http_client(httpx.AsyncClient, options)
        http = types.HttpOptions(base_url=options.base_url, timeout=int(options.timeout_s * 1000),
                                 api_version=own.get("api_version"), httpx_async_client=self.http)
        self.vertex = use_vertex() and not options.api_key_env
        if self.vertex:
            if self.input_mode == "upload":
                raise ConfigError("gemini: input=upload needs the Gemini Developer API (Vertex AI has no Files API)")
            self.url = options.base_url or "Vertex AI"
            self.client = genai.Client(http_options=http)
        else:
            endpoint = gemini_endpoint(options)
            self.url = endpoint.url
            http.base_url = endpoint.url
            self.client = genai.Client(api_key=endpoint.key, http_options=http)
        self.calls = Resilient(self.name, self.url, options, lambda e: classify_error(e, self.url))
        self.breaker = self.calls.breaker
        self._uploads: dict[Path, asyncio.Task[Any]] = {}
        #: (video, frame settings, system prompt) -> the task that made its cache (None: frames go inline)
        self._caches: dict[_CacheKey, asyncio.Task[FrameCache | None]] = {}
        #: every cache asked for and not known to be gone, by token, with the key of its video: deleted when its
        #: video ends or in aclose, whether it is the video's current cache, one that was replaced, or one whose
        #: creation was never answered (found on the server by its display name)
        self._made: dict[str, tuple[_CacheKey, ProviderResource]] = {}
        #: names of the files this backend uploaded (deleted in aclose)
        self.uploaded: list[str] = []

    # -------------------------------------------------------------------- request building
    def _config(self, request: GenerationRequest) -> Any:
        own = self.options.options
        g = self.options.settings_for(request.generation)
        cfg: dict[str, Any] = {}
        if g.system:
            cfg["system_instruction"] = g.system
        for key in ("temperature", "top_p", "top_k"):
            if getattr(g, key) is not None:
                cfg[key] = getattr(g, key)
        if g.max_tokens:
            cfg["max_output_tokens"] = g.max_tokens
        if own.get("thinking_budget") is not None or own.get("include_thoughts"):
            cfg["thinking_config"] = types.ThinkingConfig(
                thinking_budget=own.get("thinking_budget"), include_thoughts=bool(own.get("include_thoughts")))
        if own.get("media_resolution"):
            cfg["media_resolution"] = f"MEDIA_RESOLUTION_{str(own['media_resolution']).upper()}"
        if own.get("safety") == "off":
            cfg["safety_settings"] = [types.SafetySetting(category=c, threshold="BLOCK_NONE")
                                      for c in SAFETY_CATEGORIES]
        return types.GenerateContentConfig(**cfg)

    async def _parts(self, request: GenerationRequest, video: Path | None) -> list[Any]:
        parts: list[Any] = []
        if video is not None:
            f = await self.file_for(video)
            part = types.Part.from_uri(file_uri=f.uri, mime_type=f.mime_type or _mime(video))
            if self.options.options.get("video_fps"):
                part.video_metadata = types.VideoMetadata(fps=float(self.options.options["video_fps"]))
            parts.append(part)
        elif request.frames is not None:
            parts += frame_parts(request.frames, request.frame_timestamps)
        parts.append(types.Part.from_text(text=request.prompt))
        return parts

    # -------------------------------------------------------------------- Files API
    async def file_for(self, path: Path) -> Any:
        """The uploaded, ACTIVE file of ``path``; uploaded once per backend, shared by all turns."""
        key = path.resolve()
        return await shared(self._uploads, key, lambda: self._upload(key))

    async def _upload(self, path: Path) -> Any:
        """Upload through the shared call path (its own deadline: ``upload_timeout_s``), then poll
        until the file is ACTIVE. Raises :class:`CallFailed`."""
        deadline = time.monotonic() + self.upload_timeout_s
        f, _ = await self.calls.call(lambda: self.client.aio.files.upload(
            file=str(path), config=types.UploadFileConfig(mime_type=_mime(path), display_name=f"mtvbench-{path.name}")),
            timeout_s=self.upload_timeout_s)
        self.uploaded.append(f.name)
        while _enum_name(f.state) == "PROCESSING":
            left = deadline - time.monotonic()
            if left <= 0:
                raise CallFailed(f"gemini: {path.name} still PROCESSING at {self.url} after "
                                 f"upload_timeout_s={self.upload_timeout_s:g}s", 1)
            await asyncio.sleep(min(self.poll_s, left))
            f, _ = await self.calls.call(lambda name=f.name: self.client.aio.files.get(name=name),
                                         timeout_s=max(left, 1.0))
        if _enum_name(f.state) != "ACTIVE":
            err = getattr(getattr(f, "error", None), "message", None)
            raise CallFailed(f"gemini: upload of {path.name} to {self.url} ended in state {_enum_name(f.state)}: "
                             f"{quote_server_text(err)}", 1)
        return f

    # -------------------------------------------------------------------- context caching
    @staticmethod
    def _cache_key(frames: VideoFrames, system: str | None, timestamps: bool = False) -> _CacheKey:
        return str(frames.video), frames.settings.key(), str(system or ""), timestamps

    def _record(self, rec: ProviderResource) -> None:
        """Write ``rec`` to the run's record of provider resources (the run store), when there is one. A store
        that cannot be written stops the run at its next result; the cache is still deleted or named here."""
        if self.resources is not None:
            with contextlib.suppress(MtvbenchError):
                self.resources.record_resource(rec)

    def _gone(self, rec: ProviderResource) -> None:
        """``rec`` is no longer on the server (deleted, expired, or never made)."""
        self._made.pop(rec.token, None)
        if rec.deleted is None:
            rec.deleted, rec.error = time.time(), None
            self._record(rec)

    async def _make_cache(self, request: GenerationRequest, system: str | None,
                          key: _CacheKey) -> FrameCache | None:
        """One explicit cache of the request's frames and the system prompt; None when the API refuses it
        (400: the video's frames then go inline). Other SDK errors reach the turn's retry loop.

        The cache is recorded before it is asked for, under a display name of its own: a creation that is
        never answered (the client's timeout, a signal) may still have made it, and the display name finds
        it on the server (:meth:`_find_unanswered`)."""
        assert request.frames is not None
        token = f"mtvbench-{uuid.uuid4().hex[:12]}-{request.frames.video.name}"[:128]
        now = time.time()
        rec = ProviderResource(kind=CACHE_KIND, token=token, backend=self.name, url=self.url, created=now,
                               expires=now + self.cache_ttl_s + self.options.timeout_s)
        self._made[token] = (key, rec)
        self._record(rec)
        content = types.Content(role="user", parts=frame_parts(request.frames, request.frame_timestamps))
        config = types.CreateCachedContentConfig(contents=[content], system_instruction=system or None,
                                                 ttl=f"{self.cache_ttl_s:g}s", display_name=token)
        try:
            made = await self.client.aio.caches.create(model=self.model, config=config)
        except genai_errors.APIError as e:  # answered: nothing was made
            self._gone(rec)
            if int(e.code or 0) == 400:
                return None
            raise
        # anything else (no answer in time, the connection lost, cancelled): it may have been made; it stays
        # in _made under its display name
        rec.name = str(made.name)
        rec.expires = _epoch(getattr(made, "expire_time", None)) or time.time() + self.cache_ttl_s
        self._record(rec)
        um = getattr(made, "usage_metadata", None)
        return FrameCache(name=rec.name, tokens=int(getattr(um, "total_token_count", None) or 0), record=rec)

    async def end_video(self, frames: VideoFrames) -> None:
        """The video's turns are done: delete its caches now (those it replaced too)."""
        key = (str(frames.video), frames.settings.key())
        await self._drop_caches(lambda k: k[:2] == key)

    async def _drop_caches(self, which: Callable[[_CacheKey], bool]) -> None:
        """Delete every cache of the keys ``which`` picks. A creation still in flight is waited for (at most
        ``context_cache_delete_s``), then given up and looked for on the server; every delete is retried until
        its deadline. What cannot be deleted keeps its record (its error and expiry), named by the run."""
        pending = []
        for key in [k for k in self._caches if which(k)]:
            task = self._caches.pop(key)
            if not task.done():
                pending.append(task)
        if pending:
            _, late = await asyncio.wait(pending, timeout=self.cache_delete_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self._settle([rec for key, rec in list(self._made.values()) if which(key)])

    async def _settle(self, recs: Sequence[ProviderResource]) -> None:
        """Find the unanswered ones of ``recs`` on the server, then delete every one that is there, at once."""
        unanswered = [r for r in recs if r.name is None]
        if unanswered:
            await self._find_unanswered(unanswered)
        await asyncio.gather(*(self._delete(r) for r in recs if r.name is not None and r.deleted is None))

    async def _find_unanswered(self, recs: Sequence[ProviderResource]) -> None:
        """Look for the caches whose creation was never answered among those the server lists (by display
        name): found, they get their name (and are deleted next); not there, they were never made."""
        want = {r.token: r for r in recs}

        async def look() -> None:
            pager = await self.client.aio.caches.list(config=types.ListCachedContentsConfig(page_size=100))
            async for c in pager:
                rec = want.get(str(c.display_name or ""))
                if rec is not None:
                    rec.name = str(c.name)
                    rec.expires = _epoch(getattr(c, "expire_time", None)) or rec.expires
                    self._record(rec)

        try:
            await asyncio.wait_for(look(), self.cache_delete_s)
        except (asyncio.TimeoutError, genai_errors.APIError, httpx.HTTPError, OSError, pydantic.ValidationError) as e:
            for rec in recs:  # not known: the record stays (named by the run; the next run looks again)
                rec.error = f"could not list the caches to find it: {self._why(e)}"
                self._record(rec)
            return
        for rec in recs:
            if rec.name is None:
                self._gone(rec)

    def _why(self, e: BaseException) -> str:
        if isinstance(e, asyncio.TimeoutError):
            return f"no answer within context_cache_delete_s={self.cache_delete_s:g}s"
        failure = classify_error(e, self.url)
        return failure.message if failure is not None else f"{type(e).__name__}: {quote_server_text(str(e))}"

    async def _delete(self, rec: ProviderResource) -> bool:
        """Delete one cache, retried (5xx, 429, no answer) until ``context_cache_delete_s`` has passed; a cache
        the server no longer has (403/404) is gone. False (the error recorded) when it could not be deleted."""
        assert rec.name is not None
        end = time.monotonic() + self.cache_delete_s
        attempt = 0
        while True:
            attempt += 1
            left = end - time.monotonic()
            try:
                await asyncio.wait_for(self.client.aio.caches.delete(name=rec.name), max(left, 0.001))
            except genai_errors.APIError as e:
                code = int(e.code or 0)
                if code in (403, 404):
                    break
                rec.error = self._why(e)
                if not (code in RETRYABLE_STATUS or code >= 500):
                    return self._not_deleted(rec)
            except (asyncio.TimeoutError, httpx.HTTPError, OSError) as e:
                rec.error = self._why(e)
            else:
                break
            wait = backoff_s(attempt, None, self.options.retry_base_s, self.options.retry_cap_s)
            if time.monotonic() + wait >= end:
                return self._not_deleted(rec)
            await asyncio.sleep(wait)
        self._gone(rec)
        return True

    def _not_deleted(self, rec: ProviderResource) -> bool:
        if "context_cache_delete_s" not in str(rec.error):
            rec.error = f"{rec.error}; retried for context_cache_delete_s={self.cache_delete_s:g}s"
        self._record(rec)
        return False

    async def delete_left(self, left: Sequence[ProviderResource]) -> None:
        """Delete the caches an earlier run of this run directory left (recorded in its store) that this
        backend can reach (the same endpoint); each outcome is recorded."""
        await self._settle([r for r in left if r.kind == CACHE_KIND and r.url == self.url])

    def _replaced(self, key: _CacheKey, made: FrameCache) -> None:
        """The server no longer has ``made`` (403/404 before its video ended: expired, deleted): the next turn
        makes the video's cache again, once, shared by the turns that found it gone. Only the entry that still
        holds ``made`` is taken away; a turn told late about the old cache leaves the new one alone."""
        task = self._caches.get(key)
        if task is not None and task.done() and not task.cancelled() and task.exception() is None \
                and task.result() is made:
            del self._caches[key]
        self._gone(made.record)

    async def _cached_call(self, request: GenerationRequest, config: Any) -> GenerationResult:
        """One attempt with the video's frames from its cache (made by the first turn that needs it)."""
        system = config.system_instruction
        key = self._cache_key(request.frames, system, request.frame_timestamps)  # type: ignore[arg-type]
        made = await shared(self._caches, key, lambda: self._make_cache(request, system, key))
        if made is None:  # the API would not cache this video's frames: inline
            return await self._inline_call(request, config)
        cfg = config.model_copy(update={"cached_content": made.name, "system_instruction": None})
        contents = [types.Content(role="user", parts=[types.Part.from_text(text=request.prompt)])]
        try:
            resp = await self.client.aio.models.generate_content(model=self.model, contents=contents, config=cfg)
        except genai_errors.APIError as e:
            if int(e.code or 0) in (403, 404):
                self._replaced(key, made)
                raise RetryableError(f"cached content {made.name} at {self.url} is gone ({e.code}): "
                                     "making it again") from e
            raise
        res = result_from_response(resp, self.url)
        if not made.charged:  # the turn that made the cache pays for its tokens, once
            made.charged = True
            usage = res.usage.model_copy(update={"prompt_tokens": res.usage.prompt_tokens + made.tokens,
                                                 "total_tokens": res.usage.total_tokens + made.tokens})
            res = res.model_copy(update={"usage": usage})
        return res

    async def _inline_call(self, request: GenerationRequest, config: Any, video: Path | None = None
                           ) -> GenerationResult:
        parts = await self._parts(request, video)
        contents = [types.Content(role="user", parts=parts)]
        resp = await self.client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        return result_from_response(resp, self.url)

    # -------------------------------------------------------------------- calls
    async def generate(self, request: GenerationRequest) -> GenerationResult:
        video: Path | None = None
        if self.input_mode == "upload":
            path = request.options.get("video") or (request.frames.video if request.frames is not None else None)
            if path is None:
                return GenerationResult(outcome="error", attempts=0, error=(
                    "gemini: input=upload needs the video path (frames record or request.options['video'])"))
            video = Path(path)
            try:
                await self.file_for(video)
            except CallFailed as e:  # the shared upload failed; this turn is asked again on the next run
                return GenerationResult(outcome="error", error=str(e), attempts=e.attempts)
        config = self._config(request)
        if self.context_cache and request.frames is not None and len(request.frames) and not request.text_first:
            return await self.calls.generate(lambda: self._cached_call(request, config))
        return await self.calls.generate(lambda: self._inline_call(request, config, video))

    async def aclose(self) -> None:
        for task in self._uploads.values():
            if not task.done():
                task.cancel()
        await self._drop_caches(lambda k: True)
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
        await self.http.aclose()  # ours, whether or not the SDK closes an injected client


def _mime(path: Path) -> str:
    return mimetypes.guess_type(str(path))[0] or "video/mp4"

