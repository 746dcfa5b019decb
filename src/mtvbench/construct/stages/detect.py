"""Stage 5 — object detection on the kept key frames; crops saved for captioning.

The detector is the build's (``detector`` / ``detector_weights``, :mod:`mtvbench.construct.detector`:
YOLO11 through ``ultralytics`` by default, paper §3.2, or a ``module:factory`` of your own), loaded
once by the builder; on a Ray cluster it runs in a detector actor.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, VideoRecord
from mtvbench.construct.detector import Box, Detector, is_yolo, load_detector
from mtvbench.construct.stages import Stage, StageContext
from mtvbench.construct.stages.keyframes import KeyFrames
from mtvbench.util.files import atomic_write_bytes, ensure_dir


class Detection(BaseModel):
    """One detected object: its id, the key frame and time it was found at, the segment of that time, its box and the
    path of its saved crop."""

    id: int
    frame: int
    time_s: float
    segment: int | None
    box: Box
    crop: str  # relative path of the crop JPEG


class Detections(Artifact):
    """The detect stage's artifact: the detector's name and every detection on the kept key frames."""

    detector: str
    detections: list[Detection] = Field(default_factory=list)


def detect_objects(video: str, video_dir: Path, keyframes: KeyFrames, detector: Detector,
                   min_side: int = 8, min_confidence: float = 0.0, max_per_frame: int = 10) -> Detections:
    """Run ``detector`` on every kept key frame; save crops under ``video_dir/crops``."""
    from PIL import Image

    crops = ensure_dir(video_dir / "crops")
    out = Detections(video=video, detector=detector.name)
    next_id = 0
    for kf in keyframes.frames:
        with Image.open(video_dir / kf.file) as im:
            rgb = np.asarray(im.convert("RGB"))
        h, w = rgb.shape[:2]
        boxes = [b for b in detector.detect(rgb) if b.confidence >= min_confidence]
        boxes.sort(key=lambda b: -b.confidence)
        kept = 0
        for b in boxes:
            x1, y1 = max(0, int(round(b.x1))), max(0, int(round(b.y1)))
            x2, y2 = min(w, int(round(b.x2))), min(h, int(round(b.y2)))
            if x2 - x1 < min_side or y2 - y1 < min_side:
                continue
            name = f"{kf.frame:07d}_{next_id:05d}.jpg"
            buf = io.BytesIO()
            Image.fromarray(rgb[y1:y2, x1:x2]).save(buf, format="JPEG", quality=92)
            atomic_write_bytes(crops / name, buf.getvalue())
            out.detections.append(Detection(id=next_id, frame=kf.frame, time_s=kf.time_s, segment=kf.segment,
                                            box=b, crop=f"crops/{name}"))
            next_id += 1
            kept += 1
            if kept >= max_per_frame:
                break
    return out


def _detect_with(detector: Detector, video: str, video_dir: str, keyframes: KeyFrames) -> Detections:
    """:func:`detect_objects` with a detector loaded once where it runs (a Ray actor of the cluster)."""
    return detect_objects(video, Path(video_dir), keyframes, detector)


def _held_detector(ctx: StageContext) -> Any:
    """The detector's actor on the cluster (a GPU actor), loaded there once; made (and checked) in the
    preflight, so a detector that cannot be loaded there stops the build before anything is written."""
    c, cluster = ctx.config, ctx.cluster()
    assert cluster is not None
    return cluster.holder(load_detector, c.detector, c.detector_weights, num_gpus=c.ray.detect_gpus)


async def _make(ctx: StageContext, v: VideoRecord) -> Detections:
    keyframes = ctx.artifact(v, "keyframes", KeyFrames)
    cluster = ctx.cluster()
    if cluster is not None:
        return await cluster.call_holder(_held_detector(ctx), _detect_with, v.name, str(ctx.ws.video_dir(v.name)),
                                       keyframes)
    return await asyncio.to_thread(detect_objects, v.name, ctx.ws.video_dir(v.name), keyframes, ctx.detector())


STAGE = Stage(make=_make, artifact=Detections,
              help="5. Detect objects on key frames (YOLO11 via ultralytics) and save crops.",
              upstream=("keyframes",), object_stage=True, settings=lambda ctx: {"detector": ctx.detector_name()},
              needs=("detect", (("ultralytics", "ultralytics"),)), needs_when=lambda config: is_yolo(config.detector),
              prepare=lambda ctx: ctx.detector() if ctx.cluster() is None else _held_detector(ctx))
