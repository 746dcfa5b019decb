"""The frames the authors' released inference scripts feed their models, reproduced with PyAV.

The rules below are read from ``eval/infer_qwen25vl.py`` and ``eval/infer_internvl.py`` of
NJU-LINK/MT-Video-Bench (commit 547fe24); the code here is written anew. ``n`` is the number
of frames of the video, ``k`` the number asked for (the scripts' ``--frames``, 128).

Qwen rows (``encode_video``), then one ``video`` item of ``processor.apply_chat_template``:

- **indices** (:func:`qwen_script_indices`): every frame when ``n <= k``; otherwise the ``k``
  values of ``linspace(0, n - 1, k)`` converted to integers by dropping the fraction
  (truncation, where :func:`~mtvbench.media.frames.uniform_indices` rounds).
- **size** (:func:`qwen_script_size`): when the width or the height exceeds ``max_side``
  (``--max_pixels``, 720, a side length despite its name), both are multiplied by
  ``max_side / max(w, h)`` and truncated; otherwise the size is kept. decord resizes while
  decoding; bilinear swscale (:data:`DECORD_RESIZE`) is the closest match measured.
- **clip** (:func:`write_script_mp4`): the frames go into an MP4 through OpenCV's FFmpeg
  writer with FourCC ``mp4v`` (FFmpeg's ``mpeg4`` encoder, MPEG-4 Part 2) at 15 fps. That
  writer (opencv ``modules/videoio/src/cap_ffmpeg_impl.hpp``) rounds an odd width or height
  down to even by dropping the last column or row, converts BGR to ``yuv420p`` with bicubic
  swscale (whose BGR input path rounds differently from its RGB one: fed BGR here too), and
  encodes with a bit rate of ``2 x fps x w x h`` (tolerance the same), ``qmin`` 3, a key
  frame every 12 frames and no B-frames; :data:`MP4_OPTIONS` does the same with PyAV.
  The model's processor then samples this clip again at its own settings (see
  ``docs/authors-frames.md``).

InternVL rows (``load_video`` with ``bound=None``):

- **indices** (:func:`internvl_script_indices`): ``k`` segments of ``last / k`` frames, where
  ``last = min(round(100000 * fps), n - 1)`` (the script's open bound of +-100000 s); index
  ``i`` is ``int(seg / 2 + round_half_even(seg * i))``, the middle of segment ``i``. A video
  with fewer than ``k`` frames still gets ``k`` indices (repeated frames).
- **size** (:func:`internvl_script_frames`): every frame, decoded at its own size, becomes
  one ``input_size`` x ``input_size`` tile by Pillow's bicubic resize (aspect not kept; with
  ``max_num=1`` the script's tiling is that one resize, and its torchvision ``Resize`` to the
  same size leaves the tile as it is). The paper says 448; the script's default
  ``--max_pixels 720`` would give 720.

A run under the ``authors`` protocol feeds these frames through the frame cache
(``FrameSettings.rule``; :func:`script_frames` makes a cache entry): the Qwen rows the MP4 itself
(``hf:``) or its decoded frames as images (a server, ``vllm:``), the InternVL rows the tiles.

Frames are decoded by the exact sampler of :mod:`mtvbench.media.frames` ("frame ``i``" is
the ``i``-th frame of a full decode); the script uses decord, which counts frames from the
container header and resizes with its own filter: the measured differences are in
``docs/authors-frames.md`` (``benchmarks/authors_frames.py``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Protocol

import av
import numpy as np
from pydantic import BaseModel

from mtvbench.errors import OutputError
from mtvbench.media.fingerprint import CACHE_VERSION, fingerprint
from mtvbench.media.frames import (
    SCRIPT_RULES_VERSION,
    DecodedFrames,
    FrameSettings,
    IndexRule,
    VideoError,
    VideoFrames,
    encode_frame,
    encode_image,
    probe,
    reference_frames,
    sample_rgb,
)
from mtvbench.util.files import atomic_open, describe_os_error


class FileEntries(Protocol):
    """What :func:`script_clip` needs of a frame cache (:class:`mtvbench.media.cache.FrameCache` has it):
    named here rather than imported, since the cache makes its script entries with this module."""

    def file_entry(self, key: str, build: Callable[[Path], None]) -> Path: ...


#: Bump when an index rule, the size rule or the MP4 encoding changes (part of the cache key).
RULE_VERSION = SCRIPT_RULES_VERSION
#: Frame rate of the script's clip (``cv2.VideoWriter(..., 15, ...)``).
SCRIPT_FPS = 15
#: FFmpeg encoder behind OpenCV's ``mp4v`` FourCC.
SCRIPT_CODEC = "mpeg4"
#: Encoder settings OpenCV's FFmpeg writer uses for ``mp4v`` (bit rate: see :func:`script_bit_rate`).
MP4_OPTIONS: dict[str, int] = {"gop_size": 12, "max_b_frames": 0, "qmin": 3}
#: swscale filter closest to decord's resize (measured in ``docs/authors-frames.md``).
DECORD_RESIZE = "BILINEAR"
#: The InternVL script's ``bound=None`` is a window of +-100000 s.
_OPEN_BOUND_S = 100000
#: the pixel keys of the script's ``video`` item; ``apply_chat_template`` does not read them (measured in
#: ``docs/authors-frames.md``), they are sent as the script sends them
VIDEO_ITEM_PIXELS: dict[str, int] = {"min_pixels": 4 * 32 * 32, "max_pixels": 256 * 32 * 32,
                                     "total_pixels": 16384 * 32 * 32}
_CLIP = "clip.mp4"
_META = "meta.json"


class ScriptClip(BaseModel):
    """The MP4 the Qwen script would hand to the processor, and how it was made."""

    path: Path
    #: frame indices of the source (full-decode numbering), in clip order
    indices: list[int]
    source_frames: int
    source_size: tuple[int, int]
    #: size after the script's resize rule (before the writer's even rounding)
    resized_size: tuple[int, int]
    #: size of the frames in the MP4
    size: tuple[int, int]
    frame_count: int
    fps: int = SCRIPT_FPS
    codec: str = SCRIPT_CODEC
    bytes: int
    rule_version: int = RULE_VERSION


# ---------------------------------------------------------------------------- rules


def qwen_script_indices(n: int, k: int = 128) -> list[int]:
    """Frame indices of the Qwen script: all ``n`` when ``n <= k``, else ``linspace(0, n-1, k)`` truncated."""
    if n < 1 or k < 1:
        raise ValueError(f"need n >= 1 and k >= 1, got n={n}, k={k}")
    if n <= k:
        return list(range(n))
    return [int(x) for x in np.floor(np.linspace(0, n - 1, k))]


def internvl_script_indices(n: int, fps: float, k: int = 128) -> list[int]:
    """Frame indices of the InternVL script (``get_index`` with ``bound=None``): segment middles, ``k`` always."""
    if n < 1 or k < 1:
        raise ValueError(f"need n >= 1 and k >= 1, got n={n}, k={k}")
    last = min(round(_OPEN_BOUND_S * fps), n - 1)
    seg = float(last) / k
    return [int(seg / 2 + float(np.round(seg * i))) for i in range(k)]


def qwen_script_size(w: int, h: int, max_side: int = 720) -> tuple[int, int]:
    """The Qwen script's frame size: scaled so the longer side is ``max_side`` (truncated) when a side exceeds it."""
    if w < 1 or h < 1:
        raise ValueError(f"size must be positive, got {w}x{h}")
    if w <= max_side and h <= max_side:
        return w, h
    longest = max(w, h)
    return int(max_side * w / longest), int(max_side * h / longest)


