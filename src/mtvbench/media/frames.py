"""Exact uniform frame sampling with PyAV.

"Frame ``i``" is the ``i``-th frame that a full sequential decode
(``for f in container.decode(stream)``) yields, in presentation order (like the ffmpeg
tool, packets the decoder rejects are skipped and reading stops at a read error). Sampling never
returns a nearby key frame instead: it is exact on variable frame rate files, on time
bases that are not ``1/fps`` and on MP4 edit lists (packets flagged *discard*, which the
decoder drops, are not counted as frames).

How it stays fast (:func:`sample_frames`):

1. Demux every packet once *without decoding* to learn the presentation timeline: the
   sorted pts of the packets that are not discarded. ``i`` maps to ``timeline[i]``.
2. For each target pts, find the last key frame (in decode order) at or before the
   target's packet whose pts is not after the target.
3. Group the targets into runs (several targets in one GOP share one run). A run seeks
   to its key frame, feeds packets up to its last target and then drains the decoder,
   so nothing after the last target is decoded. Packets that are not targets are
   decoded with ``skip_frame=NONREF``: frames nothing refers to are skipped, which
   cannot change any other frame.
4. Worker threads (one per CPU, at most :data:`MAX_WORKERS`), each with its own
   container and single-threaded decoder, take runs from a shared queue.
5. Each target is resized by swscale (bicubic) and encoded to JPEG once.

If the timeline cannot be trusted (packets without pts, duplicate pts, no usable key
frames) or a target does not come out, the sampler falls back to a plain sequential
decode, which is the definition itself.

Which frames are taken is a rule ``total -> indices`` (:data:`IndexRule`); the default is
:func:`uniform_indices`. Another rule (a script's own sampling, with repeats allowed) goes
through the same exact decoder: :func:`sample_frames` with ``indices=`` for JPEGs, or
:func:`sample_rgb` for the resized RGB arrays themselves (e.g. to write a video).

``FrameSettings.rule`` names the frames a run feeds (``uniform``, or an authors' script's); the frame
cache (:mod:`mtvbench.media.cache`) makes a script's frames through :mod:`mtvbench.media.authors_frames`,
and the rule is part of ``FrameSettings.key()``, so frames of one rule are never taken for another.
"""

from __future__ import annotations

import base64
import io
import logging
import os
import queue
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

import av
import numpy as np
from av.video.reformatter import VideoReformatter
from pydantic import BaseModel, Field, model_validator

from mtvbench.errors import MtvbenchError
from mtvbench.util.strict import strict

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.video.frame import VideoFrame
    from av.video.stream import VideoStream
    from PIL import Image

log = logging.getLogger(__name__)

#: swscale filter used for every resize (and for the colour conversion to RGB) unless settings say otherwise.
INTERPOLATION = "BICUBIC"
#: Decode non-target packets with ``skip_frame=NONREF`` (exact: skipped frames are unreferenced).
SKIP_NONREF = True
#: At most this many decoder threads work on one video (env ``MTVBENCH_DECODE_WORKERS`` overrides).
MAX_WORKERS = 4
#: FFmpeg "video" codecs that render text files (any .txt opens as ``tty``/``ansi``).
_TEXT_CODECS = frozenset({"ansi", "bintext", "xbin", "idf"})

#: total frame count -> the indices of the frames to take (in ``[0, total)``; any order, repeats allowed)
IndexRule = Callable[[int], Sequence[int]]
#: which frames a run feeds: ``uniform`` (this module's sampling) or the frames of an authors' script
#: (:mod:`mtvbench.media.authors_frames`: the Qwen script's MP4, the InternVL script's tiles)
FrameRule = Literal["uniform", "qwen-script", "internvl-script"]
#: Bump when a script rule, its size rule or the Qwen script's MP4 changes (part of the key of its frames).
SCRIPT_RULES_VERSION = 1
_Out = TypeVar("_Out", bytes, np.ndarray)
#: a function applied to each decoded RGB array (H, W, 3) by :func:`sample_rgb`
RgbTransform = Callable[[np.ndarray], np.ndarray]


#: the largest width or height of a fixed frame size: one such RGB frame is 200 MB already, and a
#: bigger one would exhaust memory in the decoder instead of failing with a message
MAX_FRAME_SIDE = 8192


