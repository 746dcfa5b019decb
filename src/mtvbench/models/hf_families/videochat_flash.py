"""VideoChat-Flash through its remote-code ``chat(video_path=...)`` API.

Its remote code decodes and samples the video file itself; we pass the video path and
``max_num_frames`` = the run's frame count (128 in the paper), so the frames it sees are its
own uniform sample, not necessarily the exact frames of our sampler.

Backend options (``--model-option KEY=VALUE``): ``mm_llm_compress`` (False), ``dtype``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtvbench.models.hf_families.internvl import generation_config
from mtvbench.models.local import GenParams, RawOutput, require_torch, torch_dtype
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest


def chat_kwargs(request: GenerationRequest, params: GenParams) -> dict[str, Any]:
    frames = request.frames
    video = request.options.get("video") or (frames.video if frames is not None else None)
    if video is None:
        raise ValueError("videochat_flash: needs the video path (from the frames record)")
    return {"video_path": str(video), "user_prompt": request.prompt, "chat_history": None, "return_history": False,
            "max_num_frames": len(frames) if frames is not None else 128,
            "generation_config": generation_config(params)}


class VideoChatFlashEngine:
    batch_size = 1

    def __init__(self, checkpoint: str, options: BackendOptions):
        torch, transformers = require_torch()
        self.torch = torch
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True)
        model = transformers.AutoModel.from_pretrained(checkpoint, trust_remote_code=True)
        model = model.to(torch_dtype(torch, options.options.get("dtype")))
        self.model = (model.cuda() if torch.cuda.is_available() else model).eval()
        self.model.config.mm_llm_compress = bool(options.options.get("mm_llm_compress", False))

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        outs = []
        for r in requests:
            with self.torch.inference_mode():
                text = self.model.chat(tokenizer=self.tokenizer, **chat_kwargs(r, params))
            text = text[0] if isinstance(text, tuple) else text
            outs.append(RawOutput(text=str(text), completion_tokens=len(self.tokenizer(str(text)).input_ids)))
        return outs

    def close(self) -> None:
        del self.model


def load(checkpoint: str, options: BackendOptions) -> VideoChatFlashEngine:
    return VideoChatFlashEngine(checkpoint, options)
