"""What the senior annotator sees: the two annotators' edits of each field, side by side.

Word-level diffs come from :mod:`difflib` (whitespace and punctuation are their own
tokens, so a changed word shows as one deletion and one insertion).
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel

from mtvbench.review.model import Annotation, ReviewItem

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
_FIELD_ORDER = {"user": 0, "assistant": 1, "question": 2, "expected": 3}


class Piece(BaseModel):
    op: Literal["equal", "insert", "delete"]
    text: str


class FieldDiff(BaseModel):
    """One field that either annotator edited: the original, each side's value and diff."""

    round: int
    field: str
    item: str | None
    original: str
    a: str
    b: str
    a_changed: bool
    b_changed: bool
    diff_a: list[Piece]
    diff_b: list[Piece]


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


def compare(item: ReviewItem, a: Annotation, b: Annotation) -> list[FieldDiff]:
    """Every field edited by ``a`` or ``b``, in dialogue order."""
    ea = {e.path: e.value for e in a.edits}
    eb = {e.path: e.value for e in b.edits}
    paths = sorted(set(ea) | set(eb), key=lambda p: (p[0], int(p[2][1:]) if p[2] else 0, _FIELD_ORDER[p[1]]))
    out = []
    for path in paths:
        original = item.original(*path) or ""
        va, vb = ea.get(path, original), eb.get(path, original)
        out.append(FieldDiff(round=path[0], field=path[1], item=path[2], original=original, a=va, b=vb,
                             a_changed=path in ea, b_changed=path in eb, diff_a=word_diff(original, va),
                             diff_b=word_diff(original, vb)))
    return out
