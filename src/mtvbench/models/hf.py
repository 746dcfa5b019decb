"""``hf:CHECKPOINT`` — local Hugging Face models (``pip install 'mtvbench[hf]'``).

``CHECKPOINT`` is a hub id or a local directory. One generic path covers the models whose
processor takes a video or a list of images through the chat template
(``AutoModelForImageTextToText`` + ``AutoProcessor``: Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision,
LLaVA-Video, LLaVA-NeXT-Video, ...). The few families that need their own input code live in
:mod:`mtvbench.models.hf_families` (InternVL3.5 / InternVideo2.5, MiniCPM-V / -o, VideoChat-Flash,
VideoLLaMA3) and are picked by ``extra["family"]`` or detected from the checkpoint.

Settings (``BackendOptions`` + ``extra``):

- ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``system``; ``extra``: ``do_sample``,
  ``repetition_penalty`` — the generation parameters (presets carry the authors' values).
- ``input``: ``video`` (frames as one video), ``images`` (frames as N images) or ``auto``
  (video when the processor has a video processor).
- ``dtype`` (``auto``: bfloat16 on CUDA, float32 on CPU), ``device_map`` (``auto`` on CUDA),
  ``attn_implementation``, ``trust_remote_code``, ``batch_size`` (turns per forward pass),
  ``chat_template_kwargs`` (e.g. ``{"enable_thinking": false}``), ``processor_kwargs``.

The runner hands :meth:`HFBackend.generate_batch` up to ``batch_size`` ready turns at a time;
the model runs in a worker thread so judging continues meanwhile. Reasoning between
``<think>`` tags is split off the answer (``base.split_thinking``).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from mtvbench.errors import ConfigError, MissingExtraError
from mtvbench.models.base import (
    BackendOptions,
    GenerationRequest,
    GenerationResult,
    Usage,
    register_backend,
    split_thinking,
)

DEFAULT_MAX_NEW_TOKENS = 1024


def require_torch() -> tuple[Any, Any]:
    """(torch, transformers), or a clear error naming the extra."""
    try:
        import torch
        import transformers
    except ImportError as e:
        raise MissingExtraError("the hf: backend", "hf", e.name) from e
    return torch, transformers


class GenParams(BaseModel):
    """Decoding settings of one call (request values win over the backend's options)."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None

    @classmethod
    def of(cls, request: GenerationRequest, options: BackendOptions) -> GenParams:
        def pick(key: str) -> Any:
            value = getattr(request, key)
            return value if value is not None else getattr(options, key)

        temperature = pick("temperature")
        do_sample = options.extra.get("do_sample")
        if do_sample is None:
            do_sample = bool(temperature and temperature > 0)
        return cls(max_new_tokens=request.max_tokens or options.max_tokens or DEFAULT_MAX_NEW_TOKENS,
                   do_sample=bool(do_sample), temperature=temperature, top_p=pick("top_p"), top_k=pick("top_k"),
                   repetition_penalty=options.extra.get("repetition_penalty"))

    def hf_kwargs(self) -> dict[str, Any]:
        """``generate()`` keyword arguments; sampling knobs only when sampling."""
        kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": self.do_sample}
        if self.do_sample:
            for key in ("temperature", "top_p", "top_k"):
                value = getattr(self, key)
                if value is not None:
                    kw[key] = value
        else:  # silence generation_config sampling defaults the checkpoint may carry
            kw.update(temperature=None, top_p=None, top_k=None)
        if self.repetition_penalty is not None:
            kw["repetition_penalty"] = self.repetition_penalty
        return kw


@dataclass
class RawOutput:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Engine(Protocol):
    """What the generic path and each family adapter implement (synchronous; run in a thread)."""

    batch_size: int

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------- loading helpers


def torch_dtype(torch: Any, name: str | None) -> Any:
    if name in (None, "auto"):
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    try:
        return getattr(torch, str(name))
    except AttributeError as e:
        raise ConfigError(f"hf: unknown dtype {name!r} (bfloat16, float16, float32)") from e


def device_map(torch: Any, options: BackendOptions) -> Any:
    value = options.extra.get("device_map", "auto")
    if value == "auto" and not torch.cuda.is_available():
        return None  # CPU: plain loading, no accelerate needed
    return value


def model_device(model: Any) -> Any:
    try:
        return next(model.parameters()).device
    except StopIteration:  # pragma: no cover
        return "cpu"


def system_of(request: GenerationRequest, options: BackendOptions) -> str | None:
    return request.system or options.system


# ---------------------------------------------------------------------------- generic path


def build_messages(request: GenerationRequest, system: str | None, mode: str) -> list[dict[str, Any]]:
    """Chat-template messages: optional system turn, then the frames (one video or N images) and
    the prompt (Figure 15 text with the history and the question) in one user turn."""
    content: list[dict[str, Any]] = []
    if request.frames is not None and len(request.frames):
        if mode == "video":
            content.append({"type": "video"})
        else:
            content.extend({"type": "image"} for _ in range(len(request.frames)))
    content.append({"type": "text", "text": request.prompt})
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": content})
    return messages


def video_metadata(frames: Any) -> dict[str, Any]:
    """What the video processors need to place sampled frames in time (Qwen3-VL timestamps)."""
    fps = frames.total_frames / frames.duration_s if frames.duration_s else 1.0
    return {"total_num_frames": frames.total_frames, "fps": fps, "duration": frames.duration_s,
            "frames_indices": list(frames.indices), "width": frames.width, "height": frames.height}


class GenericEngine:
    """AutoModelForImageTextToText + AutoProcessor through the chat template."""

    def __init__(self, checkpoint: str, options: BackendOptions):
        torch, transformers = require_torch()
        self.torch = torch
        self.options = options
        extra = options.extra
        trust = bool(extra.get("trust_remote_code", False))
        self.processor = transformers.AutoProcessor.from_pretrained(checkpoint, trust_remote_code=trust)
        kwargs: dict[str, Any] = {"dtype": torch_dtype(torch, extra.get("dtype")), "trust_remote_code": trust}
        dm = device_map(torch, options)
        if dm is not None:
            kwargs["device_map"] = dm
        if extra.get("attn_implementation"):
            kwargs["attn_implementation"] = extra["attn_implementation"]
        self.model = transformers.AutoModelForImageTextToText.from_pretrained(checkpoint, **kwargs)
        self.model.eval()
        tok = getattr(self.processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"  # decoder-only batching
            if tok.pad_token is None and tok.eos_token is not None:
                tok.pad_token = tok.eos_token
        self.tokenizer = tok
        mode = str(extra.get("input", "auto"))
        if mode == "auto":
            mode = "video" if getattr(self.processor, "video_processor", None) is not None else "images"
        if mode not in ("video", "images"):
            raise ConfigError(f"hf: input must be video, images or auto, got {mode!r}")
        self.mode = mode
        self.batch_size = int(extra.get("batch_size", 4))
        self.template_kwargs = dict(extra.get("chat_template_kwargs", {}))
        self.processor_kwargs = dict(extra.get("processor_kwargs", {}))

    def prepare(self, requests: Sequence[GenerationRequest]) -> dict[str, Any]:
        """The processor's batch for ``requests`` (tensors on the model's device)."""
        texts = [self.processor.apply_chat_template(build_messages(r, system_of(r, self.options), self.mode),
                                                    add_generation_prompt=True, tokenize=False,
                                                    **self.template_kwargs)
                 for r in requests]
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True, **self.processor_kwargs}
        with_frames = [r for r in requests if r.frames is not None and len(r.frames)]
        if with_frames and len(with_frames) != len(requests):
            raise ValueError("hf: a batch mixes requests with and without frames")
        if with_frames and self.mode == "video":
            kwargs["videos"] = [r.frames.images() for r in requests]  # type: ignore[union-attr]
            vk = dict(kwargs.pop("videos_kwargs", {}))
            vk.setdefault("do_sample_frames", False)  # our frames are the paper's sampling
            vk.setdefault("video_metadata", [video_metadata(r.frames) for r in requests])
            kwargs["videos_kwargs"] = vk
        elif with_frames:
            kwargs["images"] = [r.frames.images() for r in requests]  # type: ignore[union-attr]
        batch = self.processor(**kwargs)
        # floating tensors (pixel values) follow the model's dtype; ids stay integer
        return batch.to(model_device(self.model), dtype=self.model.dtype)

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        batch = self.prepare(requests)
        with self.torch.inference_mode():
            out = self.model.generate(**batch, **params.hf_kwargs(), pad_token_id=self.tokenizer.pad_token_id)
        prompt_len = batch["input_ids"].shape[1]
        new = out[:, prompt_len:]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        results = []
        for i, text in enumerate(texts):
            ids = new[i].tolist()
            n = len(ids)
            for j, t in enumerate(ids):
                if t == eos or (t == pad and pad != eos):
                    n = j + 1 if t == eos else j
                    break
            results.append(RawOutput(text=text, prompt_tokens=int(batch["attention_mask"][i].sum()),
                                     completion_tokens=n))
        return results

    def close(self) -> None:
        del self.model


# ---------------------------------------------------------------------------- family detection

_NAME_FAMILIES = (
    (re.compile(r"internvl|internvideo2", re.I), "internvl"),
    (re.compile(r"minicpm-?[vo]", re.I), "minicpm"),
    (re.compile(r"videochat-?flash", re.I), "videochat_flash"),
    (re.compile(r"videollama3", re.I), "videollama3"),
)
_ARCH_FAMILIES = {"InternVLChatModel": "internvl", "MiniCPMV": "minicpm", "MiniCPMO": "minicpm",
                  "Videollama3Qwen2ForCausalLM": "videollama3", "VideoChatFlashQwenForCausalLM": "videochat_flash"}


def detect_family(checkpoint: str) -> str | None:
    """The adapter a checkpoint needs, from its config.json (local dirs) or its name; None: generic.

    Transformers-native conversions (ids ending in ``-hf``) use the generic path."""
    cfg = Path(checkpoint) / "config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        for arch in data.get("architectures") or []:
            if arch in _ARCH_FAMILIES:
                return _ARCH_FAMILIES[arch]
        if data.get("auto_map") is None:
            return None
    if checkpoint.lower().rstrip("/").endswith("-hf"):
        return None
    for pattern, family in _NAME_FAMILIES:
        if pattern.search(checkpoint):
            return family
    return None


def make_engine(checkpoint: str, options: BackendOptions) -> Engine:
    family = options.extra.get("family") or detect_family(checkpoint)
    if family in (None, "generic"):
        return GenericEngine(checkpoint, options)
    from mtvbench.models.hf_families import load_family

    return load_family(str(family), checkpoint, options)


# ---------------------------------------------------------------------------- backend


class HFBackend:
    needs_frames = True

    def __init__(self, checkpoint: str, options: BackendOptions, engine: Engine | None = None):
        if not checkpoint:
            raise ConfigError("hf: needs a checkpoint, e.g. hf:Qwen/Qwen3-VL-8B-Instruct or hf:/path/to/dir")
        self.name = f"hf:{checkpoint}"
        self.options = options
        self.engine = engine if engine is not None else make_engine(checkpoint, options)
        self.batch_size = max(1, int(getattr(self.engine, "batch_size", 1)))
        self._lock = threading.Lock()

    def _run_sync(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        # one parameter set per forward pass
        groups: dict[str, list[int]] = {}
        params = [GenParams.of(r, self.options) for r in requests]
        for i, p in enumerate(params):
            groups.setdefault(p.model_dump_json(), []).append(i)
        results: list[GenerationResult | None] = [None] * len(requests)
        for idx in groups.values():
            start = time.perf_counter()
            try:
                with self._lock:
                    outs = self.engine.run([requests[i] for i in idx], params[idx[0]])
            except Exception as e:  # noqa: BLE001 - recorded per turn (OOM, bad input), never a crash
                latency = time.perf_counter() - start
                for i in idx:
                    results[i] = GenerationResult(outcome="error", error=f"{type(e).__name__}: {e}",
                                                  latency_s=latency)
                continue
            latency = (time.perf_counter() - start) / max(1, len(idx))
            for i, out in zip(idx, outs):
                text, reasoning = split_thinking(out.text)
                results[i] = GenerationResult(
                    text=text, raw_text=out.text, reasoning=reasoning, outcome="ok" if text else "empty",
                    error=None if text else "no text after generation", latency_s=latency,
                    usage=Usage(prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                                total_tokens=out.prompt_tokens + out.completion_tokens))
        return [r for r in results if r is not None]

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out: list[GenerationResult] = []
        reqs = list(requests)
        for i in range(0, len(reqs), self.batch_size):
            out.extend(await asyncio.to_thread(self._run_sync, reqs[i: i + self.batch_size]))
        return out

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return (await self.generate_batch([request]))[0]

    async def aclose(self) -> None:
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()


@register_backend("hf")
def _factory(name: str, options: BackendOptions) -> HFBackend:
    return HFBackend(name, options)
