"""Is a file a usable video? A cheap check with PyAV, cached by content.

:func:`check_video` answers before any model is asked anything (``mtvbench validate`` and the
start of ``mtvbench run``), so that a broken file is one clear message instead of a failed
video in the middle of a run (which "run again to retry" never fixes). It checks, in order:

1. the path is a regular file (a FIFO would block the reader forever) and is not empty;
2. PyAV opens it as a container with a video stream that has a decoder (audio-only files,
   text renamed ``.mp4``, images of text and still images such as a JPEG named ``.mp4`` are refused);
3. the first frame decodes (undecodable packets are skipped as the sampler skips them, up to
   :data:`FIRST_FRAME_PACKETS` packets);
4. for MP4/MOV files, whose header indexes every frame, the packets of the last GOP are read
   (demuxed, not decoded): when the data ends more than ``max(1 s, 2 %)`` before the
   duration the header promises, the file is truncated (an interrupted download or copy).

It reports the codec, the size, the duration and the frame count of the header. Results
(good or bad) are cached on disk by the content fingerprint of :mod:`mtvbench.media.cache`
(``<cache>/<fp[:2]>/<fp>-v<PROBE_VERSION>.json``), so validating the same data again reads
3 MiB per video instead of opening it; a cache that cannot be written is skipped.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import av
from pydantic import BaseModel, Field, ValidationError

from mtvbench.errors import MtvbenchError
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import _TEXT_CODECS, VideoError, _decode, _demux, _why
from mtvbench.util.files import atomic_write_text
from mtvbench.util.paths import cache_dir
from mtvbench.util.strict import STRICT

log = logging.getLogger(__name__)

#: bump when the checks change so that cached verdicts are not reused
PROBE_VERSION = 2
#: at most this many packets are fed to the decoder to get the first frame
FIRST_FRAME_PACKETS = 512
#: at most this many packets are read from the last key frame to the end
TAIL_PACKETS = 4096
#: a file whose video data ends this much before its header's duration is truncated
TRUNCATION_MIN_S = 1.0
TRUNCATION_SHARE = 0.02
#: video probes in flight at once (PyAV releases the GIL while demuxing and decoding)
PROBE_WORKERS = 4


class VideoCheck(BaseModel):
    """The verdict on one video file; ``problem`` is None when it is usable. Read back from the cache strictly
    (no unknown key, counts and seconds finite and >= 0): a cached verdict that is not one is probed again."""

    model_config = STRICT

    problem: str | None = None
    codec: str | None = None
    width: int = Field(0, ge=0)
    height: int = Field(0, ge=0)
    duration_s: float = Field(0.0, ge=0)
    #: frame count the header states (0: the container does not say)
    frames: int = Field(0, ge=0)
    fps: float = Field(0.0, ge=0)
    #: True when the verdict came from the cache
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.problem is None

    def summary(self) -> str:
        frames = f", {self.frames} frames" if self.frames else ""
        return f"{self.codec} {self.width}x{self.height}, {self.duration_s:.1f} s{frames}"


def default_probe_cache() -> Path:
    return cache_dir("probe")


def _bad(problem: str) -> VideoCheck:
    return VideoCheck(problem=problem)


def _reason(e: BaseException) -> str:
    """FFmpeg's own words without the file name it appends (the message names the file already)."""
    if isinstance(e, av.FFmpegError) and e.strerror:
        return str(e.strerror)
    return _why(e)


