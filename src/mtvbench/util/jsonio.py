"""Strict JSON for files we read, lenient JSON for what models write.

- :func:`load_json_file` / :func:`loads_strict`: duplicate keys, ``NaN``/``Infinity``,
  nesting deeper than :data:`MAX_DEPTH`, invalid UTF-8 and non-regular files are errors
  naming the file, the line and the place in the document (``["vid0"][0]["mtqa"]``); the
  standard library silently keeps the last duplicate. The error is a :class:`JSONFileError`
  (an :class:`~mtvbench.errors.InputError`) whose ``reason``, ``line`` and ``json_path``
  let a caller such as the dataset loader name the record itself.
- :func:`extract_json_object`: the first JSON object in a model reply (a fenced block, or
  the outermost braces), for every parser of model output.
- :func:`yes_no`: the Yes/No normaliser every parser uses (``yes``, ``No.``, ``true``, ...).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from mtvbench.errors import InputError
from mtvbench.util.files import read_bytes_capped
from mtvbench.util.storable import storable, storable_value

MAX_DEPTH = 64
#: the largest JSON file we read (the released mtqa files are a few MB)
MAX_JSON_BYTES = 512 << 20

YesNo = Literal["Yes", "No"]
JSONPath = tuple[str | int, ...]


class JSONFileError(InputError):
    """Strict JSON that cannot be used: ``source``, ``reason``, and where (``line``, ``json_path``).

    The message is ``<source>: line <n>: <reason> in <json path>`` (the parts that are known)."""

    def __init__(self, source: str, reason: str, *, line: int | None = None, json_path: JSONPath = (),
                 container: JSONPath | None = None):
        self.source = source
        self.reason = reason
        self.line = line
        #: where the problem is: the duplicate key itself, or the value that is NaN
        self.json_path = json_path
        where = f" in {render_json_path(container)}" if container is not None else ""
        self.located = (f"line {line}: " if line is not None else "") + reason + where
        super().__init__(f"{source}: {self.located}")


def render_json_path(path: Sequence[str | int]) -> str:
    """``["vid0"][0]["mtqa"]``; ``top level`` for the empty path."""
    return "".join(f"[{p}]" if isinstance(p, int) else f"[{json.dumps(p, ensure_ascii=False)}]"
                   for p in path) or "top level"


class DuplicateKeyError(ValueError):
    """A key given twice in one JSON object (the standard library would keep the last one silently); ``siblings`` are
    the object's keys, for the message."""

    def __init__(self, key: str, siblings: list[str]):
        self.key = key
        self.siblings = siblings
        shown = ", ".join(repr(s) for s in siblings[:4]) + (", ..." if len(siblings) > 4 else "")
        super().__init__(f"duplicate key {key!r} (in the object with keys {shown})")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(pairs)
    if len(out) == len(pairs):  # no key twice (the usual case, checked in C)
        return out
    out = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKeyError(k, [p[0] for p in pairs])
        out[k] = v
    return out


class _Constant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Constant(name)


#: a JSON string (the loop unrolled: runs of plain characters, then one escape: several times faster on big files)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
#: the tokens that matter for locating a problem: strings, structure, the non-standard constants
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|-?Infinity|NaN')
_SPACE = re.compile(r"[ \t\r\n]*")