class FrameSettings(BaseModel):
    """How frames are sampled and stored. Part of every cache key."""

    model_config = strict(frozen=True)

    num_frames: int = Field(128, ge=1)
    #: the longer side is scaled down to this (never up), aspect kept; ``None`` keeps the size
    max_side: int | None = Field(720, ge=1)
    #: fixed ``(width, height)``, e.g. ``(448, 448)``; overrides ``max_side`` (aspect not kept)
    size: tuple[int, int] | None = None
    jpeg_quality: int = Field(90, ge=1, le=100)
    #: swscale filter of the resize (``BILINEAR`` reproduces decord's resize for the authors' protocol)
    interpolation: Literal["BICUBIC", "BILINEAR"] = INTERPOLATION
    #: which frames: uniform sampling, or an authors' script's frames (``num_frames`` is its ``--frames``;
    #: ``max_side`` the Qwen script's ``--max_pixels``, ``size`` the InternVL script's square tiles)
    rule: FrameRule = "uniform"
    #: store the frames as PNG (pixels kept exactly) instead of JPEG
    lossless: bool = False
    #: ``run --sampling clip``: this share of each turn's ``num_frames`` goes inside the time ranges its text
    #: names (:func:`clip_indices`; a frame cache entry then holds the union of a video's turns' frames,
    #: :meth:`mtvbench.media.cache.FrameCache.get_indices`); None: uniform over the whole video
    clip_share: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _check_size(self) -> FrameSettings:
        if self.size is not None and (min(self.size) < 1 or max(self.size) > MAX_FRAME_SIDE):
            raise ValueError(f"size: width and height must be 1 to {MAX_FRAME_SIDE} px, got {self.size}")
        problem = script_size_problem(self.rule, self.max_side, self.size)
        if problem is not None:
            raise ValueError(problem)
        return self

    def key(self) -> str:
        """Short stable string, e.g. ``n128-m720-q90``, ``n32-448x448-q90``, ``n8-m720-q90-bilinear`` or
        ``n128-448x448-q90-internvl-script1-png``."""
        if self.size is not None:
            geom = f"{self.size[0]}x{self.size[1]}"
        elif self.max_side is not None:
            geom = f"m{self.max_side}"
        else:
            geom = "orig"
        interp = "" if self.interpolation == INTERPOLATION else f"-{self.interpolation.lower()}"
        rule = "" if self.rule == "uniform" else f"-{self.rule}{SCRIPT_RULES_VERSION}"
        clip = "" if self.clip_share is None else f"-clip{self.clip_share:g}"
        return f"n{self.num_frames}-{geom}-q{self.jpeg_quality}{interp}{rule}{clip}{'-png' if self.lossless else ''}"

    def describe(self) -> str:
        """The settings in words: ``128 frames, longer side at most 720 px, JPEG quality 90``."""
        if self.size is not None:
            geom = f"{self.size[0]}x{self.size[1]} px"
        elif self.max_side is not None:
            geom = f"longer side at most {self.max_side} px"
        else:
            geom = "at the video's own size"
        kind = "PNG" if self.lossless else f"JPEG quality {self.jpeg_quality}"
        rule = "" if self.rule == "uniform" else f", as the authors' {self.rule.removesuffix('-script')} script does"
        return f"{self.num_frames} frames, {geom}, {kind}{rule}"

    @property
    def media_type(self) -> str:
        """The MIME type of the stored frames."""
        return "image/png" if self.lossless else "image/jpeg"

    def output_size(self, width: int, height: int, sar: Fraction | None = None) -> tuple[int, int]:
        """Size of the stored frames for a ``width`` x ``height`` source (``sar``: pixel aspect)."""
        if self.size is not None:
            return self.size
        w = float(width) * (float(sar) if sar else 1.0)
        h = float(height)
        if self.max_side is not None and max(w, h) > self.max_side:
            scale = self.max_side / max(w, h)
            w, h = w * scale, h * scale
        return max(1, round(w)), max(1, round(h))


def script_size_problem(rule: str, max_side: int | None, size: tuple[int, int] | None) -> str | None:
    """Why a frame size cannot be a script's (its only size setting is ``--max_pixels N``), or None: the Qwen
    script scales the longer side to ``N`` (``max_side``), the InternVL script makes ``N`` x ``N`` tiles."""
    if rule == "qwen-script" and (size is not None or max_side is None):
        return ("the Qwen script's frames keep their aspect (its --max_pixels N is the longer side): give a "
                "longer side (--max-side N), not a fixed frame size")
    if rule == "internvl-script" and (size is None or size[0] != size[1]):
        return ("the InternVL script's frames are N x N tiles (its --max_pixels N): give a square frame size "
                "(--frame-size 448x448)")
    return None


class VideoError(MtvbenchError):
    """A video could not be read; the message names the file and what is wrong."""


class VideoInfo(BaseModel):
    """What :func:`probe` learns without decoding."""

    total_frames: int
    duration_s: float
    avg_fps: float
    width: int
    height: int
    codec: str
    #: frame count the container header claims (edit lists can make it larger than ``total_frames``)
    reported_frames: int = 0