def writer_size(w: int, h: int) -> tuple[int, int]:
    """OpenCV's writer keeps even sizes only: an odd last column or row is dropped."""
    return w & ~1, h & ~1


def script_bit_rate(w: int, h: int, fps: int = SCRIPT_FPS) -> int:
    """OpenCV's ``mp4v`` bit rate for a ``w`` x ``h`` clip: ``fps*w*h``, plus half of it, twice."""
    base = fps * w * h
    return base + 2 * int(base / 2)


# ---------------------------------------------------------------------------- the Qwen clip


def _encode_mp4(frames: list[np.ndarray], dest: Path) -> tuple[int, int]:
    """Write RGB frames as the script's MP4 (even size, mpeg4, 15 fps), atomically; returns the size."""
    h0, w0 = frames[0].shape[:2]
    w, h = writer_size(w0, h0)
    if w < 2 or h < 2:
        raise VideoError(f"{dest}: frames of {w0}x{h0} are too small for the script's MP4 writer")
    try:
        with atomic_open(dest) as f, av.open(f, mode="w", format="mp4") as out:
            stream = out.add_stream(SCRIPT_CODEC, rate=SCRIPT_FPS)
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.codec_tag = "mp4v"
            cc = stream.codec_context
            cc.time_base = Fraction(1, SCRIPT_FPS)
            cc.bit_rate = cc.bit_rate_tolerance = script_bit_rate(w, h)
            cc.gop_size = MP4_OPTIONS["gop_size"]
            cc.max_b_frames = MP4_OPTIONS["max_b_frames"]
            cc.qmin = MP4_OPTIONS["qmin"]
            for i, rgb in enumerate(frames):
                # OpenCV hands swscale BGR: its bgr24 input path rounds unlike the rgb24 one
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb[:h, :w, ::-1]), format="bgr24")
                frame.pts = i
                out.mux(stream.encode(frame.reformat(format="yuv420p", interpolation="BICUBIC")))
            out.mux(stream.encode(None))
    except OutputError:
        raise
    except OSError as e:
        raise OutputError(describe_os_error(dest, e)) from e
    return w, h


