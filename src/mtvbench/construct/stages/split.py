"""Stage 1 — split a video into shot clips with PySceneDetect.

The content detector (``ContentDetector``, threshold 27) is the default; the adaptive
detector (``AdaptiveDetector``) is an option. PySceneDetect reports cut positions as frame
numbers; each clip's ``start_s``/``end_s`` are the presentation times of its first frame
and of the first frame after it (the video's end for the last clip), read from the
container's timeline, so they are exact on any frame rate. A video without cuts is one clip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, VideoRecord
from mtvbench.construct.clipframes import shown_timeline
from mtvbench.construct.stages import Stage, StageContext
from mtvbench.errors import MissingExtraError
from mtvbench.media.frames import VideoError
from mtvbench.util.strict import STRICT


class SplitSettings(BaseModel):
    """The ``split`` section of the build config."""

    model_config = STRICT

    detector: Literal["content", "adaptive"] = Field("content", description="shot detector: content (default) or "
                                                                              "adaptive")
    threshold: float | None = None  # content: 27.0; adaptive: adaptive_threshold 3.0
    min_scene_len: int = 15  # frames


class Clip(BaseModel):
    """One shot clip: its frame range (end excluded) and its time range."""

    index: int
    start_frame: int
    end_frame: int  # exclusive
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        """The clip's length in seconds."""
        return self.end_s - self.start_s


class SplitResult(Artifact):
    """The split stage's artifact: the detector used, the video's frame rate, frame count and duration, and its shot
    clips in order."""

    detector: str
    fps: float
    total_frames: int
    duration_s: float
    clips: list[Clip]


def _detector(settings: SplitSettings):  # noqa: ANN202 - scenedetect types
    try:
        from scenedetect import AdaptiveDetector, ContentDetector
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingExtraError("the split stage", "build", "scenedetect") from e
    if settings.detector == "adaptive":
        return AdaptiveDetector(adaptive_threshold=settings.threshold or 3.0, min_scene_len=settings.min_scene_len)
    return ContentDetector(threshold=settings.threshold or 27.0, min_scene_len=settings.min_scene_len)


def detect_cuts(path: Path, settings: SplitSettings) -> list[int]:
    """Frame numbers where a new shot starts (excluding 0)."""
    from scenedetect import SceneManager, open_video

    try:
        video = open_video(str(path), backend="pyav")
    except Exception as e:  # noqa: BLE001
        raise VideoError(f"{path}: PySceneDetect cannot open it ({e})") from e
    manager = SceneManager()
    manager.add_detector(_detector(settings))
    try:
        manager.detect_scenes(video=video)
        scenes = manager.get_scene_list(start_in_scene=True)
    except Exception as e:  # noqa: BLE001 - a decode failure deep in PySceneDetect is this video's problem
        raise VideoError(f"{path}: PySceneDetect failed on it ({type(e).__name__}: {e})") from e
    return sorted({int(start.frame_num) for start, _ in scenes if int(start.frame_num) > 0})


def split_video(video: str, path: Path, settings: SplitSettings | None = None) -> SplitResult:
    """Split the video at ``path`` into shot clips at the cuts the detector finds; the clips cover the whole video,
    the last one ending at its duration."""
    settings = settings or SplitSettings()
    pts, tb, fps = shown_timeline(path)
    times = [float((p - pts[0]) * tb) for p in pts]
    step = times[1] - times[0] if len(times) > 1 else (1 / fps if fps else 0.0)
    duration = times[-1] + step
    n = len(times)
    cuts = [c for c in detect_cuts(path, settings) if 0 < c < n]
    bounds = [0, *cuts, n]
    clips = [
        Clip(index=i, start_frame=a, end_frame=b, start_s=times[a], end_s=times[b] if b < n else duration)
        for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))
    ]
    return SplitResult(video=video, detector=settings.detector, fps=fps, total_frames=n, duration_s=duration,
                       clips=clips)


async def _make(ctx: StageContext, v: VideoRecord) -> SplitResult:
    return await ctx.offload(split_video, v.name, Path(v.path), ctx.config.section(SplitSettings))


STAGE = Stage(make=_make, artifact=SplitResult,
              help="1. Split videos into shot clips (PySceneDetect).", from_video=True, settings_model=SplitSettings,
              settings=lambda ctx: {"split": ctx.config.section(SplitSettings).model_dump(mode="json")},
              needs=("build", (("scenedetect", "scenedetect"), ("cv2", "opencv-python-headless"))))
