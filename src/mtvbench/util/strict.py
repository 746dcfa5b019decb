"""The configuration every strict settings model shares: an unknown key is an error (never dropped silently),
and ``NaN`` / ``inf`` are not numbers. Every settings model uses it (run and build settings, a role's backend
options, generation and frame settings, each build stage's section, scene detection), so a misspelt key is
refused in YAML, on the command line and from Python alike."""

from __future__ import annotations

from pydantic import ConfigDict

#: the model configuration of strict settings: unknown keys and non-finite numbers are refused
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


def strict(**more: object) -> ConfigDict:
    """:data:`STRICT` with more configuration (``frozen=True``)."""
    return ConfigDict(**{**STRICT, **more})  # type: ignore[typeddict-item]


__all__ = ["STRICT", "strict"]
