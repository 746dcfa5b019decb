"""API keys never reach a message, a log line or a store.

Every key a backend reads is registered (:func:`register_secret`), whatever the name of the
environment variable it came from; :func:`redact_secrets` removes from a text the values of the
registered keys, of every environment variable named like a key (``*KEY*``, ``*TOKEN*``,
``*SECRET*``) and key-shaped strings (``sk-...``). Model replies get only
:func:`scrub_secret_values`, which touches nothing but exact values of keys that were really read
(a server that echoes the key it was sent).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping

_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET)", re.IGNORECASE)
_KEYLIKE = re.compile(r"\b(sk|AIza|key)[-_][A-Za-z0-9*_\-]{8,}")
#: values shorter than this are not scrubbed (a 3-letter "key" would blank ordinary words)
MIN_SECRET_LEN = 8
_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a key a backend read (from any variable, whatever its name) so that
    :func:`redact_secrets` scrubs its value from every message, log line and store."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _SECRETS_LOCK:
            _SECRETS.add(value)


def _secret_values(named_like_keys: bool) -> list[str]:
    with _SECRETS_LOCK:
        values = set(_SECRETS)
    if named_like_keys:
        values.update(v for k, v in os.environ.items()
                      if v and len(v) >= MIN_SECRET_LEN and _SECRET_ENV.search(k))
    return sorted(values, key=len, reverse=True)  # longest first: a key that contains another


def secret_variables(environ: Mapping[str, str]) -> set[str]:
    """The variables of ``environ`` that hold a key: named like one (``*KEY*``, ``*TOKEN*``, ``*SECRET*``),
    or holding the value of a key a backend read (:func:`register_secret`), whatever their name."""
    with _SECRETS_LOCK:
        read = set(_SECRETS)
    return {k for k, v in environ.items() if _SECRET_ENV.search(k) or (v and v in read)}


def scrub_secret_values(text: str | None, named_like_keys: bool = False) -> str | None:
    """Replace the value of every key a backend read (and, with ``named_like_keys``, of every
    environment variable named like a key) by ``***``."""
    if not text:
        return text
    for value in _secret_values(named_like_keys):
        if value in text:
            text = text.replace(value, "***")
    return text


def redact_secrets(text: str | None) -> str | None:
    """Remove API keys from a message before it is stored or shown: every key value a backend
    read (:func:`register_secret`), the values of environment variables named like
    keys/tokens/secrets, and key-shaped strings (``sk-...``)."""
    text = scrub_secret_values(text, named_like_keys=True)
    return _KEYLIKE.sub("***", text) if text else text
