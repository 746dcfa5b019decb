"""The object detector of a build (a resource the builder loads once, like the text similarity).

Any object implementing :class:`Detector` can be used (tests feed a deterministic colour
detector); the default is :class:`YoloDetector`, YOLO11 through ``ultralytics`` (paper
§3.2 uses YOLOv11). ``ultralytics`` is imported lazily. The weights are a local file
(e.g. ``yolo11n.pt``) — never downloaded by this toolkit: a missing file is a clear error.
A ``.yaml`` model config (e.g. ``yolo11n.yaml``) builds a randomly initialised network,
which is only useful for testing the plumbing.

A custom detector is named on the command line as ``module:factory`` (a callable that
returns a :class:`Detector`). The detect stage (:mod:`mtvbench.construct.stages.detect`) runs it
on the key frames.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel

from mtvbench.errors import MissingExtraError, MtvbenchError

#: the detector of a build that names none (``detector: yolo`` without ``detector_weights``)
DEFAULT_WEIGHTS = "yolo11n.pt"


class Box(BaseModel):
    label: str
    confidence: float
    x1: float
    y1: float
    x2: float
    y2: float


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

    def __init__(self, weights: str | Path = DEFAULT_WEIGHTS, conf: float = 0.25, imgsz: int = 640,
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


def is_yolo(spec: str | None) -> bool:
    """Whether a ``detector`` setting names YOLO11 (the default)."""
    return spec in (None, "", "yolo")


def detector_label(spec: str | None, weights: str | None) -> str:
    """The name a detector setting records (``yolo:yolo11n.pt``, or the ``module:factory`` spec)."""
    return f"yolo:{weights or DEFAULT_WEIGHTS}" if is_yolo(spec) else str(spec)


def load_detector(spec: str | None, weights: str | None = None) -> Detector:
    """``None``/``'yolo'`` -> :class:`YoloDetector` (``weights``); ``'module:factory'`` -> that factory's detector."""
    if is_yolo(spec):
        return YoloDetector(weights or DEFAULT_WEIGHTS)
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
