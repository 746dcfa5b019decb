"""Time ranges named in dialogue text (``from 00:01:20 to 00:01:45``, ``00:01:20–00:01:45``, ``at 00:00:58``).

The review pages turn them into chips that seek the video; the construction prompts write them
with :func:`hms`; ``run --sampling clip`` puts part of each turn's frames into the ranges its text names
(:func:`named_ranges`). A range is two timestamps (``HH:MM:SS``, ``H:MM:SS``, ``MM:SS`` or ``M:SS``,
optional fraction) joined by ``to``, ``-``, ``–``, ``—``, ``~`` or ``until`` (so ``from X to Y`` too), or
``between X and Y``: two timestamps joined that way are positions in the video whatever their form.

A lone timestamp is a point. In the ``HH:MM:SS`` form it always counts. A lone ``MM:SS``/``M:SS`` could be a
clock time ("the meeting at 08:15 sharp"), so it counts only where the text ties it to the video: followed by
``in/of the video``, ``in/of the clip`` or ``mark``, or after ``timestamp``: "at 03:12 in the video", "the 3:12
mark" and "timestamp 3:12" are points, "at 08:15", "08:15" alone or "at 8:15 pm" are not.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

_TS = r"(?:\d{1,2}:)?\d{1,2}:\d{2}(?:\.\d+)?"
_RANGE = re.compile(rf"(?<![\d:.])({_TS})\s*(?:to|until|-|–|—|~|and)\s*({_TS})(?![\d:])", re.IGNORECASE)
_POINT = re.compile(r"(?<![\d:.])(\d{1,2}:\d{2}:\d{2}(?:\.\d+)?)(?![\d:])")
#: a lone ``MM:SS`` that the words around it make a position in the video
_MMSS = r"(?<![\d:.])(\d{1,2}:\d{2}(?:\.\d+)?)(?![\d:])"
_SHORT_POINT = re.compile(rf"{_MMSS}(?=\s*(?:(?:in|of) the (?:video|clip)|mark)\b)|\btimestamps?\s+{_MMSS}",
                          re.IGNORECASE)
#: a single timestamp stands for this many seconds either side of it (``at 00:00:58``: 53 s to 63 s)
POINT_MARGIN_S = 5.0


class Segment(BaseModel):
    """A piece of text; ``start`` (and ``end`` for a range) when it names a time in the video."""

    text: str
    start: float | None = None
    end: float | None = None


def seconds(ts: str) -> float:
    """``'01:02:03.5'`` -> 3723.5; ``'02:03'`` -> 123."""
    total = 0.0
    for part in ts.split(":"):
        total = total * 60 + float(part)
    return total


def hms(seconds: float) -> str:
    """``HH:MM:SS`` (the form the released questions use for clip ranges)."""
    s = max(0, int(seconds + 1e-6))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def frame_label(seconds: float) -> str:
    """The text put before a frame under ``--frame-timestamps on``: ``Frame at 00:03:12``."""
    return f"Frame at {hms(seconds)}"


def segments(text: str) -> list[Segment]:
    """``text`` cut into plain pieces and pieces that name a time range or point."""
    hits: list[tuple[int, int, float, float | None]] = []
    for m in _RANGE.finditer(text):
        a, b = seconds(m.group(1)), seconds(m.group(2))
        if b >= a:
            hits.append((m.start(), m.end(), a, b))
    for m in _RANGE.finditer(text):  # "between X and Y" only: a bare "and" joins two clock times too
        if m.group(0).lower().find("and") >= 0 and not text[:m.start()].rstrip().lower().endswith("between"):
            hits[:] = [h for h in hits if h[0] != m.start()]
    for pattern in (_POINT, _SHORT_POINT):
        for m in pattern.finditer(text):
            g = 1 if m.group(1) is not None else m.lastindex or 1
            if not any(s <= m.start(g) < e for s, e, _, _ in hits):
                hits.append((m.start(g), m.end(g), seconds(m.group(g)), None))
    hits.sort()
    out: list[Segment] = []
    pos = 0
    for s, e, a, b in hits:
        if s > pos:
            out.append(Segment(text=text[pos:s]))
        out.append(Segment(text=text[s:e], start=a, end=b))
        pos = e
    if pos < len(text) or not out:
        out.append(Segment(text=text[pos:]))
    return out


def ranges_in(text: str) -> list[tuple[float, float]]:
    """The time ranges (not lone points) named in ``text``, in order, without repeats."""
    out: list[tuple[float, float]] = []
    for seg in segments(text):
        if seg.start is not None and seg.end is not None and (seg.start, seg.end) not in out:
            out.append((seg.start, seg.end))
    return out


class TimeRange(BaseModel):
    """A part of a video in seconds, ``start <= end``."""

    start: float
    end: float


class NamedRanges(BaseModel):
    """The time ranges a text names, as parts of one video: points widened by :data:`POINT_MARGIN_S`, ranges
    past the video's end cut at it, overlapping ones merged, in time order."""

    ranges: list[TimeRange]
    #: ranges (or widened points) that went past the video's end and were cut at it
    clipped: int = 0
    #: ranges that start at or after the video's end (nothing of them is left)
    outside: int = 0

    @property
    def seconds(self) -> float:
        """How much of the video the ranges cover."""
        return sum(r.end - r.start for r in self.ranges)


def named_ranges(text: str, duration_s: float, margin_s: float = POINT_MARGIN_S) -> NamedRanges:
    """The parts of a ``duration_s``-second video that ``text`` names (see the module doc for the forms read)."""
    spans: list[tuple[float, float]] = []
    clipped = outside = 0
    for seg in segments(text):
        if seg.start is None:
            continue
        a, b = (seg.start, seg.end) if seg.end is not None else (seg.start - margin_s, seg.start + margin_s)
        a = max(0.0, a)
        if a >= duration_s:
            outside += 1
            continue
        if b > duration_s:
            clipped += 1
            b = duration_s
        spans.append((a, b))
    merged: list[list[float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return NamedRanges(ranges=[TimeRange(start=a, end=b) for a, b in merged], clipped=clipped, outside=outside)
