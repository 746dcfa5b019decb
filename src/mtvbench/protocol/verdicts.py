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


def _from_obj(obj: dict[str, Any]) -> dict[str, YesNo]:
    out: dict[str, YesNo] = {}
    for k, v in obj.items():
        key = str(k).strip().upper()
        yn = yes_no(v)
        if re.fullmatch(r"A\d+", key) and yn is not None:
            out[key] = yn
    return out


def parse_verdicts(text: str, keys: Sequence[str]) -> dict[str, YesNo] | None:
    """Return ``{key: Yes/No}`` for all ``keys``, or None when any key is missing.

    The first JSON object (fenced or in prose) that answers every key wins; otherwise
    ``A1: Yes``-style pairs anywhere in the text are read."""
    obj = extract_json_object(text, accept=lambda o: all(k in _from_obj(o) for k in keys))
    found = _from_obj(obj) if obj is not None else {}
    if not all(k in found for k in keys):
        found = {}
        for m in _PAIR.finditer(text):
            found.setdefault(m.group(1).upper(), "Yes" if m.group(2).lower() == "yes" else "No")
    if all(k in found for k in keys):
        return {k: found[k] for k in keys}
    return None