@dataclass
class SampledFrames:
    """Which frames of a video were taken, and their size (what every kind of sampled frames records)."""

    video: Path
    indices: list[int]
    timestamps: list[float]
    width: int
    height: int
    source_width: int
    source_height: int
    total_frames: int
    duration_s: float

    def sample_fields(self) -> dict[str, object]:
        """These fields by name (no copy), to build another kind of sampled frames."""
        return {f.name: getattr(self, f.name) for f in fields(SampledFrames)}


@dataclass
class VideoFrames(SampledFrames):
    """Sampled frames of one video, encoded once: JPEG, or PNG when ``settings.lossless`` (``jpegs`` holds
    either; ``settings.media_type`` says which). Under the Qwen script's rule ``clip`` holds the script's MP4
    (the frames are its decoded frames) and ``clip_path`` where the frame cache keeps it."""

    settings: FrameSettings
    jpegs: list[bytes] = field(repr=False)
    clip: bytes | None = field(default=None, repr=False)
    clip_path: Path | None = None

    def __len__(self) -> int:
        return len(self.jpegs)

    def data_urls(self) -> list[str]:
        """``data:<media type>;base64,...`` of each frame."""
        return [f"data:{self.settings.media_type};base64,{b}" for b in self.b64()]

    def b64(self) -> list[str]:
        """Base64 of each JPEG (memoised)."""
        memo = self.__dict__.get("_b64")
        if memo is None:
            memo = [base64.b64encode(j).decode("ascii") for j in self.jpegs]
            self.__dict__["_b64"] = memo
        return memo

    def select(self, indices: Sequence[int]) -> VideoFrames:
        """The frames at these video frame ``indices`` (each must be held), in time order: one turn's frames
        out of the union of a video's turns' frames (``run --sampling clip``)."""
        pos = {i: k for k, i in enumerate(self.indices)}
        missing = [i for i in indices if i not in pos]
        if missing:
            raise KeyError(f"{self.video}: frames {missing[:5]} were not decoded")
        keep = [pos[i] for i in sorted(set(indices))]
        fields_ = {**self.sample_fields(), "indices": [self.indices[k] for k in keep],
                   "timestamps": [self.timestamps[k] for k in keep]}
        return VideoFrames(**fields_, settings=self.settings, jpegs=[self.jpegs[k] for k in keep])

    def time_metadata(self) -> dict[str, object]:
        """Where these frames lie in the video, in the keys video processors read (Qwen-VL's ``VideoMetadata``,
        vLLM's video metadata): frame ``frames_indices[k]`` of ``total_num_frames`` shows time
        ``frames_indices[k] / fps`` (``fps``: the video's mean rate, ``total_num_frames / duration``), so the times
        of frames that are not evenly spaced (``run --sampling clip``) are kept too."""
        fps = self.total_frames / self.duration_s if self.duration_s else 1.0
        return {"total_num_frames": self.total_frames, "fps": fps, "duration": self.duration_s,
                "frames_indices": list(self.indices)}

    def images(self) -> list[Image.Image]:
        """The JPEGs decoded to RGB PIL images (lazy, memoised)."""
        memo = self.__dict__.get("_images")
        if memo is None:
            from PIL import Image

            memo = []
            for j in self.jpegs:
                im = Image.open(io.BytesIO(j))
                im.load()
                memo.append(im.convert("RGB") if im.mode != "RGB" else im)
            self.__dict__["_images"] = memo
        return memo


@dataclass
class DecodedFrames(SampledFrames, Generic[_Out]):
    """Frames decoded by an index rule: ``frames[k]`` is frame ``indices[k]`` (resized RGB array or JPEG)."""

    frames: list[_Out] = field(repr=False)


def uniform_indices(total: int, num: int) -> list[int]:
    """``num`` evenly spaced indices in ``[0, total)``; every index when ``total <= num``.

    The indices are ``np.round(np.linspace(0, total - 1, num))`` (NumPy rounds halves to
    the even integer). The first and the last frame are always included.
    """
    if total < 1:
        raise ValueError(f"total must be >= 1, got {total}")
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    if total <= num:
        return list(range(total))
    return [int(i) for i in np.round(np.linspace(0, total - 1, num))]


