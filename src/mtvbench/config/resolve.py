"""Preset resolution: ``--model qwen3-vl-8b-instruct`` -> the backend spec, settings and frames of that
paper row (:mod:`mtvbench.models.presets`), with the given settings on top.

:func:`apply_preset` runs before the run settings are validated (``prepare`` of
:func:`~mtvbench.config.validation.validate_settings`); the role's settings are merged typed, in one
place (:meth:`mtvbench.models.settings.BackendOptions.merge`); :func:`preset_overrides` lists the preset
values the given settings change (a run that changes one is marked "modified" in every table);
:func:`mtvbench.config.runconfig.mark_origins` records, for messages, which values the preset gave.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from mtvbench.config.roles import RoleSettings
from mtvbench.config.stored import DEFAULT_PROTOCOL
from mtvbench.models.endpoints import key_variable_problem
from mtvbench.models.settings import (
    OPERATIONAL_OPTIONS,
    OPTIONS_KEY,
    BackendOptions,
)

#: settings of a preset run that may change without it becoming another configuration: where and how
#: the model is called
_NOT_PRESET_VALUES = frozenset({"base_url", "api_key_env", "served_name", "checkpoint", *OPERATIONAL_OPTIONS})


def _check_preset_key(preset: str, key_env: str | None, given: dict[str, Any]) -> None:
    """The key variable a preset names (``doubao-seed-1.6``: ``ARK_API_KEY``) must be set, unless the
    settings name another one."""
    from mtvbench.models.registry import MissingKeyError

    if key_env is None or "api_key_env" in given:
        return
    if key_variable_problem(key_env) is not None:
        raise MissingKeyError(f"the preset '{preset}' sends its key from the environment variable {key_env}, which "
                              "is not set (or is empty): export it, or name another variable with --model-api-key-env "
                              "(model_settings.api_key_env)")


def _size(value: Any) -> Any:
    """A frame size as given (``"448x448"``, ``[448, 448]``) as a tuple, for comparing; else as it is."""
    if isinstance(value, str) and value.lower().count("x") == 1:
        w, h = value.lower().split("x")
        return (int(w), int(h)) if w.strip().isdigit() and h.strip().isdigit() else value
    return tuple(value) if isinstance(value, list) else value


def _changed(given: dict[str, Any], preset: dict[str, Any], prefix: str = "") -> list[str]:
    """The keys of ``given`` whose value differs from the preset's (answer-changing ones only)."""
    out = []
    for key, value in given.items():
        if key in _NOT_PRESET_VALUES:
            continue
        if key == "extra_body" and isinstance(value, dict) and isinstance(preset.get(key) or {}, dict):
            out += _changed(value, preset.get(key) or {}, "extra_body.")
        elif value != preset.get(key):
            out.append("system prompt" if key == "system" else prefix + key)
    return out


def preset_overrides(values: dict[str, Any], preset_settings: dict[str, Any], frames: Any) -> list[str]:
    """Which values of a preset the given settings change: generation settings, the system prompt,
    answer-changing backend options (``model_settings``), frames and frame size. Where and how the
    model is called (URL, key variable, ``served_name``, timeouts, concurrency) is not a preset value."""
    given = dict(values.get("model_settings") or {})
    given_options = dict(given.get(OPTIONS_KEY) or {})
    preset_options = dict(preset_settings.get(OPTIONS_KEY) or {})
    top = {k: v for k, v in given.items() if k != OPTIONS_KEY}
    out = _changed(top, preset_settings)
    out += _changed(given_options, preset_options)
    if frames is not None and "frames" in values and values["frames"] != frames.num_frames:
        out.append("frames")
    if frames is not None and {"max_side", "frame_size"} & set(values):
        size = _size(values.get("frame_size"))
        mine = ("size", size) if size is not None else ("side", values.get("max_side", 720))
        theirs = ("size", frames.size) if frames.size is not None else ("side", frames.max_side)
        if mine != theirs:
            out.append("frame size")
    return out


def apply_preset(values: dict[str, Any], *, needs_server: bool = True) -> dict[str, Any]:
    """Resolve ``model`` through the preset registry (models/presets.yaml) under the protocol given (the run
    directory's own, given by :func:`mtvbench.run.settings.build_config`; else ``authors``).

    A preset supplies the backend spec, generation settings and frame settings of its paper
    row; every setting present in ``values`` (flags, YAML) wins over the preset's (the role's settings:
    :meth:`~mtvbench.models.settings.BackendOptions.merge`), and the ones that change a preset value are
    recorded in ``preset_overrides`` (:func:`preset_overrides`).
    The model option ``served_name`` names the checkpoint on an OpenAI-compatible server
    (``PRESET@openai``); ``checkpoint`` runs the preset on a local copy of its weights (``hf``/``vllm``:
    ``--model qwen3-vl-8b-instruct --model-option checkpoint=/models/Qwen3-VL-8B-Instruct``).
    ``needs_server=False`` (``estimate``, which calls nothing) does not ask for the URL of a server the
    user starts."""
    from mtvbench.models.presets import get_preset, resolve_model
    from mtvbench.models.registry import UnknownModelError

    values = dict(values)
    if values.get("protocol") is None:
        values["protocol"] = DEFAULT_PROTOCOL
    if "model" not in values or values.get("model_spec"):
        return values
    protocol = str(values["protocol"])
    model = str(values["model"])
    given = dict(values.get("model_settings") or {})
    given_options = dict(given.pop(OPTIONS_KEY, None) or {})
    served_name = given_options.pop("served_name", None)
    checkpoint = given_options.pop("checkpoint", None)
    spec, options, frames = resolve_model(model, checkpoint=None if checkpoint is None else str(checkpoint),
                                          served_name=None if served_name is None else str(served_name),
                                          protocol=protocol)
    out = dict(values)
    out["model_spec"] = spec
    merged = _merged_settings(options, {**given, OPTIONS_KEY: given_options} if given_options else given)
    if merged:
        out["model_settings"] = merged
    preset = get_preset(model)
    if preset is not None:
        preset_settings = options.model_dump(exclude_none=True, exclude_defaults=True)
        out["preset_overrides"] = preset_overrides(values, {**preset_settings, OPTIONS_KEY: options.options}, frames)
        out.setdefault("inference", preset.inference(protocol))
        _check_preset_key(preset.name, options.api_key_env, given)
        if (needs_server and spec.startswith("openai:") and not preset.closed and not merged.get("base_url")
                and not os.environ.get("OPENAI_BASE_URL")):
            how = f" (e.g. `{preset.serve}`)" if preset.serve else ""
            raise UnknownModelError(
                f"'{model}' runs on an OpenAI-compatible server you start{how}: give its URL with "
                "--model-base-url http://HOST:PORT/v1 (or model_settings.base_url, or OPENAI_BASE_URL)")
    if frames is not None:
        if "frames" not in values:
            out["frames"] = frames.num_frames
        if not ({"max_side", "frame_size"} & set(values)):
            out["max_side"] = frames.max_side
            out["frame_size"] = frames.size
    return out


def _merged_settings(preset: BackendOptions, given: dict[str, Any]) -> dict[str, Any]:
    """The model's settings: the preset's options with the given ones on top (:meth:`BackendOptions.merge`),
    as the values the run settings are validated from. Given settings that are not valid are left as they
    are, for the validation of the run settings to name them (by their flag or key)."""
    try:
        mine = RoleSettings.model_validate(given)
    except ValidationError:
        return given
    return preset.merge(mine).model_dump(exclude_defaults=True)