def _clip_source(video: Path, frames: int, max_side: int) -> DecodedFrames[np.ndarray]:
    """The frames the Qwen script writes into its MP4: its indices, resized by its size rule (RGB)."""
    info = probe(video, exact=False)
    resized = qwen_script_size(info.width, info.height, max_side)
    settings = FrameSettings(size=resized, interpolation=DECORD_RESIZE)
    return sample_rgb(video, lambda n: qwen_script_indices(n, frames), settings)


def write_script_mp4(video: Path, dest: Path, frames: int = 128, max_side: int = 720) -> ScriptClip:
    """Write to ``dest`` the MP4 the Qwen script makes of ``video`` (see module doc); atomic."""
    video, dest = Path(video), Path(dest)
    decoded = _clip_source(video, frames, max_side)
    size = _encode_mp4(decoded.frames, dest)
    return ScriptClip(
        path=dest,
        indices=decoded.indices,
        source_frames=decoded.total_frames,
        source_size=(decoded.source_width, decoded.source_height),
        resized_size=(decoded.width, decoded.height),
        size=size,
        frame_count=len(decoded.frames),
        bytes=dest.stat().st_size,
    )


def script_clip_key(video: Path, frames: int = 128, max_side: int = 720) -> str:
    """Frame-cache key of the script's MP4 of ``video``: content, frames, max side, rule and cache versions."""
    return f"{fingerprint(video)}-qwenclip-n{frames}-m{max_side}-r{RULE_VERSION}-v{CACHE_VERSION}"


def script_clip(video: Path, cache: FileEntries, frames: int = 128, max_side: int = 720) -> ScriptClip:
    """The script's MP4 of ``video`` from the frame cache, made once (``ScriptClip.path`` is in the cache)."""
    video = Path(video)

    def build(folder: Path) -> None:
        clip = write_script_mp4(video, folder / _CLIP, frames, max_side)
        (folder / _META).write_text(clip.model_dump_json(exclude={"path"}, indent=1))

    entry = cache.file_entry(script_clip_key(video, frames, max_side), build)
    return ScriptClip.model_validate({**json.loads((entry / _META).read_text()), "path": entry / _CLIP})


