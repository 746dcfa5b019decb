"""config/ is split by job; every name the single module had is still importable from mtvbench.config."""

from __future__ import annotations

import importlib

import mtvbench.config as config

#: the public names of config.py before the split (less ``build_config``, now the edge where a run's settings
#: meet its run directory, :mod:`mtvbench.run.settings`, and ``stored_protocol``, now
#: :meth:`mtvbench.run.rundir.RunDirectory.recorded_protocol`)
NAMES = ["AUTHORS_SCRIPTS", "ConfigError", "ContextMode", "DEFAULT_PROTOCOL", "ExecutorName", "IN_PROCESS_BACKENDS",
         "MAX_CONFIG_BYTES", "NOT_REPRODUCED", "Price", "RECORD_KEYS", "RUN_SCHEMA_VERSION",
         "RaySettings", "RoleSettings", "RunConfig", "apply_preset", "load_settings_file", "load_yaml",
         "loads_yaml_strict", "parse_tasks", "preset_overrides", "validate_settings"]
#: module -> a name it owns
JOBS = {"runconfig": "RunConfig", "roles": "RoleSettings", "loading": "loads_yaml_strict",
        "validation": "validate_settings", "resolve": "apply_preset", "stored": "identity_differences"}


def test_every_name_is_importable_from_the_package() -> None:
    assert set(NAMES) <= set(config.__all__)
    for name in config.__all__:
        assert getattr(config, name) is not None, name


def test_each_job_has_its_module() -> None:
    for module, name in JOBS.items():
        mod = importlib.import_module(f"mtvbench.config.{module}")
        assert (mod.__doc__ or "").strip(), module
        assert getattr(mod, name) is getattr(config, name), (module, name)
