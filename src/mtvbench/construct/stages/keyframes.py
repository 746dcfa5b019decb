"""Stage 4 — key frames: 2 FPS, sharp, and not a near-repeat of the previous kept frame.

One decoding pass per video (PyAV): the first decoded frame at or after each sampling
time ``k / fps`` (k = 0, 1, ...) is taken. For each taken frame:

- *sharpness* = variance of the Laplacian (OpenCV, 3x3 kernel) of its grey image, scaled
  so that the longer side is at most ``analysis_side`` (default 480) px — a value
  comparable across resolutions;
- *colour histogram* = the hue-saturation histogram (50 x 60 bins, HSV) normalised to
  [0, 1].

After the pass, the sharpness threshold is ``sharpness_abs`` when given, else
``sharpness_rel`` (default 0.3) times the median sharpness of the sampled frames: a frame
clearly blurrier than the video's typical frame is dropped, whatever the video's own
texture level. The kept frames are then filtered in time order: a frame whose histogram
correlation (``cv2.HISTCMP_CORREL``) with the previously *kept* frame is above
``similarity`` (default 0.9, paper §3.2) is dropped. Kept frames are written as JPEG.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, VideoRecord
from mtvbench.construct.stages import Stage, StageContext
from mtvbench.errors import MissingExtraError
from mtvbench.media.frames import VideoError
from mtvbench.util.files import atomic_write_bytes, ensure_dir
from mtvbench.util.strict import STRICT


class KeyFrameSettings(BaseModel):
    """The ``keyframes`` section of the build config."""

    model_config = STRICT

    fps: float = 2.0
    sharpness_rel: float = 0.3
    sharpness_abs: float | None = None
    similarity: float = 0.9
    analysis_side: int = 480
    jpeg_quality: int = 90


class KeyFrame(BaseModel):
    """One kept key frame: its index in the full decode, its time, the segment it falls in, its sharpness and its
    JPEG file."""

    frame: int  # index in the full decode
    time_s: float
    segment: int | None
    sharpness: float
    file: str  # relative to the video's workspace folder


class KeyFrames(Artifact):
    """The keyframes stage's artifact: the sampling rate and thresholds used, how many frames were sampled, the times
    of those dropped as blurry or as near-repeats, and the kept frames."""

    sample_fps: float
    sharpness_threshold: float
    similarity_threshold: float
    sampled: int
    dropped_blurry: list[float] = Field(default_factory=list)  # times
    dropped_similar: list[float] = Field(default_factory=list)
    frames: list[KeyFrame] = Field(default_factory=list)


def _cv2():  # noqa: ANN202
    try:
        import cv2
    except ImportError as e:  # pragma: no cover
        raise MissingExtraError("key frames", "build", "opencv-python-headless") from e
    return cv2


def sharpness(rgb: np.ndarray, analysis_side: int = 480) -> float:
    """How sharp a frame is: the variance of the Laplacian of its grey image, computed at most ``analysis_side``
    pixels wide (higher is sharper)."""
    cv2 = _cv2()
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    h, w = grey.shape
    if max(h, w) > analysis_side:
        s = analysis_side / max(h, w)
        grey = cv2.resize(grey, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def hs_histogram(rgb: np.ndarray, bins: tuple[int, int] = (50, 60)) -> np.ndarray:
    """The hue-saturation histogram of a frame, scaled to 0..1, for comparing a frame with the frame kept before it."""
    cv2 = _cv2()
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, list(bins), [0, 180, 0, 256])
    cv2.normalize(hist, hist, 0, 1, cv2.NORM_MINMAX)
    return hist


def hist_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """The correlation of two histograms (1.0 for the same picture); a high value marks a near-repeat."""
    return float(_cv2().compareHist(a.astype(np.float32), b.astype(np.float32), _cv2().HISTCMP_CORREL))


def extract_keyframes(video: str, path: Path, out_dir: Path, settings: KeyFrameSettings | None = None,
                      segment_of: dict[int, int] | None = None) -> KeyFrames:
    """Sample, filter and save key frames of ``path`` into ``out_dir`` (see module doc)."""
    settings = settings or KeyFrameSettings()
    cv2 = _cv2()
    samples: list[tuple[int, float, float, np.ndarray, bytes]] = []  # frame, time, sharpness, hist, jpeg
    try:
        container = av.open(str(path))
    except Exception as e:  # noqa: BLE001
        raise VideoError(f"{path}: cannot open as a video ({e})") from e
    try:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        t0: float | None = None
        next_t = 0.0
        step = 1.0 / settings.fps
        for n, frame in enumerate(container.decode(stream)):
            t = float(frame.time) if frame.time is not None else n / float(stream.average_rate or 25)
            if t0 is None:
                t0 = t
            t -= t0
            if t + 1e-6 < next_t:
                continue
            while next_t <= t + 1e-6:
                next_t += step
            rgb = frame.to_ndarray(format="rgb24")
            ok, jpg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                                   [cv2.IMWRITE_JPEG_QUALITY, settings.jpeg_quality])
            samples.append((n, t, sharpness(rgb, settings.analysis_side), hs_histogram(rgb), jpg.tobytes()))
    except Exception as e:  # noqa: BLE001
        raise VideoError(f"{path}: decoding failed ({e})") from e
    finally:
        container.close()
    if not samples:
        raise VideoError(f"{path}: no frames decoded")
    threshold = settings.sharpness_abs if settings.sharpness_abs is not None else \
        settings.sharpness_rel * float(np.median([s[2] for s in samples]))
    ensure_dir(out_dir)
    result = KeyFrames(video=video, sample_fps=settings.fps, sharpness_threshold=threshold,
                       similarity_threshold=settings.similarity, sampled=len(samples))
    last_hist: np.ndarray | None = None
    for n, t, sharp, hist, jpg in samples:
        if sharp < threshold:
            result.dropped_blurry.append(round(t, 4))
            continue
        if last_hist is not None and hist_similarity(hist, last_hist) > settings.similarity:
            result.dropped_similar.append(round(t, 4))
            continue
        last_hist = hist
        name = f"{n:07d}.jpg"
        atomic_write_bytes(out_dir / name, jpg)
        result.frames.append(KeyFrame(frame=n, time_s=round(t, 4), segment=(segment_of or {}).get(n),
                                      sharpness=round(sharp, 3), file=f"{out_dir.name}/{name}"))
    return result


async def _make(ctx: StageContext, v: VideoRecord) -> KeyFrames:
    return await ctx.offload(extract_keyframes, v.name, Path(v.path), ctx.ws.video_dir(v.name) / "keyframes",
                             ctx.config.section(KeyFrameSettings))


STAGE = Stage(make=_make, artifact=KeyFrames,
              help="4. Key frames at 2 FPS: sharp, not a near-repeat (histogram similarity <= 0.9).",
              from_video=True, object_stage=True, settings_model=KeyFrameSettings,
              settings=lambda ctx: {"keyframes": ctx.config.section(KeyFrameSettings).model_dump(mode="json")},
              needs=("build", (("cv2", "opencv-python-headless"),)))