def _regular(path: Path) -> VideoCheck | None:
    """A verdict when ``path`` is not a non-empty regular file (checked before anything opens it)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return _bad("no such file")
    except OSError as e:
        return _bad(f"cannot be read ({e.strerror or e})")
    if stat.S_ISDIR(st.st_mode):
        return _bad("is a folder, not a video file")
    if not stat.S_ISREG(st.st_mode):
        return _bad("is not a regular file (a FIFO, device or socket), not a video file")
    if st.st_size == 0:
        return _bad("is empty (0 bytes)")
    if not os.access(path, os.R_OK):
        return _bad("cannot be read (permission denied)")
    return None


def _tail_end(container: av.container.InputContainer, stream: av.video.stream.VideoStream, end: int) -> int | None:
    """The end timestamp of the last packet, read from the last key frame before ``end``; None when unknown."""
    try:
        container.seek(max(end - 1, 0), stream=stream, backward=True, any_frame=False)
    except av.FFmpegError as e:
        log.debug("%s: cannot seek to the end (%s); tail not checked", container.name, e)
        return None
    last: int | None = None
    for n, pkt in enumerate(_demux(container, stream)):
        if n >= TAIL_PACKETS:
            return None  # a very long last GOP: not worth reading here
        ts = pkt.pts if pkt.pts is not None else pkt.dts
        if pkt.size == 0 or ts is None:
            continue
        last = max(last if last is not None else ts, ts + int(pkt.duration or 0))
    return last if last is not None else -1


def _probe(path: Path) -> VideoCheck:
    try:
        container = av.open(str(path), mode="r")
    except Exception as e:  # noqa: BLE001 - any failure to open is the verdict
        return _bad(f"cannot be opened as a video: {_reason(e)} (not a video file, or an incomplete download?)")
    with container:
        if not container.streams.video:
            kinds = sorted({s.type for s in container.streams})
            return _bad(f"has no video stream (streams: {', '.join(kinds) or 'none'}; an audio-only file, "
                        "or an incomplete download?)")
        if container.format.name == "image2" or container.format.name.endswith("_pipe"):
            return _bad(f"is a still image, not a video (FFmpeg reads it as {container.format.name!r}; a picture "
                        "renamed to a video's name?)")
        stream = container.streams.video[0]
        cc = stream.codec_context
        if cc is None or not cc.codec:
            return _bad("has no decoder for its video stream")
        if cc.codec.name in _TEXT_CODECS:
            return _bad(f"is not a video (FFmpeg reads it as text art, codec {cc.codec.name!r})")
        tb = stream.time_base
        duration = float(stream.duration * tb) if stream.duration and tb else (
            container.duration / av.time_base if container.duration else 0.0)
        frames = int(stream.frames or 0)
        rate = stream.guessed_rate or stream.average_rate
        fps = frames / duration if frames and duration else float(rate) if rate else 0.0
        info = VideoCheck(codec=cc.codec.name, width=cc.width, height=cc.height, duration_s=duration,
                          frames=frames, fps=fps)
        try:
            first = None
            packets = 0
            for pkt in _demux(container, stream):
                packets += 1
                first = next(iter(_decode(stream, pkt)), None)
                if first is not None or packets >= FIRST_FRAME_PACKETS:
                    break
            if first is None and packets < FIRST_FRAME_PACKETS:
                first = next(iter(_decode(stream, None)), None)  # drain a decoder that holds frames back
            if first is None:
                return _bad(f"no video frame could be decoded (read {packets} packet(s) of its video stream)")
            info.width, info.height = first.width, first.height
            if "mp4" in container.format.name and stream.duration and tb:
                end = (stream.start_time or 0) + stream.duration
                last = _tail_end(container, stream, end)
                if last is not None:
                    data_s = max(last - (stream.start_time or 0), 0) * tb
                    if float(duration - data_s) > max(TRUNCATION_MIN_S, TRUNCATION_SHARE * duration):
                        return _bad(f"is truncated: its video data ends at {float(data_s):.1f} s but its header "
                                    f"says {duration:.1f} s (an interrupted download or copy?)")
        except Exception as e:  # noqa: BLE001 - a decoder or demuxer failure is the verdict
            return _bad(f"cannot be decoded: {_reason(e)} (a damaged or incomplete file?)")
    return info


class ProbeCache:
    """Verdicts on disk by content fingerprint (``root`` None: the user cache), and in memory."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_probe_cache()
        self._memory: dict[str, VideoCheck] = {}

    def _file(self, fp: str) -> Path:
        return self.root / fp[:2] / f"{fp}-v{PROBE_VERSION}.json"

    def get(self, fp: str) -> VideoCheck | None:
        if fp in self._memory:
            return self._memory[fp]
        try:
            check = VideoCheck.model_validate_json(self._file(fp).read_bytes())
        except (OSError, ValidationError, ValueError):
            return None
        check.cached = True
        self._memory[fp] = check
        return check

    def put(self, fp: str, check: VideoCheck) -> None:
        self._memory[fp] = check
        try:
            atomic_write_text(self._file(fp), check.model_dump_json(exclude={"cached"}))
        except MtvbenchError as e:  # a read-only or full cache only costs speed
            log.debug("probe cache not written: %s", e)


def check_video(path: Path, cache: ProbeCache | None = None) -> VideoCheck:
    """The verdict on ``path`` (see the module docstring); never raises for a bad video."""
    path = Path(path)
    bad = _regular(path)
    if bad is not None:
        return bad
    try:
        fp = fingerprint(path)
    except VideoError as e:
        return _bad(f"cannot be read ({e.__cause__ or e})")
    found = cache.get(fp) if cache is not None else None
    if found is not None:
        return found
    check = _probe(path)
    if cache is not None:
        cache.put(fp, check)
    return check


def check_videos(paths: Mapping[str, Path], cache: ProbeCache | None = None,
                 workers: int = PROBE_WORKERS) -> dict[str, VideoCheck]:
    """:func:`check_video` for every ``name -> path``, a few at a time."""
    if not paths:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths))),
                            thread_name_prefix="mtvbench-probe") as pool:
        futures = {name: pool.submit(check_video, p, cache) for name, p in paths.items()}
        return {name: f.result() for name, f in futures.items()}


__all__ = ["PROBE_VERSION", "ProbeCache", "VideoCheck", "check_video", "check_videos", "default_probe_cache"]

