"""What the senior annotator sees: the annotators' edits of each field, side by side (the two
annotators', and those of decisions handed to the senior).

Word-level diffs come from :mod:`difflib` (whitespace and punctuation are their own
tokens, so a changed word shows as one deletion and one insertion).
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel

from mtvbench.review.decisions import Annotation, ReviewItem

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
_FIELD_ORDER = {"user": 0, "assistant": 1, "question": 2, "expected": 3}


class Piece(BaseModel):
    """A run of text in a word diff: kept (``equal``), added (``insert``) or removed (``delete``)."""

    op: Literal["equal", "insert", "delete"]
    text: str


class FieldDiff(BaseModel):
    """One field that some side edited: the original, and each side's value, whether it changed it,
    and its diff from the original (``values[i]`` is side ``i``'s)."""

    round: int
    field: str
    item: str | None
    original: str
    values: list[str]
    changed: list[bool]
    diffs: list[list[Piece]]


def word_diff(before: str, after: str) -> list[Piece]:
    """``before`` -> ``after`` as equal / delete / insert pieces of text."""
    x, y = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[Piece] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(Piece(op="equal", text="".join(x[i1:i2])))
            continue
        if i2 > i1:
            out.append(Piece(op="delete", text="".join(x[i1:i2])))
        if j2 > j1:
            out.append(Piece(op="insert", text="".join(y[j1:j2])))
    return out


def compare(item: ReviewItem, sides: list[Annotation]) -> list[FieldDiff]:
    """Every field edited by any of ``sides``, in dialogue order."""
    edits = [{e.path: e.value for e in a.edits} for a in sides]
    paths = sorted(set().union(*edits), key=lambda p: (p[0], int(p[2][1:]) if p[2] else 0, _FIELD_ORDER[p[1]]))
    out = []
    for path in paths:
        original = item.original(*path) or ""
        values = [e.get(path, original) for e in edits]
        out.append(FieldDiff(round=path[0], field=path[1], item=path[2], original=original, values=values,
                             changed=[path in e for e in edits], diffs=[word_diff(original, v) for v in values]))
    return out
