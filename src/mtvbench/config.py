"""Run settings (one pydantic model), loadable from YAML and overridden by CLI flags.

No secret is ever part of a config: keys are named by the environment variable that holds
them (``model_api_key_env``), and only that name is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator

from mtvbench.data.schema import TASKS, Task
from mtvbench.errors import ConfigError
from mtvbench.media.frames import FrameSettings
from mtvbench.models.base import BackendOptions

ContextMode = Literal["golden", "self", "none"]

#: version of the run-directory format (store meta, config.yaml, benchmark.json); bumped when a
#: stored field changes meaning, so a run directory of another format is refused, not misread
RUN_SCHEMA_VERSION = 2
#: keys a run directory's config.yaml carries besides the settings (so it can be passed to --config)
RECORD_KEYS = ("schema_version", "mtvbench_version")


def parse_tasks(value: Any) -> list[str]:
    """Task keys (``object_reference``), abbreviations (``OR``) or release stems (``summary``),
    as a list or a comma-separated string -> task keys in the paper's order."""
    items = value.split(",") if isinstance(value, str) else list(value)
    lookup: dict[str, Task] = {}
    for t in TASKS:
        for name in (t.value, t.abbr, t.official_stem):
            lookup[name.lower()] = t
    chosen: set[Task] = set()
    for item in items:
        name = str(item).strip().lower()
        if not name:
            continue
        if name not in lookup:
            valid = ", ".join(f"{t.abbr} ({t.value})" for t in TASKS)
            raise ValueError(f"unknown task {str(item).strip()!r}; valid: {valid}")
        chosen.add(lookup[name])
    if not chosen:
        raise ValueError("no task selected")
    return [t.value for t in TASKS if t in chosen]


class Price(BaseModel):
    """Prices per million tokens (in the currency you choose; the cost is reported in it)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


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
    #: the tasks evaluated (task keys); None: all six. Part of the run identity.
    tasks: list[str] | None = None
    #: per-million-token prices by role (``model``, ``judge``) or backend spec (``openai:gpt-4o``)
    prices: dict[str, Price] = Field(default_factory=dict)

    @field_validator("tasks", mode="before")
    @classmethod
    def _parse_tasks(cls, v: Any) -> Any:
        return None if v is None else parse_tasks(v)

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

    @property
    def selected_tasks(self) -> tuple[Task, ...]:
        return TASKS if self.tasks is None else tuple(Task(t) for t in self.tasks)

    def price(self, role: str) -> Price | None:
        """The price of ``role`` (``model``/``judge``): by role name, else by backend spec."""
        specs = (role, self.backend_spec, self.model) if role == "model" else (role, self.judge)
        return next((self.prices[k] for k in specs if k in self.prices), None)

    def identity(self) -> dict[str, Any]:
        """The settings that define what a stored answer or verdict means (checked on resume)."""
        return {
            "model": self.backend_spec, "judge": self.judge, "context": self.context,
            "frames": self.frame_settings().key(),
            "model_generation": self.model_settings.model_dump(
                include={"max_tokens", "temperature", "top_p", "top_k", "system"}),
            "tasks": [t.value for t in self.selected_tasks],
        }


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a mapping of settings")
    return data


def apply_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``model`` through the preset registry (models/presets.yaml).

    A preset supplies the backend spec, generation settings and frame settings of its paper
    row; every setting present in ``values`` (flags, YAML) wins over the preset's.
    """
    from mtvbench.models.presets import resolve_model

    if "model" not in values or values.get("model_spec"):
        return values
    spec, options, frames = resolve_model(str(values["model"]))
    out = dict(values)
    out["model_spec"] = spec
    preset_settings = options.model_dump(exclude_none=True, exclude_defaults=True)
    given = dict(values.get("model_settings") or {})
    extra = {**preset_settings.pop("extra", {}), **given.pop("extra", {})}
    merged = {**preset_settings, **given}
    if extra:
        merged["extra"] = extra
    if merged:
        out["model_settings"] = merged
    if frames is not None:
        if "frames" not in values:
            out["frames"] = frames.num_frames
        if not ({"max_side", "frame_size"} & set(values)):
            out["max_side"] = frames.max_side
            out["frame_size"] = frames.size
    return out


def build_config(values: dict[str, Any], source: str = "settings") -> RunConfig:
    from mtvbench.models.base import UnknownModelError

    values = dict(values)
    found = values.pop("schema_version", RUN_SCHEMA_VERSION)
    values.pop("mtvbench_version", None)
    if found != RUN_SCHEMA_VERSION:  # a run directory's config.yaml of another format
        raise ConfigError(f"{source}: field 'schema_version': run-directory format {found!r}, "
                          f"this mtvbench reads format {RUN_SCHEMA_VERSION}")
    try:
        return RunConfig.model_validate(apply_preset(values))
    except UnknownModelError as e:
        raise ConfigError(f"{source}: field 'model': {e}") from e
    except ValidationError as e:
        lines = [f"{source}: field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors()]
        raise ConfigError("\n".join(lines)) from e