def clip_indices(total: int, duration_s: float, num: int, ranges: Sequence[tuple[float, float]],
                 share: float) -> list[int]:
    """``num`` frames of a ``total``-frame, ``duration_s``-second video, ``share`` of them inside ``ranges``
    (seconds; ``run --sampling clip``), sorted, without repeats.

    ``round(share * num)`` frames go uniformly over the frames inside the ranges taken together (all of them
    when the ranges hold fewer), the rest uniformly over the whole video: evenly chosen among the frames
    :func:`uniform_indices` takes (outside the first part), so every turn shares them. The total is
    ``min(num, total)`` as under uniform sampling. Frame ``i`` is taken to show time ``i * duration_s /
    total`` (the decoded frames' own times are what a run records). No ranges: :func:`uniform_indices`."""
    inside: list[int] = []
    if ranges and duration_s > 0:
        chosen: set[int] = set()
        for a, b in ranges:
            first = max(0, min(total - 1, int(a * total / duration_s)))
            last = max(first, min(total - 1, int(b * total / duration_s)))
            chosen.update(range(first, last + 1))
        inside = sorted(chosen)
    if not inside:
        return uniform_indices(total, num)
    n_inside = min(len(inside), round(share * min(num, total)))
    picked = [inside[i] for i in uniform_indices(len(inside), n_inside)] if n_inside else []
    taken = set(picked)
    n_rest = min(num, total) - len(picked)
    # the whole-video frames are drawn from the uniform frames (so every turn of a video shares them, and
    # they cost no decode beyond uniform sampling's); only if those run short, from the other frames
    grid = [i for i in uniform_indices(total, num) if i not in taken]
    rest = [grid[i] for i in uniform_indices(len(grid), n_rest)] if n_rest and grid else []
    if len(rest) < n_rest:
        others = [i for i in range(total) if i not in taken and i not in set(rest)]
        rest += [others[i] for i in uniform_indices(len(others), n_rest - len(rest))]
    return sorted(picked + rest)


# ---------------------------------------------------------------------------- opening


def _open(path: Path) -> tuple[InputContainer, VideoStream]:
    if not path.exists():
        raise VideoError(f"{path}: no such file")
    if not path.is_file():
        raise VideoError(f"{path}: not a regular file")
    try:
        container = av.open(str(path), mode="r")
    except Exception as e:
        raise VideoError(f"{path}: cannot open as a video ({_why(e)})") from e
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: has no video stream")
    stream = container.streams.video[0]
    if stream.codec_context is None or not stream.codec_context.codec:
        container.close()
        raise VideoError(f"{path}: no decoder for its video stream")
    codec = stream.codec_context.codec.name
    if codec in _TEXT_CODECS:
        container.close()
        raise VideoError(f"{path}: is not a video (FFmpeg reads it as text art, codec {codec!r})")
    stream.thread_type = "AUTO"
    return container, stream


