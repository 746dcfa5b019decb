"""``hf:CHECKPOINT`` — local Hugging Face models (``pip install 'mtvbench[hf]'``).

``CHECKPOINT`` is a hub id or a local directory. One generic path covers the models whose
processor takes a video or a list of images through the chat template
(``AutoModelForImageTextToText`` + ``AutoProcessor``: Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision,
LLaVA-Video, LLaVA-NeXT-Video, ...). The few families that need their own input code live in
:mod:`mtvbench.models.hf_families` (InternVL3.5 / InternVideo2.5, MiniCPM-V / -o, VideoChat-Flash,
VideoLLaMA3) and are picked by ``options["family"]`` or detected from the checkpoint.

Settings (``BackendOptions`` + its backend options, ``--model-option KEY=VALUE``):

- ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``do_sample``, ``repetition_penalty``,
  ``system`` — the generation parameters (presets carry the authors' values).
- ``input``: ``video`` (frames as one video), ``images`` (frames as N images) or ``auto``
  (video when the processor has a video processor).
- ``dtype`` (``auto``: bfloat16 on CUDA, float32 on CPU), ``device_map`` (``auto`` on CUDA),
  ``attn_implementation``, ``trust_remote_code``, ``batch_size`` (turns per forward pass),
  ``chat_template_kwargs`` (e.g. ``{"enable_thinking": false}``), ``processor_kwargs``,
  ``video_reader`` (the Qwen script's MP4: ``auto``).

Under the authors' Qwen script (frames of the ``qwen-script`` rule, which carry the script's MP4) the
call is the script's own (:meth:`GenericEngine.run_script`): one user message of the prompt text and a
``video`` item naming the MP4 (with the script's pixel keys), ``processor.apply_chat_template(batch,
tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt", padding=True)`` with
left padding, ``model.generate(**inputs, max_new_tokens=N)`` (the values that are set, nothing else:
``generation_defaults: checkpoint``) and ``batch_decode(skip_special_tokens=True,
clean_up_tokenization_spaces=False)``; the checkpoint's processor decodes and resamples the MP4 as it
does for the script. Where torchcodec (the processors' default reader) cannot be used, the MP4 is
read by transformers' own PyAV reader (``video_reader``: ``auto``, ``processor``, ``pyav``). Each
result records what was fed (:attr:`~mtvbench.records.GenerationResult.inputs`): the transformers
version, the reader, the clip, the processor's ``video_grid_thw`` and the frames and frame size it
stands for.

The runner hands :meth:`HFBackend.generate_batch` up to ``batch_size`` ready turns at a time;
the model runs in a worker thread so judging continues meanwhile. Reasoning between
``<think>`` tags is split off the answer (:func:`mtvbench.models.backend.split_thinking`). What
the local backends share (loading, chat messages, decoding settings) is in :mod:`mtvbench.models.local`.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtvbench.errors import ConfigError
from mtvbench.media.authors_frames import VIDEO_ITEM_PIXELS
from mtvbench.media.frames import VideoFrames
from mtvbench.models.backend import BackendBase, split_thinking
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
        own = options.options
        trust = bool(own.get("trust_remote_code", False))
        self.processor = transformers.AutoProcessor.from_pretrained(checkpoint, trust_remote_code=trust)
        kwargs: dict[str, Any] = {"dtype": torch_dtype(torch, own.get("dtype")), "trust_remote_code": trust}
        dm = device_map(torch, options)
        if dm is not None:
            kwargs["device_map"] = dm
        if own.get("attn_implementation"):
            kwargs["attn_implementation"] = own["attn_implementation"]
        self.model = transformers.AutoModelForImageTextToText.from_pretrained(checkpoint, **kwargs)
        self.model.eval()
        tok = getattr(self.processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"  # decoder-only batching
            if tok.pad_token is None and tok.eos_token is not None:
                tok.pad_token = tok.eos_token
        self.tokenizer = tok
        mode = str(own.get("input", "auto"))
        if mode == "auto":
            mode = "video" if getattr(self.processor, "video_processor", None) is not None else "images"
        if mode not in ("video", "images"):
            raise ConfigError(f"hf: input must be video, images or auto, got {mode!r}")
        self.mode = mode
        self.batch_size = int(own.get("batch_size", 4))
        self.template_kwargs = dict(own.get("chat_template_kwargs", {}))
        self.processor_kwargs = dict(own.get("processor_kwargs", {}))
        self.video_reader = str(own.get("video_reader", "auto"))
        if self.video_reader not in ("auto", "processor", "pyav"):
            raise ConfigError(f"hf: video_reader must be auto, processor or pyav, got {self.video_reader!r}")
        self._reader: str | None = None  # the reader in use, once a clip was fed
        self._clips: tempfile.TemporaryDirectory[str] | None = None  # clips the frame cache does not hold

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
        scripted = [r for r in requests if _script_clip(r.frames)]
        if scripted and len(scripted) != len(requests):
            raise ValueError("hf: a batch mixes the Qwen script's clips with other frames")
        if scripted:
            return self.run_script(requests, params)
        batch = self.prepare(requests)
        with self.torch.inference_mode():
            out = self.model.generate(**batch, **params.hf_kwargs(), pad_token_id=self.tokenizer.pad_token_id)
        new = out[:, batch["input_ids"].shape[1]:]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        return self._outputs(batch, new, texts, [self._fed(batch, i) for i in range(len(requests))])

    def run_script(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        """The authors' Qwen script's call (see the module doc), on the clips the requests' frames carry."""
        self._use_reader()
        messages = [self._script_messages(r) for r in requests]
        with self.torch.inference_mode():
            batch = self.processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                                       return_dict=True, return_tensors="pt", padding=True,
                                                       **self.template_kwargs)
            batch = batch.to(model_device(self.model))
            pad = {} if params.checkpoint_defaults else {"pad_token_id": self.tokenizer.pad_token_id}
            out = self.model.generate(**batch, **params.hf_kwargs(), **pad)
        new = out[:, batch["input_ids"].shape[1]:]
        texts = self.processor.batch_decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return self._outputs(batch, new, texts, [self._script_fed(batch, i, r.frames) for i, r in enumerate(requests)])

    def _script_messages(self, request: GenerationRequest) -> list[dict[str, Any]]:
        """The script's message: the prompt text, then the MP4 as a ``video`` item with its pixel keys."""
        item = {"type": "video", "video": str(self._clip_file(request.frames)), **VIDEO_ITEM_PIXELS}
        messages: list[dict[str, Any]] = []
        system = system_of(request, self.options)
        if system:  # the script sends none; a system prompt given to this run goes first
            messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": request.prompt}, item]})
        return messages

    def _clip_file(self, frames: VideoFrames | None) -> Path:
        """Where the clip is on disk: in the frame cache, else written once to this engine's temporary folder."""
        assert frames is not None and frames.clip is not None
        if frames.clip_path is not None and frames.clip_path.is_file():
            return frames.clip_path
        memo = frames.__dict__.get("_hf_clip_file")
        if memo is None or not Path(memo).is_file():
            if self._clips is None:
                self._clips = tempfile.TemporaryDirectory(prefix="mtvbench-hf-clips-")
            memo = Path(tempfile.mkstemp(suffix=".mp4", dir=self._clips.name)[1])
            memo.write_bytes(frames.clip)
            frames.__dict__["_hf_clip_file"] = memo
        return Path(memo)

    def _use_reader(self) -> None:
        """The processor reads the MP4 with its own reader (torchcodec), or with transformers' PyAV reader where
        torchcodec cannot be used (``video_reader``)."""
        if self._reader is not None:
            return
        reader = self.video_reader
        if reader == "auto":
            reader = "processor" if _torchcodec_usable() else "pyav"
        if reader == "pyav":
            self.processor.video_processor.fetch_videos = _pyav_fetch
        self._reader = reader

    def _fed(self, batch: Any, i: int) -> dict[str, Any]:
        """What the processor made of request ``i``'s frames, as far as the batch says."""
        fed: dict[str, Any] = {"transformers": _transformers_version()}
        grid = batch.get("video_grid_thw")
        if grid is not None and len(grid) == len(batch["input_ids"]):  # one video per request
            vp = self.processor.video_processor
            t, h, w = (int(x) for x in grid[i])
            fed.update(video_grid_thw=[t, h, w], frames_fed=t * int(vp.temporal_patch_size),
                       frame_size=[w * int(vp.patch_size), h * int(vp.patch_size)])
        return fed

    def _script_fed(self, batch: Any, i: int, frames: VideoFrames | None) -> dict[str, Any]:
        assert frames is not None
        clip = {"frames": len(frames), "size": [frames.width, frames.height], "indices": list(frames.indices)}
        return {**self._fed(batch, i), "video_reader": self._reader, "clip": clip}

    def _outputs(self, batch: Any, new: Any, texts: list[str], fed: list[dict[str, Any]]) -> list[RawOutput]:
        """Texts with their token counts (up to the first end-of-sequence) and what was fed."""
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
                                     completion_tokens=n, inputs=fed[i]))
        return results

    def close(self) -> None:
        del self.model
        if self._clips is not None:
            self._clips.cleanup()


