"""The digest that identifies a value (a run setting, a request, an artifact's content).

:func:`digest` is the SHA-256 of the value's canonical JSON (:func:`canonical_json`: keys sorted, no
spaces, non-ASCII kept, anything JSON lacks written as its ``str``) as hex digits, cut to ``length``
(32 by default, 128 bits: run fingerprints; build artifacts record 24). Every stored key uses it (the call
journal's request keys, a stage's prompt digest, a review item's content hash, the scene-count cache's file
names); a stored key that changes shape changes its store's format number, since everything stored under the
old key would look new (results asked again, artifacts rebuilt, review decisions taken again).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: what :func:`canonical_json` writes with (made once: ``json.dumps`` with these options makes one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(obj: Any) -> str:
    """The canonical JSON text of a value: keys sorted, no spaces, non-ASCII kept, other values as ``str``."""
    return _CANONICAL.encode(obj)


def digest(obj: Any, length: int = 32) -> str:
    """SHA-256 of :func:`canonical_json` of ``obj``, the first ``length`` hex digits."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def text_digest(*parts: str) -> str:
    """A short digest of prompt texts (a stage's ``prompts``): :func:`digest` of the texts, 16 digits."""
    return digest(list(parts), length=16)

