"""Synthetic videos with a known structure for the construction-pipeline tests.

A video is a list of :class:`Scene`. Each scene has a textured background (a checkerboard
of two colours of the same hue and saturation, differing in brightness) whose hue
oscillates slowly over time, so sampled frames differ in colour histogram while the
shot-change score between consecutive frames stays low. A scene change jumps hue,
saturation and brightness at once (a hard cut). Optional: one saturated object (a square
or a disc of a given colour) moving slowly, a blurred stretch and a frozen stretch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av
import cv2
import numpy as np

SIZE = (160, 120)
FPS = 10


@dataclass
class Scene:
    frames: int
    hue: int  # OpenCV hue, 0..179
    sat: int = 90
    val: tuple[int, int] = (110, 190)
    obj: tuple[str, tuple[int, int, int]] | None = None  # (shape, RGB colour)
    blur: tuple[int, int] | None = None  # frame range (scene-relative, end exclusive)
    freeze: tuple[int, int] | None = None


def _background(i: int, scene: Scene) -> np.ndarray:
    w, h = SIZE
    phase = (i % 20) / 20
    tri = 1 - abs(2 * phase - 1)  # 0..1..0 every 2 s
    hue = int(scene.hue + 24 * tri)
    yy, xx = np.mgrid[0:h, 0:w]
    checker = ((xx // 8 + yy // 8) % 2).astype(np.uint8)
    hsv = np.empty((h, w, 3), np.uint8)
    hsv[..., 0] = hue
    hsv[..., 1] = scene.sat
    hsv[..., 2] = np.where(checker == 1, scene.val[1], scene.val[0])
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def frame_image(i: int, scene: Scene) -> np.ndarray:
    img = _background(i, scene)
    if scene.obj is not None:
        shape, colour = scene.obj
        x = 30 + (i * 2) % 80
        y = 40
        if shape == "square":
            img[y : y + 24, x : x + 24] = colour
        else:
            cv2.circle(img, (x + 12, y + 12), 12, colour, -1)
    if scene.blur and scene.blur[0] <= i < scene.blur[1]:
        img = cv2.GaussianBlur(img, (0, 0), 4)
    return img


def write_scenes(path: Path, scenes: list[Scene], fps: int = FPS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=fps)
        s.width, s.height, s.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        s.options = {"preset": "veryfast", "qp": "0", "x264-params": "keyint=20:scenecut=0"}
        for scene in scenes:
            frozen: np.ndarray | None = None
            for i in range(scene.frames):
                if scene.freeze and scene.freeze[0] <= i < scene.freeze[1]:
                    if frozen is None:
                        frozen = frame_image(i, scene)
                    img = frozen
                else:
                    img = frame_image(i, scene)
                for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")):
                    out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


RED = (230, 20, 20)
BLUE = (20, 40, 230)


def three_scene_video(path: Path) -> Path:
    """15 s: cuts at 5.0 s and 10.0 s; a red square in scenes 0 and 2, a blue disc in scene 1;
    scene 1 has a blurred stretch (6.0-7.5 s) and scene 2 a frozen stretch (11.0-13.0 s)."""
    return write_scenes(path, [
        Scene(50, hue=10, obj=("square", RED)),
        Scene(50, hue=100, sat=150, val=(90, 180), obj=("disc", BLUE), blur=(10, 25)),
        Scene(50, hue=40, sat=60, val=(140, 220), obj=("square", RED), freeze=(10, 30)),
    ])
