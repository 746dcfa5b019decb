"""What the local backends share (``hf:`` and its family adapters, ``vllm:``): loading helpers,
the chat-template messages, the video metadata the processors need, and the mapping of the
merged generation settings onto ``generate()``.

The generation settings of a call are merged in one place
(:meth:`mtvbench.models.settings.BackendOptions.settings_for`); :class:`GenParams` only maps the
merged record to transformers' vocabulary (greedy unless sampling is asked for, the checkpoint's
sampling defaults silenced when greedy). With the backend option ``generation_defaults: checkpoint``
(the authors' Qwen script, which passes only ``max_new_tokens``) only the values that are set are
passed, so the checkpoint's ``generation_config.json`` decides every other one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from mtvbench.errors import ConfigError, MissingExtraError
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationConfig, GenerationRequest
from mtvbench.util.timecodes import frame_label

DEFAULT_MAX_NEW_TOKENS = 1024
#: ``options["generation_defaults"]`` value: pass only the settings that are set to ``generate()``
CHECKPOINT_DEFAULTS = "checkpoint"


def require_torch() -> tuple[Any, Any]:
    """(torch, transformers), or a clear error naming the extra."""
    try:
        import torch
        import transformers
    except ImportError as e:
        raise MissingExtraError("the hf: backend", "hf", e.name) from e
    return torch, transformers


class GenParams(BaseModel):
    """Decoding settings of one forward pass in transformers' terms (from merged settings)."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    #: None (only with ``checkpoint_defaults``): not set, the checkpoint's own
    do_sample: bool | None = False
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    #: pass only what is set; the checkpoint's generation_config decides the rest
    checkpoint_defaults: bool = False

    @classmethod
    def from_settings(cls, g: GenerationConfig, checkpoint_defaults: bool = False) -> GenParams:
        return cls(max_new_tokens=g.max_tokens or DEFAULT_MAX_NEW_TOKENS,
                   do_sample=g.do_sample if checkpoint_defaults else g.sampling,
                   temperature=g.temperature, top_p=g.top_p, top_k=g.top_k, repetition_penalty=g.repetition_penalty,
                   checkpoint_defaults=checkpoint_defaults)

    @classmethod
    def of(cls, request: GenerationRequest, options: BackendOptions) -> GenParams:
        """The decoding settings of ``request`` (the options with the request's values on top)."""
        return cls.from_settings(options.settings_for(request.generation),
                                 options.options.get("generation_defaults") == CHECKPOINT_DEFAULTS)

    def hf_kwargs(self) -> dict[str, Any]:
        """``generate()`` keyword arguments; sampling knobs only when sampling. With ``checkpoint_defaults``
        exactly the values that are set (``max_new_tokens`` always)."""
        if self.checkpoint_defaults:
            keys = ("do_sample", "temperature", "top_p", "top_k", "repetition_penalty")
            return {"max_new_tokens": self.max_new_tokens,
                    **{k: getattr(self, k) for k in keys if getattr(self, k) is not None}}
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
    #: what was fed (:attr:`mtvbench.records.GenerationResult.inputs`)
    inputs: dict[str, Any] | None = None


class Engine(Protocol):
    """What the generic path and each family adapter implement (synchronous; run in a thread)."""

    batch_size: int

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]: ...

    def close(self) -> None: ...


def torch_dtype(torch: Any, name: str | None) -> Any:
    if name in (None, "auto"):
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    try:
        return getattr(torch, str(name))
    except AttributeError as e:
        raise ConfigError(f"hf: unknown dtype {name!r} (bfloat16, float16, float32)") from e


def device_map(torch: Any, options: BackendOptions) -> Any:
    value = options.options.get("device_map", "auto")
    if value == "auto" and not torch.cuda.is_available():
        return None  # CPU: plain loading, no accelerate needed
    return value


def model_device(model: Any) -> Any:
    try:
        return next(model.parameters()).device
    except StopIteration:  # pragma: no cover
        return "cpu"


def system_of(request: GenerationRequest, options: BackendOptions) -> str | None:
    """The system prompt of a call (the request's, else the options')."""
    return options.settings_for(request.generation).system


def build_messages(request: GenerationRequest, system: str | None, mode: str) -> list[dict[str, Any]]:
    """Chat-template messages: optional system turn, then the frames (one video or N images) and
    the prompt (Figure 15 text with the history and the question) in one user turn; the prompt first
    when ``request.text_first``. ``request.frame_timestamps`` (``--frame-timestamps on``): as N images, each after
    a text part with its time; as one video, the times go as the video's metadata (:func:`video_metadata`)."""
    content: list[dict[str, Any]] = []
    if request.frames is not None and len(request.frames):
        if mode == "video":
            content.append({"type": "video"})
        elif request.frame_timestamps:
            for t in request.frames.timestamps:
                content += [{"type": "text", "text": frame_label(t)}, {"type": "image"}]
        else:
            content.extend({"type": "image"} for _ in range(len(request.frames)))
    text = {"type": "text", "text": request.prompt}
    if request.text_first:  # the authors' Qwen script: the text, then the video
        content.insert(0, text)
    else:
        content.append(text)
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": content})
    return messages


def video_metadata(frames: Any) -> dict[str, Any]:
    """What the video processors need to place sampled frames in time (Qwen3-VL timestamps; vLLM's
    ``(frames, metadata)`` video input): :meth:`~mtvbench.media.frames.VideoFrames.time_metadata` and the size."""
    return {**frames.time_metadata(), "width": frames.width, "height": frames.height}