def _script_clip(frames: VideoFrames | None) -> bool:
    """The frames are the Qwen script's: its MP4 is fed, not the images."""
    return frames is not None and frames.settings.rule == "qwen-script" and frames.clip is not None


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


def _torchcodec_usable() -> bool:
    """Whether transformers can decode video with torchcodec (its default reader) here."""
    from transformers.utils import import_utils

    usable = getattr(import_utils, "is_torchcodec_usable", None)
    if usable is not None:
        return bool(usable(decode="video"))
    return bool(import_utils.is_torchcodec_available())


def _pyav_fetch(urls: Any, sample_indices_fn: Any = None) -> Any:
    """A video processor's ``fetch_videos`` through transformers' own PyAV reader (same metadata and indices)."""
    from transformers.video_utils import load_video

    if isinstance(urls, list):
        return list(zip(*[_pyav_fetch(u, sample_indices_fn) for u in urls]))
    return load_video(urls, backend="pyav", sample_indices_fn=sample_indices_fn)


def make_engine(checkpoint: str, options: BackendOptions) -> Engine:
    family = options.options.get("family") or detect_family(checkpoint)
    if family in (None, "generic"):
        return GenericEngine(checkpoint, options)
    return load_family(str(family), checkpoint, options)


# ---------------------------------------------------------------------------- backend


class HFBackend(BackendBase):
    """``hf:CHECKPOINT``: a local transformers model (the generic path or a family adapter)."""

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
                    error=None if text else "no text after generation", latency_s=latency, inputs=out.inputs,
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
