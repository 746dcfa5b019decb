"""The ultralytics YOLO11 path of the detect stage, with a network built from the YOLO11 config.

``YOLO("yolo11n.yaml")`` builds randomly initialised weights without any download, so the
boxes are meaningless; the test checks the plumbing (lazy import, colour order, box
conversion, crops) and the clear error for missing weights. Skipped when torch or
ultralytics cannot be imported (install: ``pip install 'mtvbench[detect]'``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mtvbench.construct.detector import Detector, DetectorError, YoloDetector, load_detector
from mtvbench.construct.stages.detect import detect_objects
from mtvbench.construct.stages.keyframes import extract_keyframes
from tests.support.extras import require


def test_missing_weights_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DetectorError, match="weights not found.*nothing is downloaded"):
        YoloDetector(tmp_path / "yolo11n.pt")
    with pytest.raises(DetectorError, match="weights not found"):
        load_detector("yolo", str(tmp_path / "missing.pt"))
    with pytest.raises(DetectorError, match="module:factory"):
        load_detector("not-a-factory")


@pytest.mark.torch
def test_yolo11_from_config_runs_on_key_frames(scene_video: Path, tmp_path: Path) -> None:
    require("detect", "torch", "ultralytics")
    det = YoloDetector("yolo11n.yaml", conf=0.0, imgsz=160, device="cpu", max_det=5)
    assert isinstance(det, Detector) and det.name == "yolo:yolo11n.yaml"
    boxes = det.detect(np.zeros((120, 160, 3), np.uint8) + 128)
    assert 1 <= len(boxes) <= 5  # random weights, confidence 0: some boxes always come out
    for b in boxes:
        assert 0 <= b.confidence <= 1 and b.x1 <= b.x2 and b.y1 <= b.y2 and isinstance(b.label, str)
    kf = extract_keyframes("three", scene_video, tmp_path / "keyframes")
    dets = detect_objects("three", tmp_path, kf, det, min_side=1)
    assert dets.detector == "yolo:yolo11n.yaml" and dets.detections
    assert all((tmp_path / d.crop).is_file() for d in dets.detections)
    assert all(d.frame in {f.frame for f in kf.frames} for d in dets.detections)