# ---------------------------------------------------------------------------- a run's frames


def script_frames(video: Path, settings: FrameSettings) -> VideoFrames:
    """The frames a run feeds under a script's rule (``settings.rule``), as the frame cache stores them.

    ``qwen-script``: the script's MP4 of ``video`` (``settings.num_frames``, longer side
    ``settings.max_side``) in ``clip``, and its decoded frames (every one of them) as images, for
    backends that are sent images. ``internvl-script``: the script's ``settings.size`` tiles. Both
    record the source frame indices and times; images are encoded as ``settings`` says.
    """
    video = Path(video)
    if settings.rule == "qwen-script":
        assert settings.max_side is not None  # FrameSettings checks it
        return _qwen_frames(video, settings)
    if settings.rule == "internvl-script":
        from PIL import Image

        assert settings.size is not None  # FrameSettings checks it
        tiles = internvl_script_frames(video, settings.num_frames, settings.size[0])
        images = [encode_image(Image.fromarray(t), settings) for t in tiles.frames]
        return VideoFrames(**tiles.sample_fields(), settings=settings, jpegs=images)
    raise ValueError(f"no script frames for the frame rule {settings.rule!r}")


def _qwen_frames(video: Path, settings: FrameSettings) -> VideoFrames:
    decoded = _clip_source(video, settings.num_frames, settings.max_side or 0)
    with tempfile.TemporaryDirectory(prefix="mtvbench-clip-") as tmp:
        path = Path(tmp) / _CLIP
        w, h = _encode_mp4(decoded.frames, path)
        del decoded.frames[:]  # the source frames are in the clip now
        n = len(decoded.indices)
        own = FrameSettings(num_frames=n, max_side=None, jpeg_quality=settings.jpeg_quality, lossless=settings.lossless)
        images = [encode_frame(f, own) for f in reference_frames(path)]  # every frame of the clip, in order
        if len(images) != n:
            raise VideoError(f"{video}: the script's MP4 holds {len(images)} frames, {n} were written")
        data = path.read_bytes()
    fields = {**decoded.sample_fields(), "width": w, "height": h}
    return VideoFrames(**fields, settings=settings, jpegs=images, clip=data)


# ---------------------------------------------------------------------------- InternVL


def internvl_script_frames(video: Path, frames: int = 128, input_size: int = 448) -> DecodedFrames[np.ndarray]:
    """The InternVL script's tiles of ``video``: its indices, each frame resized to ``input_size``² (RGB, uint8)."""
    from PIL import Image

    video = Path(video)
    fps = probe(video, exact=False).avg_fps
    size = (input_size, input_size)

    def tile(rgb: np.ndarray) -> np.ndarray:
        return np.asarray(Image.fromarray(rgb).resize(size, Image.Resampling.BICUBIC))

    decoded = sample_rgb(video, internvl_rule(fps, frames), transform=tile)  # decoded at full size
    return replace(decoded, width=input_size, height=input_size)


def internvl_rule(fps: float, k: int = 128) -> IndexRule:
    """:func:`internvl_script_indices` as an index rule for :func:`~mtvbench.media.frames.sample_rgb`."""

    def rule(n: int) -> list[int]:
        return internvl_script_indices(n, fps, k)

    return rule


__all__ = [
    "DECORD_RESIZE",
    "MP4_OPTIONS",
    "RULE_VERSION",
    "SCRIPT_CODEC",
    "SCRIPT_FPS",
    "VIDEO_ITEM_PIXELS",
    "ScriptClip",
    "internvl_rule",
    "internvl_script_frames",
    "internvl_script_indices",
    "qwen_script_indices",
    "qwen_script_size",
    "script_bit_rate",
    "script_clip",
    "script_clip_key",
    "script_frames",
    "write_script_mp4",
    "writer_size",
]
