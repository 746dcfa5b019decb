"""Videos whose frames show their own time, and a reader that tells it back from a (JPEG) frame.

Frame ``i`` of a ``fps``-frame-per-second video shows its time in tenths of a second (``round(10 * i / fps)``)
as 12 black or white blocks across the frame, big enough to survive JPEG, so a test reads from the images a
server received which times of the video the model was sent.
"""

from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np
from PIL import Image

BITS = 12
BLOCK = 16


def timed_frame(tenths: int) -> np.ndarray:
    """An RGB frame showing ``tenths`` (of a second) as ``BITS`` blocks, least significant bit first."""
    img = np.zeros((BLOCK * 2, BLOCK * BITS, 3), np.uint8)
    for b in range(BITS):
        if (tenths >> b) & 1:
            img[:, b * BLOCK:(b + 1) * BLOCK] = 255
    return img


def write_timed_video(path: Path, seconds: float, fps: int = 10) -> Path:
    """``seconds`` of video at ``fps``, each frame showing its own time (keyframe every second)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = BLOCK * BITS, BLOCK * 2, "yuv420p"
        stream.options = {"g": str(fps), "bf": "2"}
        for i in range(round(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(timed_frame(round(10 * i / fps)), format="rgb24")
            for p in stream.encode(frame):
                out.mux(p)
        for p in stream.encode():
            out.mux(p)
    return path


def read_time(image: bytes) -> float:
    """The time (seconds) a frame of :func:`write_timed_video` shows."""
    arr = np.asarray(Image.open(io.BytesIO(image)).convert("L"), dtype=float)
    tenths = sum(1 << b for b in range(BITS) if arr[BLOCK // 2:BLOCK * 3 // 2,
                                                      b * BLOCK + 4:(b + 1) * BLOCK - 4].mean() > 128)
    return tenths / 10
