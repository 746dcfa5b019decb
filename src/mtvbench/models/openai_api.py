"""``openai:MODEL`` — any OpenAI-compatible chat-completions server.

This covers OpenAI itself, vLLM and SGLang servers, Doubao (Volcengine Ark), DashScope and
others: point ``--model-base-url`` (or ``OPENAI_BASE_URL``) at the server. Frames go as
base64 JPEG ``image_url`` parts followed by the text prompt (``--model-option video_part=true``
sends them as one video part instead, for vLLM servers). The key is read from the
environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``) and is never
stored.
"""

from __future__ import annotations

import os
import time
from typing import Any

import openai

from mtvbench.errors import ConfigError
from mtvbench.models.base import (
    BackendOptions,
    GenerationRequest,
    GenerationResult,
    MissingKeyError,
    Usage,
    register_backend,
    split_thinking,
)
from mtvbench.models.retry import FatalError, RetryableError, RetryPolicy, parse_retry_after, with_retries

RETRYABLE_STATUS = {408, 409, 429}


def resolve_api_key(api_key_env: str | None, base_url: str | None) -> str:
    env = api_key_env or "OPENAI_API_KEY"
    key = os.environ.get(env)
    if key:
        return key
    if base_url or os.environ.get("OPENAI_BASE_URL"):
        return "EMPTY"  # local servers (vLLM, SGLang) accept any key
    raise MissingKeyError(f"no API key: set the environment variable {env}")


def build_messages(request: GenerationRequest, system: str | None = None, video_part: bool = False
                   ) -> list[dict[str, Any]]:
    """Frames as JPEG image parts (or, with ``video_part``, one ``video_url`` part holding the
    comma-joined base64 JPEG frames as ``data:video/jpeg``, a form only vLLM's OpenAI server reads
    as one video; recent vLLM versions keep at most ``--media-io-kwargs '{"video": {"num_frames": N}}'``
    frames of it, 32 by default, so start the server with ``num_frames`` -1), then the prompt;
    ``request.system`` or ``system`` first."""
    content: list[dict[str, Any]] = []
    if request.frames is not None and video_part:
        url = "data:video/jpeg;base64," + ",".join(request.frames.b64())
        content.append({"type": "video_url", "video_url": {"url": url}})
    elif request.frames is not None:
        for b64 in request.frames.b64():
            content.append({"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64}"}})
    content.append({"type": "text", "text": request.prompt})
    messages: list[dict[str, Any]] = []
    system = request.system or system
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content if request.frames is not None else request.prompt})
    return messages


class OpenAIBackend:
    def __init__(self, model: str, options: BackendOptions):
        if not model:
            raise ConfigError("openai: needs a model name, e.g. openai:gpt-4o")
        self.name = f"openai:{model}"
        self.model = model
        self.options = options
        self.policy = RetryPolicy(max_retries=options.max_retries,
                                  base_s=float(options.extra.get("retry_base_s", 1.0)))
        self.client = openai.AsyncOpenAI(
            api_key=resolve_api_key(options.api_key_env, options.base_url),
            base_url=options.base_url,
            timeout=options.timeout_s,
            max_retries=0,  # retries are ours: one policy for every backend
        )

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        """The request: messages, then the generation settings. ``temperature``, ``top_p``,
        ``max_tokens`` and ``presence_penalty`` are OpenAI API parameters; ``top_k``,
        ``repetition_penalty`` and ``min_p`` are not, so they go in ``extra_body`` (vLLM and SGLang
        servers read them from the request body); ``do_sample: false`` means greedy (temperature 0).
        An ``extra_body`` option is sent as given, over the mapped values."""
        o = self.options
        x = o.extra
        messages = build_messages(request, o.system, video_part=bool(x.get("video_part", False)))
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        max_tokens = request.max_tokens or o.max_tokens
        if max_tokens:
            params["max_tokens"] = max_tokens
        for key in ("temperature", "top_p"):
            value = getattr(request, key) if getattr(request, key) is not None else getattr(o, key)
            if value is not None:
                params[key] = value
        if x.get("do_sample") is False and "temperature" not in params:
            params["temperature"] = 0.0
        if x.get("presence_penalty") is not None:
            params["presence_penalty"] = x["presence_penalty"]
        body: dict[str, Any] = {}
        top_k = request.top_k if request.top_k is not None else o.top_k
        if top_k is not None:
            body["top_k"] = top_k
        for key in ("repetition_penalty", "min_p"):
            if x.get(key) is not None:
                body[key] = x[key]
        body.update(x.get("extra_body") or {})
        if body:
            params["extra_body"] = body
        return params

    async def _call(self, params: dict[str, Any]) -> Any:
        try:
            return await self.client.chat.completions.create(**params)
        except openai.APIStatusError as e:
            if e.status_code in RETRYABLE_STATUS or e.status_code >= 500:
                raise RetryableError(f"HTTP {e.status_code}", parse_retry_after(e.response.headers)) from e
            raise FatalError(f"HTTP {e.status_code}: {e.message}") from e
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            raise RetryableError(type(e).__name__) from e

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        params = self._params(request)
        start = time.perf_counter()
        try:
            resp, attempts = await with_retries(lambda: self._call(params), self.policy)
        except (RetryableError, FatalError) as e:
            return GenerationResult(outcome="error", error=str(e), latency_s=time.perf_counter() - start,
                                    attempts=self.policy.max_retries + 1 if isinstance(e, RetryableError) else 1)
        latency = time.perf_counter() - start
        usage = Usage()
        if resp.usage is not None:
            usage = Usage(prompt_tokens=resp.usage.prompt_tokens or 0,
                          completion_tokens=resp.usage.completion_tokens or 0,
                          total_tokens=resp.usage.total_tokens or 0)
        if not resp.choices:
            return GenerationResult(outcome="empty", error="no choices", usage=usage, latency_s=latency,
                                    attempts=attempts)
        choice = resp.choices[0]
        raw = choice.message.content or ""
        server_reasoning = getattr(choice.message, "reasoning_content", None)
        text, reasoning = split_thinking(raw)
        reasoning = reasoning or server_reasoning
        if choice.finish_reason == "content_filter":
            return GenerationResult(text=text, raw_text=raw, reasoning=reasoning, outcome="blocked",
                                    error="content_filter", usage=usage, latency_s=latency, attempts=attempts)
        outcome = "ok" if text else "empty"
        return GenerationResult(text=text, raw_text=raw, reasoning=reasoning, outcome=outcome, usage=usage,
                                latency_s=latency, attempts=attempts)

    async def aclose(self) -> None:
        await self.client.close()


@register_backend("openai")
def _factory(name: str, options: BackendOptions) -> OpenAIBackend:
    return OpenAIBackend(name, options)
