"""``openai:MODEL`` — any OpenAI-compatible chat-completions server.

This covers OpenAI itself, vLLM and SGLang servers, Doubao (Volcengine Ark), DashScope and
others: point ``--model-base-url`` (or ``OPENAI_BASE_URL``) at the server. Frames go as
base64 JPEG ``image_url`` parts followed by the text prompt (``--model-option video_part=true``
sends them as one video part instead, for vLLM servers). Which key goes to which URL is decided
by :mod:`mtvbench.models.endpoints`; keys are never stored.

Every call goes through :class:`~mtvbench.models.resilience.Resilient`; this module only
classifies. A call is one POST with httpx (the body written once, the reply read through the size cap):
no SDK layer lies between an answer and the next request, where it cost more CPU than the HTTP client.
A 200 reply that is not JSON, has no choices, or has no content (finish_reason ``stop`` or
missing) is retryable; no content with finish_reason ``length`` is a final ``empty`` (the model spent
its tokens, e.g. thinking); ``content_filter`` is a final ``blocked``. A request with ``exact_reply``
(the ``authors`` judge) gets a null or empty content back as a final ``empty`` at once: its caller counts
it as one ask, as eval.py does.
A 400/422 that names request fields the server does not accept (``transformers serve``:
"Unexpected fields in the request: {'top_k', ...}") says which values were sent, which a preset
gave, and the flag or YAML key that drops each; a 5xx answer to a video part says that the server
may not accept video parts and how to send the frames as images.
"""

from __future__ import annotations

import base64
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from mtvbench._version import __version__
from mtvbench.errors import ConfigError
from mtvbench.media.frames import VideoFrames
from mtvbench.models.backend import BackendBase, split_thinking
from mtvbench.models.endpoints import openai_endpoint
from mtvbench.models.resilience import (
    RETRYABLE_STATUS,
    ApiClient,
    CallFailure,
    FatalError,
    Resilient,
    RetryableError,
    capped_http_client,
    http_error_message,
    model_name_refused,
    parse_retry_after,
    quote_server_text,
    rejected_fields,
    transport_failure,
)
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationConfig, GenerationRequest, GenerationResult, Usage
from mtvbench.util.timecodes import frame_label

#: the connection pool of one client of :class:`ClientPerCall`: one call at a time, its connection kept alive
_ONE_CONNECTION = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class ClientPerCall:
    """An HTTP client per call in flight, each with one kept-alive connection, given back when the call ends
    (the most recently given back is taken first: its connection is the likeliest to be still open). httpx's
    connection pool looks at every connection of the pool and every request waiting for one each time a request
    starts or ends; one client for every call made that most of the HTTP layer's CPU at 16-64 calls in flight.
    The clients share one TLS context (made on the first call)."""

    def __init__(self, make: Callable[[Any], httpx.AsyncClient]):
        self._make = make
        self._idle: list[httpx.AsyncClient] = []
        self._made: list[httpx.AsyncClient] = []
        self._verify: Any = None

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._idle:
            client = self._idle.pop()
        else:
            if self._verify is None:
                self._verify = httpx.create_ssl_context()
            client = self._make(self._verify)
            self._made.append(client)
        try:
            yield client
        finally:
            self._idle.append(client)

    async def aclose(self) -> None:
        made, self._made, self._idle = self._made, [], []
        for client in made:
            await client.aclose()
#: stands for the frames in a request until the body is written: a NUL (escaped in JSON) and a
#: random id, so no text of a prompt can be it
_FRAMES = f"\x00mtvbench-frames-{uuid.uuid4().hex}"
_FRAMES_JSON = json.dumps(_FRAMES)


