"""Stage 2 — an MLLM describes each shot clip, from frames sampled inside that clip only.

Resumable: captions already stored are kept; only missing ones are asked (a failed call
is recorded and asked again on the next run).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mtvbench.construct.clipframes import sample_clip_frames
from mtvbench.construct.llm import StageModel
from mtvbench.construct.records import Captions, Failure, SplitResult, hms
from mtvbench.media.frames import FrameSettings
from mtvbench.prompts.generation import CLIP_CAPTION_PROMPT


async def caption_clips(video: str, path: Path, split: SplitResult, model: StageModel,
                        previous: Captions | None = None, num_frames: int = 8,
                        frame_settings: FrameSettings | None = None) -> Captions:
    out = Captions(video=video, captions=dict(previous.captions) if previous else {})
    settings = frame_settings or FrameSettings(num_frames=num_frames, max_side=448)

    async def one(clip_index: int) -> None:
        clip = split.clips[clip_index]
        frames = await asyncio.to_thread(sample_clip_frames, path, clip.start_s, clip.end_s, num_frames, settings)
        prompt = CLIP_CAPTION_PROMPT.format(start=hms(clip.start_s), end=hms(clip.end_s))
        text, err = await model.ask(f"caption/{video}/{clip.index}", prompt, frames)
        if text is None:
            out.failures.append(Failure(item=f"clip {clip.index}", problems=[err]))
        else:
            out.captions[clip.index] = text.strip()

    await asyncio.gather(*(one(c.index) for c in split.clips if c.index not in out.captions))
    out.complete = all(c.index in out.captions for c in split.clips)
    return out
