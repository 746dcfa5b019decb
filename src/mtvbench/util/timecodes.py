"""Time ranges named in dialogue text (``from 00:01:20 to 00:01:45``, ``00:01:20–00:01:45``).

The review pages turn them into chips that seek the video; the construction prompts write them
with :func:`hms`. A range is two timestamps
(``h:mm:ss`` or ``mm:ss``, optional fraction) joined by ``to``, ``-``, ``–``, ``—``, ``~`` or
``until``; a lone timestamp counts only in the unambiguous ``h:mm:ss`` form (so a clock
time such as ``08:15`` in the text is not taken for a position in the video).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

_TS = r"(?:\d{1,2}:)?\d{1,2}:\d{2}(?:\.\d+)?"
_RANGE = re.compile(rf"(?<![\d:.])({_TS})\s*(?:to|until|-|–|—|~)\s*({_TS})(?![\d:])")
_POINT = re.compile(r"(?<![\d:.])(\d{1,2}:\d{2}:\d{2}(?:\.\d+)?)(?![\d:])")


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


def segments(text: str) -> list[Segment]:
    """``text`` cut into plain pieces and pieces that name a time range or point."""
    hits: list[tuple[int, int, float, float | None]] = []
    for m in _RANGE.finditer(text):
        a, b = seconds(m.group(1)), seconds(m.group(2))
        if b >= a:
            hits.append((m.start(), m.end(), a, b))
    for m in _POINT.finditer(text):
        if not any(s <= m.start() < e for s, e, _, _ in hits):
            hits.append((m.start(), m.end(), seconds(m.group(1)), None))
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
