"""Stage 2 — an MLLM describes each shot clip, from frames sampled inside that clip only.

One call per clip (an empty reply is asked again, up to ``max_attempts`` calls). Every
reply is committed to the call journal as it arrives, so a re-run asks only for clips
whose caption is missing; a failed call is recorded and asked again on the next run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Failure, VideoRecord
from mtvbench.construct.calls import StageModel, failure, gather_all, ranges_frames, text_check
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.split import SplitResult
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import FrameSettings
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.prompts.generation import CLIP_CAPTION_PROMPT
from mtvbench.records import GenerationRequest
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import hms


class CaptionSettings(BaseModel):
    """The ``caption`` section of the build config."""

    model_config = STRICT

    frames: int = Field(8, description="frames sampled from each clip for its caption")


class Captions(Artifact):
    """The caption stage's artifact: each clip's caption by clip index, and the clips whose caption was given up."""

    captions: dict[int, str] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)


async def caption_clips(video: str, path: Path, split: SplitResult, model: StageModel, num_frames: int = 8,
                        frame_settings: FrameSettings | None = None, max_attempts: int = 3) -> Captions:
    """Caption every clip of ``split`` with ``model``, from ``num_frames`` frames sampled inside that clip only. The
    artifact is complete only when every clip has a caption, since merging needs them all."""
    settings = frame_settings or FrameSettings(num_frames=num_frames, max_side=448)
    video_fp = await asyncio.to_thread(fingerprint, path)
    policy = ReaskPolicy(max_attempts)

    async def caption_clip(clip_index: int):  # noqa: ANN202 - AskOutcome[str]
        clip = split.clips[clip_index]
        item = f"clip/{clip.index}"
        frames = ranges_frames(video_fp, path, [(clip.start_s, clip.end_s)], num_frames, settings)
        prompt = CLIP_CAPTION_PROMPT.format(start=hms(clip.start_s), end=hms(clip.end_s))
        return await ask(model.caller(video, "caption", item, frames), GenerationRequest(id=item, prompt=prompt),
                         text_check, policy)

    outcomes = await gather_all(caption_clip(c.index) for c in split.clips)
    out = Captions(video=video)
    for clip, res in zip(split.clips, outcomes):
        if res.ok:
            out.captions[clip.index] = res.value
        else:
            out.failures.append(failure(f"clip/{clip.index}", res))
    out.complete = not out.failures  # merging needs every caption
    return out


async def _make(ctx: StageContext, v: VideoRecord) -> Captions:
    n = ctx.config.section(CaptionSettings).frames
    return await caption_clips(v.name, Path(v.path), ctx.artifact(v, "split", SplitResult), ctx.model("caption"),
                               n, ctx.frames(n), ctx.config.max_attempts)


STAGE = Stage(make=_make, artifact=Captions,
              help="2. Caption each clip with an MLLM (frames from the clip only).", upstream=("split",),
              role="caption", settings_model=CaptionSettings,
              settings=lambda ctx: {"frames": ctx.frames(ctx.config.section(CaptionSettings).frames).key()},
              prompts=lambda: text_digest(CLIP_CAPTION_PROMPT))
