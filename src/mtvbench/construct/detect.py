"""Stage 5 — object detection on the kept key frames; crops saved for captioning.

Any object implementing :class:`Detector` can be used (tests feed a deterministic colour
detector); the default is :class:`YoloDetector`, YOLO11 through ``ultralytics`` (paper
§3.2 uses YOLOv11). ``ultralytics`` is imported lazily. The weights are a local file
(e.g. ``yolo11n.pt``) — never downloaded by this toolkit: a missing file is a clear error.
A ``.yaml`` model config (e.g. ``yolo11n.yaml``) builds a randomly initialised network,
which is only useful for testing the plumbing.

A custom detector can be named on the command line as ``module:factory`` (a callable that
returns a :class:`Detector`).
"""

from __future__ import annotations

import asyncio
import importlib
import io
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from mtvbench.construct.records import Box, Detection, Detections, KeyFrames, VideoRecord
from mtvbench.construct.stages import Stage, StageContext
from mtvbench.errors import MissingExtraError, MtvbenchError
from mtvbench.util.files import atomic_write_bytes, ensure_dir

if TYPE_CHECKING:
    from mtvbench.construct.config import BuildConfig


@runtime_checkable
class Detector(Protocol):
    name: str

    def detect(self, image: np.ndarray) -> list[Box]:
        """Boxes in pixel coordinates of ``image`` (RGB, HxWx3, uint8)."""
        ...


class DetectorError(MtvbenchError):
    pass


class YoloDetector:
    """YOLO11 via ultralytics. ``weights``: a local ``.pt`` file, or a ``.yaml`` config (random weights)."""

    def __init__(self, weights: str | Path = "yolo11n.pt", conf: float = 0.25, imgsz: int = 640,
                 device: str | None = None, max_det: int = 20):
        weights = str(weights)
        if not weights.endswith((".yaml", ".yml")) and not Path(weights).is_file():
            raise DetectorError(
                f"YOLO weights not found: {weights}. Download them once (e.g. yolo11n.pt from the Ultralytics "
                "releases) and pass the file with --detector-weights PATH; nothing is downloaded automatically.")
        try:
            from ultralytics import YOLO
        except ImportError as e:
            raise MissingExtraError("the detect stage (YOLO11)", "detect", "ultralytics") from e
        self.model = YOLO(weights)
        self.name = f"yolo:{Path(weights).name}"
        self.conf, self.imgsz, self.device, self.max_det = conf, imgsz, device, max_det

    def detect(self, image: np.ndarray) -> list[Box]:
        # ultralytics expects BGR for numpy input
        results = self.model.predict(np.ascontiguousarray(image[..., ::-1]), conf=self.conf, imgsz=self.imgsz,
                                     device=self.device, max_det=self.max_det, verbose=False)
        boxes: list[Box] = []
        for r in results:
            names = r.names
            if r.boxes is None:
                continue
            xyxy = r.boxes.xyxy.cpu().numpy()
            confs = r.boxes.conf.cpu().numpy()
            classes = r.boxes.cls.cpu().numpy().astype(int)
            for (x1, y1, x2, y2), c, k in zip(xyxy, confs, classes):
                boxes.append(Box(label=str(names.get(int(k), k)) if isinstance(names, dict) else str(k),
                                 confidence=float(c), x1=float(x1), y1=float(y1), x2=float(x2), y2=float(y2)))
        return boxes


def load_detector(spec: str | None, weights: str | None = None) -> Detector:
    """``None``/``'yolo'`` -> :class:`YoloDetector` (``weights``); ``'module:factory'`` -> that factory's detector."""
    if spec in (None, "", "yolo"):
        return YoloDetector(weights or "yolo11n.pt")
    module, _, attr = spec.partition(":")
    if not attr:
        raise DetectorError(f"--detector must be 'yolo' or 'module:factory', got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise DetectorError(f"--detector {spec}: cannot import {module} ({e})") from e
    except AttributeError as e:
        raise DetectorError(f"--detector {spec}: {module} has no {attr!r}") from e
    try:
        det = factory()
    except MtvbenchError:
        raise
    except Exception as e:  # noqa: BLE001 - user code: its failure is a setup problem, named
        raise DetectorError(f"--detector {spec}: the factory failed ({type(e).__name__}: {e})") from e
    if not isinstance(det, Detector):
        raise DetectorError(f"{spec} did not return a Detector (needs .name and .detect(image))")
    return det


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


async def _run(ctx: StageContext, v: VideoRecord) -> Detections:
    keyframes = ctx.artifact(v, "keyframes", KeyFrames)
    cluster = ctx.cluster()
    if cluster is not None:  # the detector runs on the cluster (a GPU actor), loaded there once
        c = ctx.config
        return await cluster.detect(c.detector, c.detector_weights, v.name, ctx.ws.video_dir(v.name), keyframes)
    return await asyncio.to_thread(detect_objects, v.name, ctx.ws.video_dir(v.name), keyframes, ctx.detector())


def _yolo(config: BuildConfig) -> bool:
    return config.detector in (None, "", "yolo")


STAGE = Stage(run=_run, artifact=Detections,
              help="5. Detect objects on key frames (YOLO11 via ultralytics) and save crops.",
              upstream=("keyframes",), object_stage=True, settings=lambda ctx: {"detector": ctx.detector_name()},
              needs=("detect", (("ultralytics", "ultralytics"),)), needs_when=_yolo,
              prepare=lambda ctx: ctx.detector() if ctx.cluster() is None else None)