def max_depth_exceeded(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (brackets inside strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(1 if c in "[{" else -1 for c in brackets), default=0) > limit


class _Located(NamedTuple):
    pos: int
    path: JSONPath
    #: offset of the first occurrence of a duplicate key; None for NaN/Infinity
    first: int | None = None


def _locate(text: str) -> _Located | None:
    """The first duplicate key or NaN/Infinity in ``text``, with its offset and JSON path.

    Only run after the fast parser failed: a scan of the tokens that tracks the open objects
    and arrays (the keys seen so far in each object, the index in each array).
    """
    # each open container: [is_object, current key or index, {key: offset}]
    stack: list[list[Any]] = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[":
            stack.append([tok == "{", None if tok == "{" else 0, {}])
        elif tok in "}]":
            if stack:
                stack.pop()
        elif tok == ",":
            if stack and not stack[-1][0]:
                stack[-1][1] += 1
        elif tok == ":":
            continue
        elif tok[0] == '"':
            end = _SPACE.match(text, m.end()).end()
            if stack and stack[-1][0] and text.startswith(":", end):
                key = json.loads(tok)
                path = tuple(f[1] for f in stack[:-1])
                if key in stack[-1][2]:
                    return _Located(m.start(), (*path, key), stack[-1][2][key])
                stack[-1][2][key] = m.start()
                stack[-1][1] = key
        else:  # NaN / Infinity outside a string
            return _Located(m.start(), tuple(f[1] for f in stack))
    return None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


#: a ``\\u`` escape of a surrogate code point (a pair is one character; a lone one is none)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any, path: JSONPath = ()) -> JSONPath | None:
    """The JSON path of the first string (or key) holding a lone surrogate, or None."""
    if isinstance(value, str):
        return path if storable(value)[1] else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _lone_surrogate(item, (*path, i))) is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if storable(key)[1]:
                return (*path, key)
            if (found := _lone_surrogate(item, (*path, key))) is not None:
                return found
    return None


def loads_strict(text: str, source: str = "<text>") -> Any:
    """Parse JSON strictly; every problem is a :class:`JSONFileError` naming ``source``. A string escaping a
    lone surrogate (``\\ud800``: no character, no UTF-8 text can hold it) is refused like bytes that are not
    UTF-8, naming where it is."""
    if max_depth_exceeded(text):
        raise JSONFileError(source, f"JSON nested deeper than {MAX_DEPTH} levels")
    obj = _loads_strict(text, source)
    if _SURROGATE_ESCAPE.search(text) and (path := _lone_surrogate(obj)) is not None:
        raise JSONFileError(source, "a string holds a lone surrogate (a \\ud800-style escape that is no character; "
                                    "no UTF-8 text can hold it)", json_path=path, container=path)
    return obj


def _loads_strict(text: str, source: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except (DuplicateKeyError, _Constant) as e:
        found = _locate(text)
        if found is None:  # cannot happen for text the parser read this far; keep its own words
            raise JSONFileError(source, str(e)) from None
        if found.first is not None:
            reason = (f"duplicate key {found.path[-1]!r} (first at line {_line_of(text, found.first)}; "
                      "most JSON readers silently keep only the last one)")
            container = found.path[:-1]
        else:
            reason = f"{e} is not valid JSON (write a number or null)"
            container = found.path
        raise JSONFileError(source, reason, line=_line_of(text, found.pos), json_path=found.path,
                            container=container) from None
    except json.JSONDecodeError as e:
        raise JSONFileError(source, f"not valid JSON: {e.msg} (column {e.colno})", line=e.lineno) from None
    except ValueError as e:
        raise JSONFileError(source, str(e)) from None
    except RecursionError:
        raise JSONFileError(source, "JSON nested too deeply") from None


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text (a leading BOM is dropped); invalid bytes are one :class:`JSONFileError` with the line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise JSONFileError(source, f"not UTF-8 text (byte {e.start}: {e.reason})", line=line) from None


def load_json_file(path: Path | str, what: str = "JSON file", max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A regular file of strict JSON (see the module docstring); ``what`` names it in messages."""
    data = read_bytes_capped(path, max_bytes, what)
    return loads_strict(decode_utf8(data, str(path)), str(path))


def read_text_file(path: Path | str, what: str = "file", max_bytes: int = MAX_JSON_BYTES) -> str:
    """A regular file of UTF-8 text (CSV, YAML, JSON Lines) read whole; the same checks as JSON."""
    return decode_utf8(read_bytes_capped(path, max_bytes, what), str(path))


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
    """Every candidate of :func:`json_candidates` that parses, parsed, in order; a lone surrogate that a
    ``\\ud800`` escape put in a string (or key) is U+FFFD (:func:`mtvbench.util.storable.storable_value`), so
    what is read from a model's reply can be stored."""
    for cand in json_candidates(text, arrays):
        try:
            yield storable_value(json.loads(cand))[0]
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
