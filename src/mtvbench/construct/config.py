"""The settings of a build (``mtvbench build --config FILE`` and the flags): :class:`BuildConfig`, assembled
from the stage registry.

``BuildConfig`` is :class:`~mtvbench.construct.build_settings.BuildSettings` (what every build has: the
model spec and its backend settings, concurrency, whether the object stages run, the detector and the
text embedder the builder provides, the frame size, the re-ask bound, the executor) plus one section per
stage that declares a settings model (:attr:`~mtvbench.construct.stages.Stage.settings_model`), keyed by the
stage's name (``split: {detector: adaptive}``, ``caption: {frames: 8}``; the objects stage's is ``bank``).
A stage of another package that declares one adds its section; nothing here changes. A stage reads its section with
``ctx.config.section(ItsSettings)``.

It validates itself: unknown keys are errors with a suggestion, values are checked strictly
(:func:`load_build_config` names a bad value by its file and key, or by the flag that gave it), the
backend settings as a run's are. ``mtvbench build``'s flags are derived from it
(:func:`mtvbench.cli.construct.build_flags`, with :mod:`mtvbench.run.flags`): every field with a
description is a flag, a section's as ``--SECTION-FIELD`` (``--split-detector``, ``--caption-frames``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field, create_model

from mtvbench.config import validate_settings
from mtvbench.construct.build_settings import BuildSettings
from mtvbench.construct.stages import STAGES, Stage, loadable_stages
from mtvbench.extras import require_backend, require_modules
from mtvbench.registry import RegistryError


def assemble(stages: Mapping[str, Stage]) -> type[BuildSettings]:
    """:class:`BuildSettings` with a section per stage of ``stages`` that declares a settings model.

    Raises:
        RegistryError: a stage's section key is taken (by a build setting or by another stage)."""
    fields: dict[str, Any] = {}
    sections: dict[str, str] = {}
    for name, stage in stages.items():
        if stage.settings_model is None:
            continue
        key = stage.section or name
        attr = key.replace("-", "_")
        if attr in BuildSettings.model_fields or attr in fields:
            raise RegistryError(f"construction stage {name!r}: its settings key {key!r} is taken (a build setting "
                                "or another stage's section)", hint="give the stage another section=")
        fields[attr] = (stage.settings_model, Field(default_factory=stage.settings_model,
                                                    alias=key if key != attr else None))
        sections[key] = name
    model = create_model("BuildConfig", __base__=BuildSettings, __module__=__name__, **fields)
    model.__doc__ = BuildSettings.__doc__
    model.SECTIONS = sections
    return model


def _fingerprint(stages: Mapping[str, Stage]) -> tuple[Any, ...]:
    return tuple((name, s.settings_model, s.section) for name, s in stages.items() if s.settings_model is not None)


#: the build settings of the stages registered when mtvbench was imported (the built-ins, and those of
#: other packages' entry points that load)
BuildConfig = assemble(loadable_stages())
_ASSEMBLED: dict[tuple[Any, ...], type[BuildSettings]] = {_fingerprint(loadable_stages()): BuildConfig}


def build_config_type() -> type[BuildSettings]:
    """:data:`BuildConfig` for the stages registered now (a stage registered in code since adds its section)."""
    stages = loadable_stages()
    key = _fingerprint(stages)
    if key not in _ASSEMBLED:
        _ASSEMBLED[key] = assemble(stages)
    return _ASSEMBLED[key]


def load_build_config(values: Mapping[str, Any], source: str = "settings",
                      flags: Mapping[str, str] | None = None) -> BuildSettings:
    """The build settings from plain values (a YAML mapping with the flags on top), checked strictly.

    Args:
        values: the settings.
        source: names the values in messages (a file name, ``command line``).
        flags: dotted setting -> the flag that gave it, so a bad value is named by its flag.

    Raises:
        ConfigError: every problem at once, one line each."""
    return validate_settings(build_config_type(), values, source, flags=flags)


def require_stages(stages: Iterable[str], *, objects: bool = True, detector: str | None = None) -> None:
    """The extras of construction stages, checked without importing them. With ``objects`` false
    the object stages are skipped; a custom ``detector`` (``module:factory``) brings its own
    dependencies."""
    require_build_config(stages, BuildConfig(objects=objects, detector=detector), backends=False)


def require_build(stages: Iterable[str], config: BuildSettings) -> None:
    """Everything ``mtvbench build`` needs for ``stages`` under ``config``: the stages' extras and
    the extras of the model backends it names (checked before the workspace is created)."""
    require_build_config(stages, config, backends=True)


def require_build_config(stages: Iterable[str], config: BuildSettings, *, backends: bool) -> None:
    active = {s: STAGES.get(s) for s in stages if s in STAGES}
    active = {s: st for s, st in active.items() if config.objects or not st.object_stage}
    for name, stage in active.items():
        needs = stage.needs_under(config)
        if needs is not None:
            require_modules(f"the {name} stage", *needs)
    if backends and any(stage.role is not None for stage in active.values()):
        for spec in sorted({config.model, *config.models.values()} - {None, ""}):
            require_backend(str(spec), "build")


__all__ = ["BuildConfig", "BuildSettings", "assemble", "build_config_type", "load_build_config", "require_build",
           "require_stages"]
