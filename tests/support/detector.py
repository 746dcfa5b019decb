"""A deterministic object detector for the synthetic scene videos (no model weights)."""

from __future__ import annotations

import numpy as np

from mtvbench.construct.detector import Box


class ColourBlobDetector:
    """A deterministic detector for the synthetic videos: one box per saturated colour blob.

    Pixels with HSV saturation >= 200 and value >= 120 are object pixels (the test videos'
    backgrounds have saturation <= 150). Connected components of at least ``min_area``
    pixels become boxes; the label is ``shape`` for all, so the bank must tell them apart
    by their features.
    """

    name = "colour-blob"

    def __init__(self, min_area: int = 60):
        self.min_area = min_area

    def detect(self, image: np.ndarray) -> list[Box]:
        import cv2

        hsv = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2HSV)
        mask = ((hsv[..., 1] >= 200) & (hsv[..., 2] >= 120)).astype(np.uint8)
        n, _, stats, _ = cv2.connectedComponentsWithStats(mask)
        out = []
        for i in range(1, n):
            x, y, w, h, area = stats[i]
            if area >= self.min_area:
                out.append(Box(label="shape", confidence=1.0, x1=float(x), y1=float(y), x2=float(x + w),
                               y2=float(y + h)))
        return out


def make_detector() -> ColourBlobDetector:
    return ColourBlobDetector()
