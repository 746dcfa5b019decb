"""MiniCPM-V 4.5 and MiniCPM-o 2.6 through their remote-code ``chat(msgs=...)`` API.

Inputs: one user message whose content is the sampled frames (PIL images) followed by the
prompt; video settings ``use_image_id=False`` and ``max_slice_nums`` (1 by default: one slice
per frame). MiniCPM-V 4.5 also takes ``temporal_ids``: each frame's time in units of
``time_scale`` (0.1 s), grouped ``packing`` frames at a time for its 3D resampler (``packing``
1 by default: no frame packing); and ``enable_thinking`` (its "deep thinking" mode, off for the
paper's row). MiniCPM-o loads with ``init_audio`` / ``init_tts`` off.

Backend options (``--model-option KEY=VALUE``): ``max_slice_nums``, ``use_image_id``, ``packing``, ``time_scale``,
``enable_thinking``, ``init_audio``, ``init_tts``, ``dtype``, ``attn_implementation`` (``sdpa``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtvbench.models.local import GenParams, RawOutput, require_torch, system_of, torch_dtype
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest
from mtvbench.util.timecodes import frame_label


def is_v45(checkpoint: str) -> bool:
    name = checkpoint.lower().replace("_", "-").replace(".", "-")
    return "minicpm-v-4-5" in name or "minicpm-v4-5" in name


def temporal_ids(timestamps: Sequence[float], packing: int = 1, time_scale: float = 0.1) -> list[list[int]]:
    """Frame times in ``time_scale`` units, in groups of ``packing`` consecutive frames."""
    if packing < 1:
        raise ValueError("packing must be >= 1")
    ids = [int(round(t / time_scale)) for t in timestamps]
    return [ids[i: i + packing] for i in range(0, len(ids), packing)]


def build_msgs(images: Sequence[Any], prompt: str, times: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """The chat's one user turn: the frames, then the prompt; with ``times`` (``--frame-timestamps on``) each
    frame after its time as text."""
    if times is None:
        return [{"role": "user", "content": [*images, prompt]}]
    return [{"role": "user", "content": [*(x for t, im in zip(times, images) for x in (frame_label(t), im)),
                                         prompt]}]


def chat_kwargs(request: GenerationRequest, params: GenParams, options: BackendOptions, v45: bool) -> dict[str, Any]:
    """Everything ``model.chat`` gets besides the model and tokenizer."""
    own = options.options
    frames = request.frames
    images = frames.images() if frames is not None else []
    kw: dict[str, Any] = {
        "msgs": build_msgs(images, request.prompt,
                           frames.timestamps if frames is not None and request.frame_timestamps else None),
        "sampling": params.do_sample,
        "max_new_tokens": params.max_new_tokens,
        "use_image_id": bool(own.get("use_image_id", False)),
        "max_slice_nums": int(own.get("max_slice_nums", 1)),
    }
    if params.do_sample:
        kw.update({k: v for k, v in (("temperature", params.temperature), ("top_p", params.top_p),
                                     ("top_k", params.top_k)) if v is not None})
    if params.repetition_penalty is not None:
        kw["repetition_penalty"] = params.repetition_penalty
    system = system_of(request, options)
    if system:
        kw["system_prompt"] = system
    if v45:
        kw["enable_thinking"] = bool(own.get("enable_thinking", False))
        if frames is not None and len(frames):
            kw["temporal_ids"] = temporal_ids(frames.timestamps, int(own.get("packing", 1)),
                                              float(own.get("time_scale", 0.1)))
    return kw


class MiniCPMEngine:
    batch_size = 1

    def __init__(self, checkpoint: str, options: BackendOptions):
        torch, transformers = require_torch()
        self.torch = torch
        self.options = options
        own = options.options
        self.v45 = is_v45(checkpoint)
        kwargs: dict[str, Any] = {"trust_remote_code": True, "dtype": torch_dtype(torch, own.get("dtype")),
                                  "attn_implementation": own.get("attn_implementation", "sdpa")}
        if "minicpm-o" in checkpoint.lower().replace("_", "-"):
            kwargs.update(init_vision=True, init_audio=bool(own.get("init_audio", False)),
                          init_tts=bool(own.get("init_tts", False)))
        model = transformers.AutoModel.from_pretrained(checkpoint, **kwargs).eval()
        self.model = model.cuda() if torch.cuda.is_available() else model
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True)

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        outs = []
        for r in requests:
            with self.torch.inference_mode():
                text = self.model.chat(tokenizer=self.tokenizer, **chat_kwargs(r, params, self.options, self.v45))
            text = text if isinstance(text, str) else str(text)
            outs.append(RawOutput(text=text, completion_tokens=len(self.tokenizer(text).input_ids)))
        return outs

    def close(self) -> None:
        del self.model


def load(checkpoint: str, options: BackendOptions) -> MiniCPMEngine:
    return MiniCPMEngine(checkpoint, options)
