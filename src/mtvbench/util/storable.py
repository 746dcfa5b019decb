"""Make text from outside storable: how mtvbench treats the characters UTF-8 cannot encode.

A Python string can hold code points that no UTF-8 file, SQLite text column or terminal can take: the
lone surrogates U+D800..U+DFFF. A server puts one in a reply with nothing more than the JSON escape
``\\ud800`` (valid JSON text; ``json.loads`` gives the lone code point), in an answer, a judge verdict's
key or value, reasoning text or an error body. Left in, the first writer that encodes the text fails
(``UnicodeEncodeError``) and the result is lost.

The policy, in one place:

- **at the boundary** where a reply becomes a record (:mod:`mtvbench.records`: ``GenerationResult``,
  ``JudgeVerdict``), every such code point is replaced by U+FFFD (the replacement character) and
  **counted**; the count travels with the record into the store and is shown with the scores, so a
  replaced reply is never silent (:func:`storable`, :func:`storable_value`);
- **every writer** (:mod:`mtvbench.util.files`, the run store) encodes with :func:`encode_utf8`, which
  applies the same replacement to whatever still holds one (defence in depth: a writer never fails on
  text it is given).
"""

from __future__ import annotations

import re
from typing import Any

#: the code points a UTF-8 encoder refuses: lone (unpaired) surrogates
UNENCODABLE = re.compile("[\ud800-\udfff]")
#: what each of them becomes
REPLACEMENT = "\ufffd"


def storable(text: str) -> tuple[str, int]:
    """``text`` with every code point UTF-8 cannot encode replaced by U+FFFD, and how many were replaced."""
    if text.isascii():  # the usual case, checked in C
        return text, 0
    return UNENCODABLE.subn(REPLACEMENT, text)


def storable_value(value: Any) -> tuple[Any, int]:
    """A JSON-like value (strings, lists, tuples, dicts; keys too) with :func:`storable` applied to every
    string in it, and how many code points were replaced in all. Other values, and a value with nothing to
    replace (the usual case, checked first), are returned as they are."""
    if isinstance(value, str):
        return storable(value)
    if encodable(value):
        return value, 0
    if isinstance(value, (list, tuple)):
        items, n = [], 0
        for item in value:
            clean, k = storable_value(item)
            items.append(clean)
            n += k
        return (tuple(items) if isinstance(value, tuple) else items), n
    if isinstance(value, dict):
        out, n = {}, 0
        for key, item in value.items():
            clean_key, k1 = storable_value(key)
            clean, k2 = storable_value(item)
            out[clean_key] = clean
            n += k1 + k2
        return out, n
    return value, 0


def encodable(value: Any) -> bool:
    """True when no string in ``value`` (keys too) holds a code point UTF-8 cannot encode: the strings of a list,
    a tuple or a dict's keys or values are joined and checked at once (in C) where they are all strings."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if not v.isascii() and UNENCODABLE.search(v):
                return False
        elif isinstance(v, (list, tuple, dict)):
            groups = (v.keys(), v.values()) if isinstance(v, dict) else (v,)
            for items in groups:
                first = next(iter(items), "")
                if not isinstance(first, str):  # a list of pairs, of objects: each item on its own
                    todo.extend(items)
                    continue
                try:
                    joined = "".join(items)
                except TypeError:  # not all strings: each item on its own
                    todo.extend(items)
                    continue
                if not joined.isascii() and UNENCODABLE.search(joined):
                    return False
    return True


def clean_text(text: str | None) -> str | None:
    """:func:`storable` without the count, for a writer's last line of defence (None stays None)."""
    return None if text is None else storable(text)[0]


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8; a code point UTF-8 cannot encode becomes U+FFFD instead of an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return storable(text)[0].encode("utf-8")


__all__ = ["REPLACEMENT", "UNENCODABLE", "clean_text", "encodable", "encode_utf8", "storable", "storable_value"]
