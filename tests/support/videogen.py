"""Small synthetic test videos written with PyAV (libx264), including awkward ones.

Every frame looks different from its neighbours (moving bars, a colour ramp and the
frame number drawn as a bit pattern), so an off-by-one frame never compares equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def pattern(i: int, width: int, height: int) -> np.ndarray:
    """RGB frame ``i``: distinct from every other frame index."""
    y, x = np.mgrid[0:height, 0:width]
    img = np.empty((height, width, 3), np.uint8)
    img[..., 0] = (x * 255 // max(width - 1, 1) + 9 * i) % 256
    img[..., 1] = (y * 255 // max(height - 1, 1) + 5 * i) % 256
    img[..., 2] = ((x + y + 3 * i) % 64) * 4
    bar = (i * 7) % width
    img[:, bar : bar + max(2, width // 32)] = 255
    row = (i * 3) % height
    img[row : row + max(2, height // 24), :] = (0, 0, 0)
    # frame number as 10 black/white blocks in the top-left corner
    block = max(2, width // 40)
    for b in range(10):
        img[:block, b * block : (b + 1) * block] = 255 if (i >> b) & 1 else 0
    return img


def write_video(
    path: Path,
    n: int,
    *,
    size: tuple[int, int] = (160, 120),
    rate: Fraction | int = 25,
    time_base: Fraction | None = None,
    pts: Sequence[int] | None = None,
    gop: int = 12,
    bframes: int = 2,
    open_gop: bool = False,
    codec: str = "libx264",
    faststart: bool = False,
) -> Path:
    """Encode ``n`` pattern frames. ``pts`` (in ``time_base``) makes a variable frame rate file;
    ``faststart`` puts the MP4 index first (so a truncated file still opens)."""
    width, height = size
    rate = Fraction(rate)
    tb = time_base or 1 / rate
    if pts is None:
        step = 1 / (rate * tb)
        pts = [round(i * step) for i in range(n)]
    options = {"movflags": "faststart"} if faststart else {}
    with av.open(str(path), "w", options=options) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.time_base = tb
        stream.codec_context.time_base = tb
        stream.codec_context.gop_size = gop
        stream.codec_context.max_b_frames = bframes
        if codec == "libx264":
            params = f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes={bframes}"
            if open_gop:
                params += ":open-gop=1"
            stream.options = {"preset": "veryfast", "x264-params": params}
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
            frame.pts = int(pts[i])
            frame.time_base = tb
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def shown_pts(path: Path) -> list[int]:
    """Sorted pts of the packets that are not flagged discard."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return sorted(p.pts for p in c.demux(s) if p.size and not p.is_discard)


def cut_copy(src: Path, dst: Path, start: int) -> Path:
    """Stream-copy ``src`` from shown frame ``start`` on, like ``ffmpeg -ss X -c copy``.

    Copying starts at the key frame before the cut and timestamps are shifted so the cut
    point is 0; the packets before it get negative pts, and the MP4 muxer writes an edit
    list that hides them (the demuxer then flags them discard).
    """
    cut_pts = shown_pts(src)[start]
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        packets = [p for p in inp.demux(ist) if p.size]
        first = max(i for i, p in enumerate(packets) if p.is_keyframe and p.pts <= cut_pts)
        for p in packets[first:]:
            p.pts -= cut_pts
            p.dts -= cut_pts
            p.stream = ost
            out.mux(p)
    return dst


def remux(src: Path, dst: Path) -> Path:
    """Stream-copy into another container (e.g. ``.mkv`` with a 1/1000 time base, ``.ts``)."""
    with av.open(str(src)) as inp, av.open(str(dst), "w") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        for p in inp.demux(ist):
            if not p.size:
                continue
            p.stream = ost
            out.mux(p)
    return dst


def write_audio(path: Path, seconds: float = 0.5) -> Path:
    """A file with an audio stream only."""
    rate = 8000
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=rate)
        samples = np.zeros((1, int(rate * seconds)), np.int16)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path
