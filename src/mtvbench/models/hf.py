"""``hf:CHECKPOINT`` — local Hugging Face models (``pip install 'mtvbench[hf]'``).

``CHECKPOINT`` is a hub id or a local directory. One generic path covers the models whose
processor takes a video or a list of images through the chat template
(``AutoModelForImageTextToText`` + ``AutoProcessor``: Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision,
LLaVA-Video, LLaVA-NeXT-Video, ...). The few families that need their own input code live in
:mod:`mtvbench.models.hf_families` (InternVL3.5 / InternVideo2.5, MiniCPM-V / -o, VideoChat-Flash,
VideoLLaMA3) and are picked by ``extra["family"]`` or detected from the checkpoint.

Settings (``BackendOptions`` + ``extra``):

- ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``do_sample``, ``repetition_penalty``,
  ``system`` — the generation parameters (presets carry the authors' values).
- ``input``: ``video`` (frames as one video), ``images`` (frames as N images) or ``auto``
  (video when the processor has a video processor).
- ``dtype`` (``auto``: bfloat16 on CUDA, float32 on CPU), ``device_map`` (``auto`` on CUDA),
  ``attn_implementation``, ``trust_remote_code``, ``batch_size`` (turns per forward pass),
  ``chat_template_kwargs`` (e.g. ``{"enable_thinking": false}``), ``processor_kwargs``.

The runner hands :meth:`HFBackend.generate_batch` up to ``batch_size`` ready turns at a time;
the model runs in a worker thread so judging continues meanwhile. Reasoning between
``<think>`` tags is split off the answer (:func:`mtvbench.models.backend.split_thinking`). What
the local backends share (loading, chat messages, decoding settings) is in :mod:`mtvbench.models.local`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from mtvbench.errors import ConfigError
from mtvbench.models.backend import split_thinking
from mtvbench.models.hf_families import detect_family, load_family
from mtvbench.models.local import (
    Engine,
    GenParams,
    RawOutput,
    build_messages,
    device_map,
    model_device,
    require_torch,
    system_of,
    torch_dtype,
    video_metadata,
)
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult, Usage

# ---------------------------------------------------------------------------- generic path


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


def make_engine(checkpoint: str, options: BackendOptions) -> Engine:
    family = options.extra.get("family") or detect_family(checkpoint)
    if family in (None, "generic"):
        return GenericEngine(checkpoint, options)
    return load_family(str(family), checkpoint, options)


# ---------------------------------------------------------------------------- backend


class HFBackend:
    """``hf:CHECKPOINT``: a local transformers model (the generic path or a family adapter)."""

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
