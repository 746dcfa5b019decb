"""Where a run's settings are made: plain values (flags, a YAML file, a mapping) resolved once into one
immutable :class:`~mtvbench.config.RunConfig`, which everything after reads.

:func:`build_config` is that edge (``run``, ``sweep``, ``estimate``, ``demo`` and :func:`mtvbench.build_config`
call it). It is also the only place where the settings meet the run directory they name: an existing ``--out``
keeps its protocol (:meth:`~mtvbench.run.rundir.RunDirectory.recorded_protocol`) unless one is given, so that
the presets resolve as they did for it. Validating a :class:`~mtvbench.config.RunConfig` reads no file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from mtvbench.config import (
    DEFAULT_PROTOCOL,
    RECORD_KEYS,
    RUN_SCHEMA_VERSION,
    ConfigError,
    RunConfig,
    apply_preset,
    mark_origins,
    validate_settings,
)
from mtvbench.run.rundir import RunDirectory


def build_config(values: Mapping[str, Any], source: str = "settings", flags: Mapping[str, str] | None = None,
                 *, needs_server: bool = True) -> RunConfig:
    """The run settings from plain values, checked strictly.

    Args:
        values: the settings (``data``, ``model``, ``judge``, ``out``, ...); a preset name as
            ``model`` supplies its backend, generation and frame settings, given values win. Without a
            ``protocol``, the protocol ``out``'s run directory records (else ``authors``).
        source: names the values in messages (a file name, ``command line``).
        flags: dotted setting -> the flag that gave it, so a bad value is named by its flag.
        needs_server: False where nothing will be called (``estimate``): a preset served by a server the
            user starts does not need its URL yet.

    Returns:
        The settings.

    Raises:
        ConfigError: every problem at once, one line each (see :func:`~mtvbench.config.validate_settings`)."""
    values = dict(values)
    found = values.pop("schema_version", RUN_SCHEMA_VERSION)
    for key in RECORD_KEYS:
        values.pop(key, None)
    if found != RUN_SCHEMA_VERSION:  # a run directory's config.yaml of another format
        raise ConfigError(f"{source}: field 'schema_version': run-directory format {found!r}, "
                          f"this mtvbench reads format {RUN_SCHEMA_VERSION}")
    if values.get("protocol") is None:
        out = values.get("out")
        recorded = RunDirectory(out).recorded_protocol() if isinstance(out, (str, os.PathLike)) else None
        values["protocol"] = recorded or DEFAULT_PROTOCOL
    cfg = validate_settings(RunConfig, values, source, flags=flags,
                            prepare=lambda v: apply_preset(v, needs_server=needs_server))
    mark_origins(cfg, values)
    return cfg
