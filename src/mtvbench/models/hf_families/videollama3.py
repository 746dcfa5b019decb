"""VideoLLaMA3 through its remote-code processor (``conversation=...``) and ``generate``.

Its processor decodes the video file itself; we pass the path with ``max_frames`` = the run's
frame count (128 in the paper) and ``fps`` (``options["fps"]``, default 1), so it samples its own
frames. The system turn is the preset's system prompt, else the model card's default.

Backend options (``--model-option KEY=VALUE``): ``fps``, ``dtype``, ``device_map``, ``attn_implementation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtvbench.models.local import GenParams, RawOutput, device_map, require_torch, system_of, torch_dtype
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest

DEFAULT_SYSTEM = "You are a helpful assistant."


def conversation(request: GenerationRequest, options: BackendOptions) -> list[dict[str, Any]]:
    frames = request.frames
    video = request.options.get("video") or (frames.video if frames is not None else None)
    content: list[dict[str, Any]] = []
    if video is not None:
        content.append({"type": "video", "video": {"video_path": str(video),
                                                   "fps": float(options.options.get("fps", 1)),
                                                   "max_frames": len(frames) if frames is not None else 128}})
    content.append({"type": "text", "text": request.prompt})
    return [{"role": "system", "content": system_of(request, options) or DEFAULT_SYSTEM},
            {"role": "user", "content": content}]


class VideoLLaMA3Engine:
    batch_size = 1

    def __init__(self, checkpoint: str, options: BackendOptions):
        torch, transformers = require_torch()
        self.torch = torch
        self.options = options
        self.dtype = torch_dtype(torch, options.options.get("dtype"))
        kwargs: dict[str, Any] = {"trust_remote_code": True, "dtype": self.dtype}
        dm = device_map(torch, options)
        if dm is not None:
            kwargs["device_map"] = dm
        if options.options.get("attn_implementation"):
            kwargs["attn_implementation"] = options.options["attn_implementation"]
        self.model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs).eval()
        self.processor = transformers.AutoProcessor.from_pretrained(checkpoint, trust_remote_code=True)

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        outs = []
        device = next(self.model.parameters()).device
        for r in requests:
            inputs = self.processor(conversation=conversation(r, self.options), add_system_prompt=True,
                                    add_generation_prompt=True, return_tensors="pt")
            inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
            if "pixel_values" in inputs:
                inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
            with self.torch.inference_mode():
                ids = self.model.generate(**inputs, **params.hf_kwargs())
            text = self.processor.batch_decode(ids, skip_special_tokens=True)[0].strip()
            outs.append(RawOutput(text=text, completion_tokens=int(ids.shape[-1])))
        return outs

    def close(self) -> None:
        del self.model


def load(checkpoint: str, options: BackendOptions) -> VideoLLaMA3Engine:
    return VideoLLaMA3Engine(checkpoint, options)
