"""Run settings (one pydantic model), loadable from YAML and overridden by CLI flags.

No secret is ever part of a config: keys are named by the environment variable that holds
them (``model_api_key_env``), and only that name is stored.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator

from mtvbench.errors import ConfigError
from mtvbench.media.frames import FrameSettings
from mtvbench.models.base import BackendOptions
from mtvbench.prompts import PromptStyle

ContextMode = Literal["golden", "self", "none"]


class RoleSettings(BackendOptions):
    """Connection and generation settings of one role (model under test, or judge)."""

    def backend_options(self) -> BackendOptions:
        return BackendOptions.model_validate(self.model_dump())


class RunConfig(BaseModel):
    data: Path
    #: what the user asked for: a preset name (``qwen3-vl-8b-instruct``) or a backend spec
    model: str
    #: the backend spec actually run (``hf:Qwen/...``); set from the preset, else equal to ``model``
    model_spec: str | None = None
    judge: str = "offline"
    out: Path
    context: ContextMode = "golden"
    #: ``paper`` (Figure 15) or ``authors`` (the authors' infer_qwen25vl.py prompt; part of the run's identity)
    prompt_style: PromptStyle = "paper"
    frames: int = Field(128, ge=1)
    max_side: int | None = Field(720, ge=16)
    frame_size: tuple[int, int] | None = None
    jpeg_quality: int = Field(90, ge=10, le=100)
    judge_runs: int = Field(3, ge=1)
    judge_max_attempts: int = Field(3, ge=1)
    concurrency: int = Field(16, ge=1)
    #: videos whose frames are held (and whose turns run) at once; raise it to give a local
    #: engine (hf/vllm) bigger batches across videos, at the cost of memory
    videos_in_flight: int = Field(2, ge=1)
    judge_concurrency: int | None = None
    limit: int | None = Field(None, ge=1)
    cache_dir: Path | None = None
    seed: int = 0
    bootstrap: int = Field(1000, ge=0)
    model_settings: RoleSettings = Field(default_factory=RoleSettings)
    judge_settings: RoleSettings = Field(default_factory=RoleSettings)

    @field_validator("frame_size", mode="before")
    @classmethod
    def _parse_size(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                w, h = v.lower().split("x")
                return int(w), int(h)
            except ValueError as e:
                raise ValueError(f"frame_size must look like 448x448, got {v!r}") from e
        return v

    def frame_settings(self) -> FrameSettings:
        return FrameSettings(num_frames=self.frames, max_side=self.max_side, size=self.frame_size,
                             jpeg_quality=self.jpeg_quality)

    @property
    def backend_spec(self) -> str:
        return self.model_spec or self.model

    def identity(self) -> dict[str, Any]:
        """The settings that define what a stored answer or verdict means (checked on resume)."""
        identity: dict[str, Any] = {
            "model": self.backend_spec, "judge": self.judge, "context": self.context,
            "frames": self.frame_settings().key(),
            "model_generation": self.model_settings.model_dump(
                include={"max_tokens", "temperature", "top_p", "top_k", "system"}),
        }
        if self.prompt_style != "paper":  # absent for the default, so run directories made before it resume
            identity["prompt_style"] = self.prompt_style
        return identity


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a mapping of settings")
    return data


def _merge_extra(preset: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Given settings win; a given ``extra_body`` adds to the preset's instead of replacing it."""
    merged = {**preset, **given}
    if isinstance(preset.get("extra_body"), dict) and isinstance(given.get("extra_body"), dict):
        merged["extra_body"] = {**preset["extra_body"], **given["extra_body"]}
    return merged


def apply_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``model`` through the preset registry (models/presets.yaml).

    A preset supplies the backend spec, generation settings and frame settings of its paper
    row; every setting present in ``values`` (flags, YAML) wins over the preset's. The model
    option ``served_name`` names the checkpoint on an OpenAI-compatible server (``PRESET@openai``).
    """
    from mtvbench.models.base import UnknownModelError
    from mtvbench.models.presets import get_preset, resolve_model

    if "model" not in values or values.get("model_spec"):
        return values
    model = str(values["model"])
    given = dict(values.get("model_settings") or {})
    given_extra = dict(given.pop("extra", None) or {})
    served_name = given_extra.pop("served_name", None)
    spec, options, frames = resolve_model(model, served_name=None if served_name is None else str(served_name))
    out = dict(values)
    out["model_spec"] = spec
    preset_settings = options.model_dump(exclude_none=True, exclude_defaults=True)
    extra = _merge_extra(preset_settings.pop("extra", {}), given_extra)
    merged = {**preset_settings, **given}
    if extra:
        merged["extra"] = extra
    if merged:
        out["model_settings"] = merged
    preset = get_preset(model)
    if preset is not None:
        preset.check_prompt_style(str(values.get("prompt_style", "paper")))
        if (spec.startswith("openai:") and not preset.closed and not merged.get("base_url")
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


def build_config(values: dict[str, Any], source: str = "settings") -> RunConfig:
    from mtvbench.models.base import UnknownModelError

    try:
        return RunConfig.model_validate(apply_preset(values))
    except UnknownModelError as e:
        raise ConfigError(f"{source}: field 'model': {e}") from e
    except ValidationError as e:
        lines = [f"{source}: field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors()]
        raise ConfigError("\n".join(lines)) from e