def _frame_parts(frames: VideoFrames, video_part: bool, timestamps: bool = False) -> list[dict[str, Any]]:
    if video_part:
        return [{"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + ",".join(frames.b64())}}]
    parts: list[dict[str, Any]] = []
    for t, url in zip(frames.timestamps, frames.data_urls()):
        if timestamps:  # --frame-timestamps on: the frame's time as a text part before it
            parts.append({"type": "text", "text": frame_label(t)})
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def frame_parts_json(frames: VideoFrames, video_part: bool = False, timestamps: bool = False) -> str:
    """The JSON of a video's frame parts (without brackets), written once per video and reused
    by every turn: at 128 frames it is most of a request's bytes and of its encoding time. ``timestamps``: each
    image part after a text part with its time (``--frame-timestamps on``; a video part carries its times in
    :func:`request_body` instead)."""
    if timestamps and not video_part:
        memo = frames.__dict__.get("_openai_timed_parts_json")
        if memo is None:
            memo = frames.__dict__["_openai_timed_parts_json"] = json.dumps(_frame_parts(frames, False, True))[1:-1]
        return memo
    key = "_openai_video_part_json" if video_part else "_openai_image_parts_json"
    memo = frames.__dict__.get(key)
    if memo is None:
        b64 = [base64.b64encode(j).decode("ascii") for j in frames.jpegs]  # not kept: the JSON is
        if video_part:
            memo = json.dumps({"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + ",".join(b64)}})
        else:
            prefix = f"data:{frames.settings.media_type};base64,"
            memo = ", ".join('{"type": "image_url", "image_url": {"url": "' + prefix + b + '"}}' for b in b64)
        frames.__dict__[key] = memo
    return memo


def video_part_times(frames: VideoFrames, given: Any = None) -> dict[str, Any]:
    """vLLM's ``media_io_kwargs`` request field (its chat-completions extra parameter, merged with the server's
    ``--media-io-kwargs``) with the times of a ``data:video/jpeg`` part's frames: its JPEG-sequence loader reads
    ``fps``, ``frames_indices``, ``total_num_frames`` and ``duration`` from the ``video`` entry into the video's
    metadata, which the Qwen-VL processors turn into each frame's time. Other entries the options gave are kept;
    these four are the frames'."""
    out = dict(given) if isinstance(given, dict) else {}
    video = out.get("video")
    out["video"] = {**(video if isinstance(video, dict) else {}), **frames.time_metadata()}
    return out


def request_body(params: dict[str, Any], frames: VideoFrames | None, video_part: bool = False,
                 timestamps: bool = False) -> bytes:
    """The JSON body of a chat-completions request whose messages hold the frames placeholder:
    ``extra_body`` merged at the top level (as the SDK does), the frames' JSON spliced in. ``timestamps`` with
    ``video_part``: the frames' times go as vLLM's request field ``media_io_kwargs`` (:func:`video_part_times`)."""
    body = {k: v for k, v in params.items() if k != "extra_body"}
    body.update(params.get("extra_body") or {})
    if timestamps and video_part and frames is not None and len(frames):
        body["media_io_kwargs"] = video_part_times(frames, body.get("media_io_kwargs"))
    text = json.dumps(body)
    if frames is not None:
        parts = frame_parts_json(frames, video_part, timestamps)
        if parts:
            text = text.replace(_FRAMES_JSON, parts, 1)
        else:  # no frames: the placeholder goes with its separator (after or before the text part)
            text = text.replace(_FRAMES_JSON + ", ", "", 1).replace(", " + _FRAMES_JSON, "", 1)
    return text.encode()


def build_messages(request: GenerationRequest, system: str | None = None, video_part: bool = False,
                   placeholder: bool = False) -> list[dict[str, Any]]:
    """Frames as JPEG image parts (or, with ``video_part``, one ``video_url`` part holding the
    comma-joined base64 JPEG frames as ``data:video/jpeg``, a form only vLLM's OpenAI server reads
    as one video; recent vLLM versions keep at most ``--media-io-kwargs '{"video": {"num_frames": N}}'``
    frames of it, 32 by default, so start the server with ``num_frames`` -1), then the prompt;
    ``request.generation.system`` or ``system`` first. With ``placeholder`` the frames are one placeholder
    string that :func:`request_body` replaces with their JSON. ``request.text_first``: the text part
    first, content always a list (the authors' message shape); ``request.chat_history``: earlier turns as
    user/assistant messages before the last one."""
    content: list[Any] = []
    if request.frames is not None:
        content += [_FRAMES] if placeholder else _frame_parts(request.frames, video_part, request.frame_timestamps)
    text = {"type": "text", "text": request.prompt}
    if request.text_first:
        content.insert(0, text)
    else:
        content.append(text)
    messages: list[dict[str, Any]] = []
    system = request.generation.system or system
    if system:
        messages.append({"role": "system", "content": system})
    for user, assistant in request.chat_history or []:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    as_parts = request.frames is not None or request.text_first
    messages.append({"role": "user", "content": content if as_parts else request.prompt})
    return messages


def _count(v: Any) -> int | None:
    """A server's own number: anything but a whole number >= 0 is not counted (costs never go negative)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _usage(data: Any) -> Usage:
    """``usage`` of a reply; ``prompt_tokens_details.cached_tokens`` where the server reports it (OpenAI
    always; vLLM's server with ``--enable-prompt-tokens-details``), else the cached tokens are not recorded."""
    if not isinstance(data, dict):
        return Usage()
    counts = {k: _count(data.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    details = data.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cached is not None and counts["prompt_tokens"] is not None:
        cached = min(cached, counts["prompt_tokens"])
    return Usage(cached_tokens=cached, **{k: v for k, v in counts.items() if v is not None})


def _content_text(content: Any) -> str | None:
    """``message.content``: a string, or a list of parts (some servers), or null."""
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return content if isinstance(content, str) else None


def parse_completion(body: bytes, url: str, exact_reply: bool = False) -> GenerationResult:
    """A chat-completions reply body -> a final result, or :class:`RetryableError` when malformed.
    ``exact_reply``: a null or empty content is a final ``empty`` (the caller's check reads it), not retried."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise RetryableError(f"malformed reply from {url}: not JSON: {quote_server_text(body)}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RetryableError(f"malformed reply from {url}: no choices: {quote_server_text(body)}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    finish = choice.get("finish_reason")
    raw = _content_text(message.get("content"))
    server_reasoning = message.get("reasoning_content") or message.get("reasoning")
    server_reasoning = server_reasoning if isinstance(server_reasoning, str) and server_reasoning else None
    usage = _usage(data.get("usage"))
    text, reasoning = split_thinking(raw or "")
    reasoning = reasoning or server_reasoning
    common: dict[str, Any] = {"text": text, "raw_text": raw or "", "reasoning": reasoning, "usage": usage}
    if finish == "content_filter":
        return GenerationResult(outcome="blocked", error="finish_reason content_filter", **common)
    if not (raw or "").strip():
        if finish == "length":  # the model spent every token (a thinking model, often): its own failure
            return GenerationResult(outcome="empty", error="no content: finish_reason length (max_tokens spent)",
                                    **common)
        content = message.get("content")
        what = "null" if content is None else "empty" if raw is not None else f"not text ({type(content).__name__})"
        if exact_reply:
            return GenerationResult(outcome="empty", error=f"choices[0].message.content is {what} "
                                    f"(finish_reason {finish or 'missing'})", **common)
        raise RetryableError(f"malformed reply from {url}: choices[0].message.content is {what} "
                             f"(finish_reason {finish or 'missing'})")
    if not text and not exact_reply:
        return GenerationResult(outcome="empty", error=f"no answer after </think> (finish_reason {finish})", **common)
    return GenerationResult(outcome="ok", **common)


def openai_generation_params(g: GenerationConfig, options: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions parameters of generation settings ``g`` (see :meth:`OpenAIBackend._params`)."""
    params: dict[str, Any] = {}
    if g.max_tokens:
        params["max_tokens"] = g.max_tokens
    for key in ("temperature", "top_p"):
        if getattr(g, key) is not None:
            params[key] = getattr(g, key)
    if g.do_sample is False and "temperature" not in params:
        params["temperature"] = 0.0
    for key in ("presence_penalty", "seed"):  # OpenAI API parameters
        if getattr(g, key) is not None:
            params[key] = getattr(g, key)
    body = {key: getattr(g, key) for key in ("top_k", "repetition_penalty", "min_p") if getattr(g, key) is not None}
    body.update(options.get("extra_body") or {})
    body = {k: v for k, v in body.items() if v is not None}  # extra_body {KEY: null} drops a preset's KEY
    if body:
        params["extra_body"] = body
    return params


def sent_fields(params: dict[str, Any]) -> dict[str, Any]:
    """The generation fields of a request's parameters as the server sees them (``extra_body`` merged in)."""
    flat = {k: v for k, v in params.items() if k not in ("model", "messages", "extra_body")}
    flat.update(params.get("extra_body") or {})
    return flat


class OpenAIBackend(BackendBase):
    """``openai:MODEL``: any OpenAI-compatible chat-completions server."""

    #: OpenAI's automatic prompt caching, vLLM's and SGLang's prefix caching
    prefix_cache = True

    def __init__(self, model: str, options: BackendOptions):
        if not model:
            raise ConfigError("openai: needs a model name, e.g. openai:gpt-4o")
        self.name = f"openai:{model}"
        self.model = model
        self.options = options
        self.endpoint = openai_endpoint(options)
        self.url = self.endpoint.url.rstrip("/") + "/chat/completions"
        #: parsed once (httpx parses a URL given as text again on every request)
        self._url = httpx.URL(self.url)
        self.video_part = bool(options.options.get("video_part", False))
        #: the generation fields every request sends (a 400/422 may name some as not accepted)
        self.sent = sent_fields(openai_generation_params(options.generation(), options.options))
        self.calls = Resilient(self.name, self.endpoint.url, options, lambda e: transport_failure(e, self.url))
        self.breaker = self.calls.breaker
        #: a call is one POST of a body written once, its reply read and classified here: no SDK layer between
        #: an answer and the next request (that layer cost more CPU per call than the HTTP client itself)
        self.clients = ClientPerCall(lambda verify: capped_http_client(
            ApiClient, options, limits=_ONE_CONNECTION, follow_redirects=True, verify=verify))
        self.headers = {"Authorization": f"Bearer {self.endpoint.key}", "Content-Type": "application/json",
                        "Accept": "application/json", "User-Agent": f"mtvbench/{__version__}"}

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        """The request: messages, then the generation settings of this call (the options with the
        request's own values on top, :meth:`BackendOptions.settings_for`). ``temperature``,
        ``top_p``, ``max_tokens`` and ``presence_penalty`` are OpenAI API parameters; ``top_k``,
        ``repetition_penalty`` and ``min_p`` are not, so they go in ``extra_body`` (vLLM and SGLang
        servers read them from the request body); ``do_sample: false`` means greedy (temperature 0).
        An ``extra_body`` option is sent as given, over the mapped values."""
        g = self.options.settings_for(request.generation)
        messages = build_messages(request, g.system, video_part=self.video_part, placeholder=True)
        return {"model": self.model, "messages": messages, **openai_generation_params(g, self.options.options)}

    def _status_failure(self, response: httpx.Response) -> CallFailure:
        """A reply with an error status: retryable (429, 5xx, ...) or final, with what the server said."""
        status = response.status_code
        msg = http_error_message(status, self.url, response.content)
        hint = self.endpoint.auth_hint() if status in (401, 403) else None
        if hint:
            msg = f"{msg} ({hint})"
        if status >= 500 and self.video_part:
            msg = (f"{msg} (the server may not accept video parts, video_part=true: send the frames as images "
                   f"with {self.options.option_advice('video_part', 'false')})")
        if status in RETRYABLE_STATUS or status >= 500:
            return RetryableError(msg, retry_after=parse_retry_after(response.headers))
        rejected = rejected_fields(response.content, self.sent) if status in (400, 422) else []
        if rejected:
            return self._rejected(msg, rejected)
        if status in (400, 404) and (named := model_name_refused(response.content)) is not None:
            return self._name_refused(msg, named)
        return FatalError(msg)

    def _name_refused(self, msg: str, served: str) -> FatalError:
        """A 400/404 saying the server does not serve the model name sent: how to send the name it serves
        (``served`` when the reply names it)."""
        name = served or "NAME"
        if self.options.origin.role == "judge":
            advice = f"--judge openai:{name}"
        else:
            advice = (f"{self.options.option_advice('served_name', name)} with a preset (PRESET@openai), "
                      f"or --model openai:{name}")
        return FatalError(f"{msg}: the server does not serve the model name {self.model!r}; send the name it "
                          f"serves: {advice}", hint="rerun with the name it serves (above): the same --out takes it")

    def _rejected(self, msg: str, fields: list[str]) -> FatalError:
        """A 400/422 naming fields the server does not accept: which values were sent (and which a
        preset gave), and how to drop each, in one line."""
        values = ", ".join(self.options.sent_value(k, self.sent[k]) for k in fields)
        them = "it" if len(fields) == 1 else "them"
        hint = f"drop the setting{'s' * (len(fields) > 1)} the server does not accept (above)"
        if self.options.origin.role is not None:  # a run: its directory keeps the settings it was made with
            hint += " and give a new --out (a run directory keeps the settings it was made with)"
        return FatalError(f"{msg}: the server does not accept {values}; drop {them} with "
                          f"{self.options.drop_advice(fields)}", hint=hint)

    async def _once(self, body: bytes, exact_reply: bool = False) -> GenerationResult:
        async with self.clients.client() as client:
            response = await client.post(self._url, content=body, headers=self.headers)
        if not response.is_success:
            raise self._status_failure(response)
        return parse_completion(response.content, self.url, exact_reply)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        body = request_body(self._params(request), request.frames, self.video_part, request.frame_timestamps)
        return await self.calls.generate(lambda: self._once(body, request.exact_reply))

    async def aclose(self) -> None:
        await self.clients.aclose()

