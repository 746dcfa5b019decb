"""The settings of a run (and what a build shares with it), split by job:

- :mod:`.runconfig`: :class:`RunConfig` (every setting of one evaluation, immutable; validating one reads no
  file) and the run's identity (:meth:`RunConfig.identity`, the only function that computes it); one is
  made from plain values, where the run starts, by :func:`mtvbench.run.settings.build_config`;
- :mod:`.roles`: a role's settings (:class:`RoleSettings`), Ray resources, prices;
- :mod:`.loading`: settings files read strictly (UTF-8 YAML/JSON, keys given once);
- :mod:`.validation`: strict validation of any settings model, every problem at once;
- :mod:`.resolve`: preset resolution (:func:`apply_preset`, :func:`preset_overrides`);
- :mod:`.stored`: what a run directory stores of its settings, and how a stored identity is compared.

Every name is importable from here (``from mtvbench.config import RunConfig, validate_settings``).
"""

from __future__ import annotations

from mtvbench.config.loading import MAX_CONFIG_BYTES, load_settings_file, load_yaml, loads_yaml_strict
from mtvbench.config.resolve import apply_preset, preset_overrides
from mtvbench.config.roles import ExecutorName, LocalRaySettings, RaySettings, RoleSettings
from mtvbench.config.runconfig import (
    AUTHORS_SCRIPTS,
    IN_PROCESS_BACKENDS,
    NOT_REPRODUCED,
    ContextMode,
    RunConfig,
    mark_origins,
    parse_tasks,
)
from mtvbench.config.stored import (
    DEFAULT_PROTOCOL,
    RECORD_KEYS,
    RECORDED_IDENTITY_KEYS,
    RUN_SCHEMA_VERSION,
    identity_differences,
)
from mtvbench.config.validation import validate_settings
from mtvbench.errors import ConfigError
from mtvbench.records import Price

__all__ = ["AUTHORS_SCRIPTS", "DEFAULT_PROTOCOL", "IN_PROCESS_BACKENDS", "MAX_CONFIG_BYTES", "NOT_REPRODUCED",
           "RECORDED_IDENTITY_KEYS", "RECORD_KEYS", "RUN_SCHEMA_VERSION", "ConfigError",
           "ContextMode", "ExecutorName", "LocalRaySettings", "Price", "RaySettings", "RoleSettings", "RunConfig",
           "apply_preset", "identity_differences", "load_settings_file", "load_yaml", "loads_yaml_strict",
           "mark_origins", "parse_tasks", "preset_overrides", "validate_settings"]
