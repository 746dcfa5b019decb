"""Frames sampled from time ranges of a video only (a clip, a segment, or several segments).

``media.frames.sample_frames`` samples the whole video; the construction stages need frames
of one clip (captions, scoring, generation). Frame ``i`` and its time are defined as in
``media.frames``: the ``i``-th frame of a full decode in presentation order, at time
``(pts_i - pts_0) * time_base``. A frame belongs to a range ``[start, end)`` when its time
does. ``num`` frames are spread over the ranges in proportion to their frame counts (at
least one per non-empty range) and uniformly within each range
(:func:`mtvbench.media.frames.uniform_indices`). Each range is decoded once, from the key
frame before its first target to its last target.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av

from mtvbench.media.frames import FrameSettings, VideoError, VideoFrames, encode_frame, uniform_indices


def shown_timeline(path: Path) -> tuple[list[int], Fraction, float]:
    """(sorted pts of shown frames, time base, fps) by demuxing only."""
    try:
        container = av.open(str(path))
    except Exception as e:  # noqa: BLE001 - any open failure is a VideoError
        raise VideoError(f"{path}: cannot open as a video ({e})") from e
    try:
        if not container.streams.video:
            raise VideoError(f"{path}: has no video stream")
        stream = container.streams.video[0]
        tb = stream.time_base or Fraction(1, 1)
        rate = stream.average_rate or stream.guessed_rate
        pts = sorted(p.pts for p in container.demux(stream) if p.size and p.pts is not None and not p.is_discard)
    finally:
        container.close()
    if not pts:
        raise VideoError(f"{path}: has no frames")
    return pts, tb, float(rate) if rate else 0.0


def _split_budget(counts: list[int], num: int) -> list[int]:
    nonempty = [i for i, c in enumerate(counts) if c > 0]
    out = [0] * len(counts)
    if not nonempty:
        return out
    total = sum(counts)
    for i in nonempty:
        out[i] = max(1, round(num * counts[i] / total))
    while sum(out) > max(num, len(nonempty)):
        j = max(nonempty, key=lambda i: out[i])
        out[j] -= 1
    return [min(o, c) for o, c in zip(out, counts)]


def sample_ranges_frames(path: str | Path, ranges: list[tuple[float, float]], num: int,
                         settings: FrameSettings | None = None) -> VideoFrames:
    """Up to ``num`` frames from the time ranges (seconds, ``[start, end)``), in time order."""
    path = Path(path)
    settings = (settings or FrameSettings(num_frames=num)).model_copy(update={"num_frames": max(1, num)})
    pts, tb, fps = shown_timeline(path)
    times = [float((p - pts[0]) * tb) for p in pts]
    per_range = [[i for i, t in enumerate(times) if s - 1e-6 <= t < e - 1e-6] for s, e in ranges]
    budget = _split_budget([len(r) for r in per_range], num)
    targets: list[list[int]] = []
    for frames, b in zip(per_range, budget):
        targets.append([frames[j] for j in uniform_indices(len(frames), b)] if b > 0 else [])
    if not any(targets):
        raise VideoError(f"{path}: no frames in the ranges {ranges}")
    got: dict[int, bytes] = {}
    size = (0, 0, 0, 0)
    container = av.open(str(path))
    try:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        pos = {p: i for i, p in enumerate(pts)}
        for tgt in targets:
            if not tgt:
                continue
            want = set(tgt)
            container.seek(pts[tgt[0]], stream=stream, backward=True, any_frame=False)
            for frame in container.decode(stream):
                i = pos.get(frame.pts) if frame.pts is not None else None
                if i is None:
                    continue
                if i in want and i not in got:
                    got[i] = encode_frame(frame, settings, stream.sample_aspect_ratio)
                    size = (*settings.output_size(frame.width, frame.height, stream.sample_aspect_ratio),
                            frame.width, frame.height)
                if i >= tgt[-1]:
                    break
        wanted = [i for t in targets for i in t]
        if len(got) < len(wanted):  # seeking landed after a target: decode sequentially instead
            container.seek(pts[0], stream=stream, backward=True, any_frame=False)
            want_all = set(wanted) - set(got)
            for frame in container.decode(stream):
                i = pos.get(frame.pts) if frame.pts is not None else None
                if i in want_all:
                    got[i] = encode_frame(frame, settings, stream.sample_aspect_ratio)
                    size = (*settings.output_size(frame.width, frame.height, stream.sample_aspect_ratio),
                            frame.width, frame.height)
                    want_all.discard(i)
                if not want_all:
                    break
    finally:
        container.close()
    idx = sorted(i for i in got)
    step = times[1] - times[0] if len(times) > 1 else (1 / fps if fps else 0.0)
    return VideoFrames(video=path, settings=settings, indices=idx, timestamps=[times[i] for i in idx],
                       width=size[0], height=size[1], source_width=size[2], source_height=size[3],
                       total_frames=len(pts), duration_s=times[-1] + step, jpegs=[got[i] for i in idx])


def sample_clip_frames(path: str | Path, start_s: float, end_s: float, num: int,
                       settings: FrameSettings | None = None) -> VideoFrames:
    """Up to ``num`` frames uniformly over ``[start_s, end_s)`` of ``path`` only."""
    return sample_ranges_frames(path, [(start_s, end_s)], num, settings)


def image_frames(jpeg: bytes, width: int, height: int, name: Path) -> VideoFrames:
    """One still image (an object crop) as a :class:`VideoFrames` payload for a backend."""
    return VideoFrames(video=name, settings=FrameSettings(num_frames=1, max_side=None), indices=[0],
                       timestamps=[0.0], width=width, height=height, source_width=width, source_height=height,
                       total_frames=1, duration_s=0.0, jpegs=[jpeg])
