"""The ``paper`` protocol's reading of a judge's reply: verdicts parsed BY KEY.

A reply is accepted only when every ``A1``..``An`` key is present with a yes/no value (any
case, fenced JSON or surrounded by prose). The first JSON object that answers every key wins;
otherwise ``A1: Yes``-style pairs anywhere in the text are read. A reordered reply is scored
right; a reply that misses a key is re-asked (:mod:`mtvbench.judge.llm`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mtvbench.util.jsonio import YesNo, extract_json_object, yes_no

_PAIR = re.compile(r"""["']?\b(A\d+)\b["']?\s*[:=]\s*["']?\s*(yes|no)\b""", re.IGNORECASE)


def _from_obj(obj: dict[str, Any]) -> dict[str, tuple[YesNo, Any]]:
    out: dict[str, tuple[YesNo, Any]] = {}
    for k, v in obj.items():
        key = str(k).strip().upper()
        yn = yes_no(v)
        if re.fullmatch(r"A\d+", key) and yn is not None:
            out[key] = (yn, v)
    return out


def read_verdicts(text: str, keys: Sequence[str]) -> dict[str, tuple[YesNo, Any]] | None:
    """``{key: (Yes/No, the value as the reply wrote it)}`` for all ``keys``, or None when any key is missing
    (the rule of :func:`parse_verdicts`; the value as written is a JSON value or the word of an ``A1: yes`` pair)."""
    obj = extract_json_object(text, accept=lambda o: all(k in _from_obj(o) for k in keys))
    found = _from_obj(obj) if obj is not None else {}
    if not all(k in found for k in keys):
        found = {}
        for m in _PAIR.finditer(text):
            found.setdefault(m.group(1).upper(), ("Yes" if m.group(2).lower() == "yes" else "No", m.group(2)))
    if all(k in found for k in keys):
        return {k: found[k] for k in keys}
    return None


def parse_verdicts(text: str, keys: Sequence[str]) -> dict[str, YesNo] | None:
    """Return ``{key: Yes/No}`` for all ``keys``, or None when any key is missing.

    The first JSON object (fenced or in prose) that answers every key wins; otherwise
    ``A1: Yes``-style pairs anywhere in the text are read."""
    found = read_verdicts(text, keys)
    return None if found is None else {k: yn for k, (yn, _) in found.items()}
