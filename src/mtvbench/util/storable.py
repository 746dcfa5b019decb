"""Text from outside made storable: the one policy for characters UTF-8 cannot encode.

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

import json
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
    string in it, and how many code points were replaced in all. Other values are returned as they are.

    A value with nothing to replace (nearly every one) is returned as it is after one check in C (its JSON
    encoded as UTF-8), not walked item by item: every judge run's replies and reading pass here."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, (list, tuple, dict)):
        try:
            text = json.dumps(value, ensure_ascii=False)
            if not text.isascii():
                text.encode("utf-8")  # raises on a lone surrogate
            return value, 0
        except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
            pass  # a lone surrogate, or a value that is not JSON: walked below
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


def clean_text(text: str | None) -> str | None:
    """:func:`storable` without the count, for a writer's last line of defence (None stays None)."""
    return None if text is None else storable(text)[0]


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8; a code point UTF-8 cannot encode becomes U+FFFD instead of an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return storable(text)[0].encode("utf-8")


__all__ = ["REPLACEMENT", "UNENCODABLE", "clean_text", "encode_utf8", "storable", "storable_value"]
