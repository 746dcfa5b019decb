"""``vllm:CHECKPOINT`` — vLLM's offline engine in this process (``pip install 'mtvbench[vllm]'``, a GPU).

Every ready turn goes to the engine at once (``batch_size``, default 1024): in golden context
every turn of the benchmark is independent, so the runner hands over all turns of a video in
one wave and vLLM schedules them with continuous batching; in self-predicted context the runner
keeps the order within a dialogue and batches across dialogues.

Two input modes (``options["input"]``):

- ``images`` (default): ``LLM.chat`` with the frames as base64 ``image_url`` parts before the
  prompt (JPEG; the InternVL script's tiles as PNG), or after it with the earlier rounds as chat turns
  under the authors' scripts, as a server is sent them (vLLM fills in each model's image placeholders); needs
  ``limit_mm_per_prompt={"image": N}`` >= the frame count (set from ``options["max_images"]``, 128).
- ``video``: ``LLM.generate`` with the chat-template prompt of one ``{"type": "video"}`` part and
  the frames as one ``(T, H, W, 3)`` array (optionally with the video metadata that Qwen3-VL uses
  for timestamps, ``options["video_metadata"]``; always under ``--frame-timestamps on``, which in ``images``
  mode puts each frame's time as a text part before it).

Backend options (``--model-option KEY=VALUE``): ``tensor_parallel_size`` (1), ``dtype`` (``auto``), ``max_model_len``,
``gpu_memory_utilization`` (0.9), ``max_num_seqs``, ``trust_remote_code``,
``mm_processor_kwargs``, ``chat_template_kwargs``; the generation settings are the options' fields
(``seed`` also seeds the engine). Think tags are split off the answer. Cached tokens: each output's
``num_cached_tokens`` (the prompt tokens vLLM's automatic prefix caching did not compute again), where the
installed vLLM has it; not tested here (it needs a GPU).

The conversion of a request into the engine's input is plain functions
(:func:`chat_messages`, :func:`video_input`, :func:`sampling_kwargs`), tested without vLLM.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mtvbench.errors import ConfigError, MissingExtraError
from mtvbench.models.backend import BackendBase, split_thinking
from mtvbench.models.local import DEFAULT_MAX_NEW_TOKENS, build_messages, system_of, video_metadata
from mtvbench.models.openai_api import build_messages as build_openai_messages
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult, Usage


def require_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise MissingExtraError("the vllm: backend (and a GPU)", "vllm", "vllm") from e
    return vllm


def chat_messages(request: GenerationRequest, system: str | None) -> list[dict[str, Any]]:
    """OpenAI-style messages for ``LLM.chat``, as a server is sent them (:func:`mtvbench.models.openai_api.
    build_messages`): frames as data-URL image parts, then the prompt (the text first and the earlier turns as
    chat messages under the authors' scripts)."""
    return build_openai_messages(request, system)


def video_array(frames: Any) -> np.ndarray:
    """The sampled frames as one uint8 array (T, H, W, 3)."""
    return np.stack([np.asarray(im.convert("RGB"), dtype=np.uint8) for im in frames.images()])


def video_input(request: GenerationRequest, prompt_text: str, with_metadata: bool = False) -> dict[str, Any]:
    """``LLM.generate`` input: the templated prompt plus the frames as one video."""
    item: dict[str, Any] = {"prompt": prompt_text}
    if request.frames is not None and len(request.frames):
        video: Any = video_array(request.frames)
        if with_metadata:
            video = (video, video_metadata(request.frames))
        item["multi_modal_data"] = {"video": video}
    return item


def sampling_kwargs(request: GenerationRequest, options: BackendOptions) -> dict[str, Any]:
    """``SamplingParams`` keyword arguments of the call's settings (the options with the request's
    values on top); greedy when ``do_sample`` is false or no temperature above 0 is set."""
    g = options.settings_for(request.generation)
    kw: dict[str, Any] = {"max_tokens": g.max_tokens or DEFAULT_MAX_NEW_TOKENS,
                          "temperature": 0.0 if g.greedy else float(g.temperature or 0.0)}
    if not g.greedy:
        if g.top_p is not None:
            kw["top_p"] = float(g.top_p)
        if g.top_k is not None:
            kw["top_k"] = int(g.top_k)
    for key in ("repetition_penalty", "presence_penalty"):
        if getattr(g, key) is not None:
            kw[key] = float(getattr(g, key))
    if g.seed is not None:
        kw["seed"] = int(g.seed)
    return kw


def engine_kwargs(checkpoint: str, options: BackendOptions) -> dict[str, Any]:
    """``vllm.LLM`` constructor arguments."""
    own = options.options
    mode = own.get("input", "images")
    kw: dict[str, Any] = {
        "model": checkpoint,
        "tensor_parallel_size": int(own.get("tensor_parallel_size", 1)),
        "dtype": own.get("dtype", "auto"),
        "gpu_memory_utilization": float(own.get("gpu_memory_utilization", 0.9)),
        "trust_remote_code": bool(own.get("trust_remote_code", False)),
        "limit_mm_per_prompt": {"video": 1} if mode == "video" else {"image": int(own.get("max_images", 128))},
    }
    for key in ("max_model_len", "max_num_seqs", "mm_processor_kwargs"):
        if own.get(key) is not None:
            kw[key] = own[key]
    if options.seed is not None:  # the engine's seed too (it was a backend option before it was a field)
        kw["seed"] = options.seed
    return kw


class VLLMBackend(BackendBase):
    """``vllm:CHECKPOINT``: vLLM's offline engine in this process, every ready turn batched."""

    #: vLLM's automatic prefix caching
    prefix_cache = True

    def __init__(self, checkpoint: str, options: BackendOptions):
        if not checkpoint:
            raise ConfigError("vllm: needs a checkpoint, e.g. vllm:Qwen/Qwen3-VL-8B-Instruct")
        vllm = require_vllm()
        self.name = f"vllm:{checkpoint}"
        self.options = options
        self.mode = str(options.options.get("input", "images"))
        if self.mode not in ("images", "video"):
            raise ConfigError(f"vllm: input must be images or video, got {self.mode!r}")
        self.batch_size = int(options.options.get("batch_size", 1024))
        self.vllm = vllm
        self.llm = vllm.LLM(**engine_kwargs(checkpoint, options))
        self.template_kwargs = dict(options.options.get("chat_template_kwargs", {}))
        self._lock = threading.Lock()
        self._processor: Any = None

    def _prompt_text(self, request: GenerationRequest) -> str:
        if self._processor is None:
            from transformers import AutoProcessor

            self._processor = AutoProcessor.from_pretrained(
                self.llm.llm_engine.model_config.model, trust_remote_code=bool(self.options.options.get(
                    "trust_remote_code", False)))
        return self._processor.apply_chat_template(build_messages(request, system_of(request, self.options), "video"),
                                                   add_generation_prompt=True, tokenize=False,
                                                   **self.template_kwargs)

    def _run_sync(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        params = [self.vllm.SamplingParams(**sampling_kwargs(r, self.options)) for r in requests]
        start = time.perf_counter()
        try:
            if self.mode == "video":
                inputs = [video_input(r, self._prompt_text(r),  # --frame-timestamps on: the times as metadata
                                      bool(self.options.options.get("video_metadata")) or r.frame_timestamps)
                          for r in requests]
                outputs = self.llm.generate(inputs, params, use_tqdm=False)
            else:
                convs = [chat_messages(r, system_of(r, self.options)) for r in requests]
                outputs = self.llm.chat(convs, params, use_tqdm=False,
                                        chat_template_kwargs=self.template_kwargs or None)
        except Exception as e:  # noqa: BLE001 - recorded per turn, never a crash
            latency = time.perf_counter() - start
            return [GenerationResult(outcome="error", error=f"{type(e).__name__}: {e}", latency_s=latency)
                    for _ in requests]
        latency = (time.perf_counter() - start) / max(1, len(requests))
        results = []
        for out in outputs:
            comp = out.outputs[0] if out.outputs else None
            raw = comp.text if comp is not None else ""
            text, reasoning = split_thinking(raw)
            cached = getattr(out, "num_cached_tokens", None)  # prefix-cache hits (vLLM V1); not tested here
            usage = Usage(prompt_tokens=len(out.prompt_token_ids or []),
                          completion_tokens=len(comp.token_ids) if comp is not None else 0,
                          cached_tokens=cached if isinstance(cached, int) and cached >= 0 else None)
            usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
            finish = getattr(comp, "finish_reason", None)
            results.append(GenerationResult(text=text, raw_text=raw, reasoning=reasoning,
                                            outcome="ok" if text else "empty",
                                            error=None if text else f"no text (finish {finish})",
                                            usage=usage, latency_s=latency))
        return results

    def _run_locked(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        with self._lock:  # one engine, not thread-safe: batches of videos in flight take turns
            return self._run_sync(requests)

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return await asyncio.to_thread(self._run_locked, list(requests))

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return (await self.generate_batch([request]))[0]

    async def aclose(self) -> None:
        self.llm = None