def _why(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    return f"{type(e).__name__}: {msg}" if type(e).__name__ not in msg else msg


# ---------------------------------------------------------------------------- timeline


@dataclass
class _Timeline:
    """Packets of the video stream in decode order, learned by demuxing only."""

    pts: list[int | None] = field(default_factory=list)
    dts: list[int | None] = field(default_factory=list)
    key: list[bool] = field(default_factory=list)
    discard: list[bool] = field(default_factory=list)
    duration: list[int] = field(default_factory=list)

    def shown(self) -> list[int]:
        """Sorted pts of the frames a full decode shows (packets not flagged discard)."""
        return sorted(p for p, d in zip(self.pts, self.discard, strict=True) if p is not None and not d)

    def earliest(self) -> int:
        """The smallest timestamp (dts, else pts): seeking there lands on the first packet."""
        memo = self.__dict__.get("_earliest")
        if memo is None:
            stamps = (d if d is not None else p for d, p in zip(self.dts, self.pts, strict=True))
            memo = min(x for x in stamps if x is not None)
            self.__dict__["_earliest"] = memo
        return memo

    def problem(self) -> str | None:
        """Why the seek-based path cannot be used, or ``None``."""
        if not self.pts:
            return "no packets"
        if any(p is None for p in self.pts):
            return "packets without pts"
        if len(set(self.pts)) != len(self.pts):
            return "duplicate pts"
        if not any(self.key):
            return "no key frames"
        return None


def _demux(container: InputContainer, stream: VideoStream) -> Iterator[av.Packet]:
    """``container.demux(stream)`` that ends, with a warning, at a read error (like ffmpeg does)."""
    packets = container.demux(stream)
    while True:
        try:
            pkt = next(packets)
        except StopIteration:
            return
        except av.FFmpegError as e:
            log.warning("%s: stopped reading at an error: %s", container.name, e)
            return
        yield pkt


def _scan(container: InputContainer, stream: VideoStream) -> _Timeline:
    tl = _Timeline()
    for pkt in _demux(container, stream):
        if pkt.size == 0:  # the demuxer's final flush packet
            continue
        tl.pts.append(pkt.pts)
        tl.dts.append(pkt.dts)
        tl.key.append(bool(pkt.is_keyframe))
        tl.discard.append(bool(pkt.is_discard))
        tl.duration.append(int(pkt.duration or 0))
    return tl


def _duration_s(shown: list[int], tl: _Timeline, tb: Fraction, fps: float) -> float:
    if not shown:
        return 0.0
    by_pts = {p: d for p, d in zip(tl.pts, tl.duration, strict=True) if p is not None}
    last = by_pts.get(shown[-1], 0)
    if last <= 0:
        if len(shown) > 1:
            last = int(np.median(np.diff(shown)))
        elif fps > 0:
            last = round(1 / (fps * tb))
    return float((shown[-1] - shown[0] + max(last, 0)) * tb)


def _fps(stream: VideoStream) -> float:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    return float(rate) if rate else 0.0


def probe(path: Path, *, exact: bool = True) -> VideoInfo:
    """Frame count, duration, fps, size and codec, without decoding.

    With ``exact`` (default) the packets are demuxed (not decoded) so that ``total_frames``
    is the number of frames a full decode yields; otherwise the header's values are used.
    """
    path = Path(path)
    container, stream = _open(path)
    try:
        fps = _fps(stream)
        tb = stream.time_base or Fraction(1, 1)
        reported = int(stream.frames or 0)
        total, duration = 0, 0.0
        if exact:
            tl = _scan(container, stream)
            if tl.problem() is None:
                shown = tl.shown()
                total, duration = len(shown), _duration_s(shown, tl, tb, fps)
            else:
                total = len(tl.pts) - sum(tl.discard)
        if total <= 0:
            if stream.duration:
                duration = float(stream.duration * tb)
            elif container.duration:
                duration = container.duration / av.time_base
            total = reported or (round(duration * fps) if fps else 0)
        if not duration and fps and total:
            duration = total / fps
        if exact and total and duration:
            fps = total / duration
        return VideoInfo(
            total_frames=total,
            duration_s=duration,
            avg_fps=fps,
            width=stream.codec_context.width,
            height=stream.codec_context.height,
            codec=stream.codec_context.codec.name,
            reported_frames=reported,
        )
    except VideoError:
        raise
    except Exception as e:
        raise VideoError(f"{path}: cannot read ({_why(e)})") from e
    finally:
        container.close()


# ---------------------------------------------------------------------------- encoding


class _Encoder:
    """Resize + RGB (swscale, one cached context) + JPEG (Pillow); with ``rgb`` that function of the RGB array."""

    def __init__(
        self, settings: FrameSettings, src_w: int, src_h: int, sar: Fraction | None, rgb: RgbTransform | None = None
    ) -> None:
        self.settings = settings
        self.sar = sar
        self.rgb = rgb
        self.source_width, self.source_height = src_w, src_h
        self.width = self.height = 0
        if src_w > 0 and src_h > 0:
            self.width, self.height = settings.output_size(src_w, src_h, sar)
        self._sws = VideoReformatter()

    def __call__(self, frame: VideoFrame) -> bytes | np.ndarray:
        if self.width == 0:  # the header did not say; use the first frame
            self.source_width, self.source_height = frame.width, frame.height
            self.width, self.height = self.settings.output_size(frame.width, frame.height, self.sar)
        rgb = self._sws.reformat(
            frame, width=self.width, height=self.height, format="rgb24", interpolation=self.settings.interpolation
        )
        if self.rgb is not None:
            return self.rgb(rgb.to_ndarray())
        return encode_image(rgb.to_image(), self.settings)


def encode_image(image: Image.Image, settings: FrameSettings) -> bytes:
    """One frame as stored: JPEG at ``settings.jpeg_quality``, or PNG when ``settings.lossless``."""
    buf = io.BytesIO()
    if settings.lossless:
        image.save(buf, format="PNG", compress_level=1)
    else:
        image.save(buf, format="JPEG", quality=settings.jpeg_quality)
    return buf.getvalue()


def _decode(stream: VideoStream, packet: av.Packet | None) -> list[VideoFrame]:
    """Decode one packet; a packet the decoder rejects as invalid data is skipped (as ffmpeg does)."""
    try:
        return stream.decode(packet)
    except av.InvalidDataError as e:
        log.debug("skipping an undecodable packet (pts %s): %s", getattr(packet, "pts", None), e)
        return []


def _decode_all(container: InputContainer, stream: VideoStream) -> Iterator[VideoFrame]:
    """``container.decode(stream)``, skipping undecodable packets and stopping at read errors."""
    drained = False
    for packet in _demux(container, stream):
        drained = packet.size == 0  # the demuxer's last packet flushes the decoder
        yield from _decode(stream, packet)
    if not drained:
        yield from _decode(stream, None)


class _Fallback(Exception):
    """The seek-based path cannot give exact frames; decode sequentially instead."""


# ---------------------------------------------------------------------------- seek path


def _start_keyframes(tl: _Timeline, targets: list[int], pos: dict[int, int]) -> dict[int, int]:
    keys = [i for i, k in enumerate(tl.key) if k]
    starts: dict[int, int] = {}
    for t in targets:
        j = bisect_right(keys, pos[t]) - 1
        while j >= 0 and tl.pts[keys[j]] > t:  # type: ignore[operator]
            j -= 1  # open GOP: a leading frame needs the previous GOP
        if j < 0:
            raise _Fallback(f"no key frame before pts {t}")
        starts[t] = keys[j]
    return starts


def _packets_from(
    container: InputContainer, stream: VideoStream, tl: _Timeline, pos: dict[int, int], k: int
) -> Iterator[tuple[int, av.Packet]]:
    """Seek so that the next packet yielded is packet ``k`` (a key frame), then go on in order."""
    ts = tl.dts[k] if tl.dts[k] is not None else tl.pts[k]
    for attempt in (ts, tl.earliest()):
        container.seek(attempt, stream=stream, backward=True, any_frame=False)
        started = False
        for pkt in _demux(container, stream):
            if pkt.size == 0:
                continue
            i = pos.get(pkt.pts) if pkt.pts is not None else None
            if i is None:
                raise _Fallback(f"unknown packet pts {pkt.pts} after seeking")
            if not started:
                if i > k:
                    break  # landed after the key frame: retry from the start
                if i < k:
                    continue  # landed earlier: skip without decoding
                started = True
            yield i, pkt
        else:
            if not started:
                raise _Fallback(f"seek to packet {k} found no packets")
            return
    raise _Fallback(f"could not seek to key frame packet {k}")


def _plan_runs(targets: list[int], pos: dict[int, int], starts: dict[int, int]) -> list[list[int]]:
    """Group sorted targets into runs: one seek each, then decoding forward only.

    A target joins the current run when its key frame lies inside the run (the run's
    decoder has already been there), so one GOP is decoded once for all its targets.
    """
    runs: list[list[int]] = []
    run_start = last = -1
    for t in targets:
        k = starts[t]
        if not runs or k < run_start or k > last:
            runs.append([t])
            run_start, last = k, pos[t]
        else:
            runs[-1].append(t)
            last = max(last, pos[t])
    return runs


def _decode_run(
    container: InputContainer,
    stream: VideoStream,
    tl: _Timeline,
    pos: dict[int, int],
    k: int,
    run: list[int],
    convert: Callable[[VideoFrame], bytes | np.ndarray],
    got: dict[int, bytes | np.ndarray],
) -> None:
    """Seek to key frame packet ``k``, feed packets up to the run's last target, then drain.

    Draining (instead of feeding more packets until the decoder's reorder delay releases
    the target) means no packet after the last target is ever decoded.
    """
    want = set(run)
    last = max(pos[t] for t in run)
    cc = stream.codec_context

    def take(frames: list[VideoFrame]) -> None:
        for f in frames:
            if f.pts in want and f.pts not in got:
                if f.is_corrupt:
                    raise _Fallback(f"frame at pts {f.pts} decoded as corrupt")
                got[f.pts] = convert(f)

    try:
        for i, pkt in _packets_from(container, stream, tl, pos, k):
            if SKIP_NONREF:
                cc.skip_frame = "DEFAULT" if pkt.pts in want else "NONREF"
            take(_decode(stream, pkt))
            if i >= last:
                break
    finally:
        cc.skip_frame = "DEFAULT"
    take(_decode(stream, None))  # the next run seeks, which resets the drained decoder
    missing = want.difference(got)
    if missing:
        raise _Fallback(f"frame at pts {min(missing)} did not come out of the decoder")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _workers() -> int:
    env = os.environ.get("MTVBENCH_DECODE_WORKERS", "")
    return max(1, int(env)) if env.isdigit() else min(_cpus(), MAX_WORKERS)


def _decode_worker(
    path: Path,
    tl: _Timeline,
    pos: dict[int, int],
    starts: dict[int, int],
    todo: queue.SimpleQueue[list[int]],
    enc: _Encoder,
    threads: int,
    failed: threading.Event,
) -> dict[int, bytes | np.ndarray]:
    """Take runs from ``todo`` until it is empty; own container and decoder (``threads``: 0 = auto)."""
    container, stream = _open(path)
    got: dict[int, bytes | np.ndarray] = {}
    try:
        if threads == 1:
            stream.thread_type = "NONE"  # type: ignore[assignment]
        stream.codec_context.thread_count = threads
        while not failed.is_set():
            try:
                run = todo.get_nowait()
            except queue.Empty:
                break
            _decode_run(container, stream, tl, pos, starts[run[0]], run, enc, got)
    except BaseException:
        failed.set()  # the other workers stop too: the caller falls back or raises
        raise
    finally:
        container.close()
    return got


def _decode_parallel(
    path: Path,
    tl: _Timeline,
    targets: list[int],
    settings: FrameSettings,
    size: tuple[int, int, Fraction | None],
    rgb: RgbTransform | None = None,
) -> tuple[dict[int, bytes | np.ndarray], _Encoder]:
    """Decode the sorted, distinct targets (pts -> JPEG or RGB array); runs are shared out to worker threads.

    Each worker has its own container and a single-threaded decoder and takes the next run
    when it is done with one (PyAV releases the GIL while decoding). On few CPUs this
    scales better than FFmpeg's frame threads, which gain little on packets skipped as
    non-reference and restart at every seek.
    """
    pos = {p: i for i, p in enumerate(tl.pts) if p is not None}
    starts = _start_keyframes(tl, targets, pos)
    runs = _plan_runs(targets, pos, starts)
    todo: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
    for run in runs:
        todo.put(run)
    src_w, src_h, sar = size
    workers = min(_workers(), len(runs)) if src_w and src_h else 1
    encoders = [_Encoder(settings, src_w, src_h, sar, rgb) for _ in range(workers)]
    failed = threading.Event()
    if workers == 1:
        return _decode_worker(path, tl, pos, starts, todo, encoders[0], 0, failed), encoders[0]
    threads = max(1, _cpus() // workers)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mtvbench-decode") as pool:
        futures = [pool.submit(_decode_worker, path, tl, pos, starts, todo, e, threads, failed) for e in encoders]
        got: dict[int, bytes | np.ndarray] = {}
        for f in futures:
            got.update(f.result())
    return got, encoders[0]


# ---------------------------------------------------------------------------- fallback


def _rule_indices(rule: IndexRule, total: int, path: Path) -> list[int]:
    """The rule's indices for ``total`` frames, checked to lie in ``[0, total)``."""
    indices = [int(i) for i in rule(total)]
    if not indices:
        raise VideoError(f"{path}: the frame index rule chose no frame of {total}")
    bad = next((i for i in indices if not 0 <= i < total), None)
    if bad is not None:
        raise VideoError(f"{path}: frame index {bad} is outside 0..{total - 1}")
    return indices


def _sequential(
    path: Path, settings: FrameSettings, expected_total: int | None, rule: IndexRule, rgb: RgbTransform | None = None
) -> DecodedFrames:
    """Full decode: the definition of frame indices. Two passes only if the count is unknown."""
    total = expected_total
    for _ in range(2):
        container, stream = _open(path)
        try:
            fps = _fps(stream)
            indices = _rule_indices(rule, total, path) if total else []
            wanted = set(indices)
            out: dict[int, bytes | np.ndarray] = {}
            times: list[float] = []
            enc: _Encoder | None = None
            n = 0
            last_s = 0.0  # duration of the last frame
            for frame in _decode_all(container, stream):
                t = frame.time
                times.append(float(t) if t is not None else (n / fps if fps else float(n)))
                last_s = float(frame.duration * frame.time_base) if frame.duration and frame.time_base else 0.0
                if n in wanted:
                    if enc is None:
                        enc = _Encoder(settings, frame.width, frame.height, stream.sample_aspect_ratio, rgb)
                    out[n] = enc(frame)
                n += 1
            if n == 0:
                raise VideoError(f"{path}: no decodable video frames")
            if n == total and len(out) == len(wanted) and enc is not None:
                t0 = times[0]
                step = last_s or ((times[-1] - t0) / (n - 1) if n > 1 else (1 / fps if fps else 0.0))
                return DecodedFrames(
                    video=path,
                    indices=indices,
                    timestamps=[times[i] - t0 for i in indices],
                    width=enc.width,
                    height=enc.height,
                    source_width=enc.source_width,
                    source_height=enc.source_height,
                    total_frames=n,
                    duration_s=times[-1] - t0 + step,
                    frames=[out[i] for i in indices],
                )
            total = n
        except VideoError:
            raise
        except Exception as e:
            raise VideoError(f"{path}: decoding failed ({_why(e)})") from e
        finally:
            container.close()
    raise VideoError(f"{path}: frame count changes between two full decodes")


# ---------------------------------------------------------------------------- entry points


def _sample(path: Path, settings: FrameSettings, rule: IndexRule, rgb: RgbTransform | None) -> DecodedFrames:
    """Decode the frames ``rule`` picks, exactly (see module doc); seek path first, else sequential."""
    container, stream = _open(path)
    reason: str | None = None
    total_hint: int | None = None
    try:
        tb = stream.time_base or Fraction(1, 1)
        fps = _fps(stream)
        tl = _scan(container, stream)
        reason = tl.problem()
        if reason is None and stream.codec_context.codec.intra_only is False and all(tl.key) and len(tl.key) > 1:
            reason = "every packet is flagged key frame"
        if reason is None:
            shown = tl.shown()
            total_hint = len(shown)
            if not shown:
                raise VideoError(f"{path}: has no frames to show")
            indices = _rule_indices(rule, len(shown), path)
            targets = sorted({shown[i] for i in indices})
            size = (stream.codec_context.width, stream.codec_context.height, stream.sample_aspect_ratio)
            container.close()  # the workers open their own
            try:
                got, enc = _decode_parallel(path, tl, targets, settings, size, rgb)
            except _Fallback as e:
                reason = str(e)
            else:
                return DecodedFrames(
                    video=path,
                    indices=indices,
                    timestamps=[float((shown[i] - shown[0]) * tb) for i in indices],
                    width=enc.width,
                    height=enc.height,
                    source_width=enc.source_width,
                    source_height=enc.source_height,
                    total_frames=len(shown),
                    duration_s=_duration_s(shown, tl, tb, fps),
                    frames=[got[shown[i]] for i in indices],
                )
    except VideoError:
        raise
    except Exception as e:
        raise VideoError(f"{path}: cannot decode ({_why(e)})") from e
    finally:
        container.close()

    log.warning("%s: exact seeking not possible (%s); decoding sequentially", path, reason)
    return _sequential(path, settings, total_hint, rule, rgb)


def sample_frames(
    path: Path, settings: FrameSettings | None = None, *, indices: IndexRule | None = None
) -> VideoFrames:
    """Decode ``settings.num_frames`` uniformly spaced frames of ``path`` exactly (see module doc).

    ``indices`` replaces the uniform rule (``settings.num_frames`` is then not used); the
    frame cache keys on ``settings`` only, so frames taken by another rule are not cached there.
    """
    path = Path(path)
    settings = settings or FrameSettings()
    rule = indices or (lambda total: uniform_indices(total, settings.num_frames))
    d = _sample(path, settings, rule, None)
    return VideoFrames(**d.sample_fields(), settings=settings, jpegs=d.frames)


def sample_rgb(
    path: Path, indices: IndexRule, settings: FrameSettings | None = None, transform: RgbTransform | None = None
) -> DecodedFrames[np.ndarray]:
    """The frames ``indices`` picks, decoded exactly and resized as ``settings`` says, as RGB arrays (H, W, 3).

    Same decoder, resize and fallback as :func:`sample_frames`; no JPEG step. ``settings``
    defaults to the source size (``max_side=None``); ``settings.num_frames`` is not used.
    ``transform`` runs on each array as soon as its frame is decoded and only its result is
    kept (so a further resize of full-size frames never holds them all in memory); the
    reported ``width``/``height`` are then those of the resize before it.
    """
    path = Path(path)
    return _sample(path, settings or FrameSettings(max_side=None), indices, transform or _same)


def _same(rgb: np.ndarray) -> np.ndarray:
    return rgb


def reference_frames(path: Path) -> Iterator[VideoFrame]:
    """Every frame of a full sequential decode (the definition of frame indices; for tests)."""
    container, stream = _open(Path(path))
    try:
        yield from _decode_all(container, stream)
    finally:
        container.close()


def encode_frame(frame: VideoFrame, settings: FrameSettings, sar: Fraction | None = None) -> bytes:
    """Resize and JPEG-encode one decoded frame exactly as :func:`sample_frames` does."""
    return _Encoder(settings, frame.width, frame.height, sar)(frame)


__all__ = [
    "SCRIPT_RULES_VERSION",
    "DecodedFrames",
    "FrameRule",
    "FrameSettings",
    "IndexRule",
    "RgbTransform",
    "SampledFrames",
    "VideoError",
    "VideoFrames",
    "VideoInfo",
    "encode_frame",
    "encode_image",
    "probe",
    "reference_frames",
    "sample_frames",
    "script_size_problem",
    "sample_rgb",
    "uniform_indices",
]

