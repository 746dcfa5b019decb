"""Strict JSON for files we read, lenient JSON for what models write.

- :func:`load_json_file` / :func:`loads_strict`: duplicate keys, ``NaN``/``Infinity``,
  nesting deeper than :data:`MAX_DEPTH` and non-regular files are errors naming the file
  and the key (the standard library silently keeps the last duplicate).
- :func:`extract_json_object`: the first JSON object in a model reply (a fenced block, or
  the outermost braces), for every parser of model output.
- :func:`yes_no`: the one Yes/No normaliser (``yes``, ``No.``, ``true``, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from mtvbench.errors import InputError
from mtvbench.util.files import read_bytes_capped

MAX_DEPTH = 64
#: the largest JSON file we read (the released mtqa files are a few MB)
MAX_JSON_BYTES = 512 << 20

YesNo = Literal["Yes", "No"]


class DuplicateKeyError(ValueError):
    def __init__(self, key: str, siblings: list[str]):
        self.key = key
        self.siblings = siblings
        shown = ", ".join(repr(s) for s in siblings[:4]) + (", ..." if len(siblings) > 4 else "")
        super().__init__(f"duplicate key {key!r} (in the object with keys {shown})")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKeyError(k, [p[0] for p in pairs])
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def max_depth_exceeded(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (brackets inside strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def loads_strict(text: str, source: str = "<text>") -> Any:
    """Parse JSON strictly; every problem is an :class:`InputError` naming ``source``."""
    if max_depth_exceeded(text):
        raise InputError(f"{source}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except DuplicateKeyError as e:
        raise InputError(f"{source}: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:
        raise InputError(f"{source}: {e}") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply") from None


def load_json_file(path: Path | str, what: str = "JSON file", max_bytes: int = MAX_JSON_BYTES) -> Any:
    data = read_bytes_capped(path, max_bytes, what)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return loads_strict(text, str(path))


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def json_candidates(text: str, arrays: bool = False) -> list[str]:
    """Places a model may have put its JSON: fenced blocks first, then the outermost braces
    (and, with ``arrays``, the outermost square brackets)."""
    out = [m.group(1) for m in _FENCE.finditer(text)]
    for open_, close in (("{", "}"), ("[", "]")) if arrays else (("{", "}"),):
        start, end = text.find(open_), text.rfind(close)
        if start != -1 and end > start:
            out.append(text[start : end + 1])
    return out


def json_values(text: str, arrays: bool = False) -> Iterator[Any]:
    """Every candidate of :func:`json_candidates` that parses, parsed, in order."""
    for cand in json_candidates(text, arrays):
        try:
            yield json.loads(cand)
        except (ValueError, RecursionError):
            continue


def extract_json_object(text: str, accept: Any = None) -> dict[str, Any] | None:
    """The first JSON object found in ``text`` (for which ``accept(obj)`` is true, if given)."""
    for obj in json_values(text):
        if isinstance(obj, dict) and (accept is None or accept(obj)):
            return obj
    return None


def yes_no(value: object) -> YesNo | None:
    """``Yes``/``No`` from a bool or a yes/no word in any case (``"no."``); else None."""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, str):
        v = value.strip().strip(".!*\"'").strip().lower()
        if v in ("yes", "no"):
            return "Yes" if v == "yes" else "No"
    return None
