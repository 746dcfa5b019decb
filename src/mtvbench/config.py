"""Run settings (one pydantic model), loadable from YAML and overridden by CLI flags.

No secret is ever part of a config: keys are named by the environment variable that holds
them (``model_api_key_env``), and only that name is stored.

Settings are strict (:func:`validate_settings`, used for ``run``/``sweep`` settings and for
``mtvbench build --config`` files):

- an unknown key is an error with a suggestion (``unknown setting 'frame' in run.yaml (did
  you mean 'frames'?)``); the one free-form place is ``model_settings.extra`` /
  ``judge_settings.extra`` (backend options, ``--model-option KEY=VALUE``);
- a number must be a finite number of the right kind (``NaN``, ``.inf`` and ``true`` are not
  numbers; ``2.5`` is not an integer); ranges: ``temperature >= 0``, ``0 < top_p <= 1``,
  ``max_tokens >= 1``, ``repetition_penalty > 0``, ``-2 <= presence_penalty <= 2``,
  ``0 <= min_p <= 1``, ``frames``/``concurrency``/``judge_runs`` ``>= 1``, a frame size ``WxH``
  of integers from 1 to 8192, ``extra_body`` a mapping;
- a config file is a regular file of UTF-8 YAML (or JSON) whose keys appear once;
- a key variable named explicitly (``api_key_env``: a flag, the file or a preset) must be set and
  non-empty in the environment (the value is read, never stored): checked here, before anything is
  written, not when a run directory's own ``config.yaml`` is read back for scoring.

Every problem is listed at once, one line each, naming the flag (``--temperature``) when the
value came from the command line and the file and key otherwise.
"""

from __future__ import annotations

import difflib
import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from mtvbench.data.schema import TASKS, Task
from mtvbench.errors import ConfigError, MtvbenchError
from mtvbench.media.frames import MAX_FRAME_SIDE, FrameRule, FrameSettings, script_size_problem
from mtvbench.models.endpoints import key_variable_problem
from mtvbench.models.settings import OPERATIONAL_OPTIONS, BackendOptions
from mtvbench.prompts import InferenceStyle
from mtvbench.protocol import ProtocolName
from mtvbench.records import GenerationConfig
from mtvbench.util.jsonio import loads_strict, read_text_file

ContextMode = Literal["golden", "self", "none"]
M = TypeVar("M", bound=BaseModel)
#: the largest settings file we read
MAX_CONFIG_BYTES = 16 << 20
_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
#: validation context of settings for a new run or build: the environment they name is checked
_CHECK_ENVIRONMENT = "check_environment"


#: generation and connection settings: field -> (test, the rule in words)
_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "temperature": (lambda v: v >= 0, "must be a number >= 0"),
    "top_p": (lambda v: 0 < v <= 1, "must be in (0, 1]"),
    "top_k": (lambda v: v >= -1, "must be >= 1, or 0 / -1 for no top-k limit"),
    "max_tokens": (lambda v: v >= 1, "must be >= 1"),
    "repetition_penalty": (lambda v: v > 0, "must be > 0 (1.0: no penalty)"),
    "presence_penalty": (lambda v: -2 <= v <= 2, "must be in [-2, 2]"),
    "min_p": (lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    "timeout_s": (lambda v: v > 0, "must be > 0 seconds"),
    "max_retries": (lambda v: v >= 0, "must be >= 0"),
}

#: settings of a preset run that may change without it becoming another configuration: where and how
#: the model is called
_NOT_PRESET_VALUES = frozenset({"base_url", "api_key_env", "served_name", "checkpoint", *OPERATIONAL_OPTIONS})

#: version of the run-directory format (store meta, config.yaml, benchmark.json); bumped when a
#: stored field changes meaning, so a run directory of another format is refused, not misread
RUN_SCHEMA_VERSION = 2
#: keys a run directory's config.yaml carries besides the settings (so it can be passed to --config)
#: what a run directory's config.yaml records besides the settings (read back, never a setting):
#: the format, the version that wrote it, the base URL each role actually called, and what the model was sent
RECORD_KEYS = ("schema_version", "mtvbench_version", "endpoints", "inference_sent")
#: the protocol of a new run directory
DEFAULT_PROTOCOL: ProtocolName = "authors"
#: the ``authors`` protocol's inference styles, by the authors' script they reproduce
AUTHORS_SCRIPTS: dict[str, str] = {"qwen-script": "authors: eval/infer_qwen25vl.py",
                                   "internvl-script": "authors: eval/infer_internvl.py"}
#: backends that run the model in this process: a script's frames reach them without loss (PNG tiles), and
#: ``hf:`` feeds the checkpoint's own processor exactly as the script does
IN_PROCESS_BACKENDS = ("hf", "vllm")
#: what a backend other than ``hf:`` gets under a script's style, and what of the script it cannot reproduce
#: (``{n}`` frames, ``{kind}`` JPEG/PNG, ``{size}`` the tile size)
NOT_REPRODUCED: dict[str, str] = {
    "qwen-script": "the script's MP4 decoded to {n} {kind} images after the text; the checkpoint processor's own "
                   "resampling of the MP4 (Qwen3-VL: 17 of 128 frames) and Qwen3-VL's clip timestamps not reproduced",
    "internvl-script": "the script's {n} frames as {size} {kind} images; where InternVL's chat() puts the image "
                       "tokens (the first 128 '<image>' lines, in the first history turn that has them) not "
                       "reproduced",
}
#: settings that no longer exist -> what to use instead (one error, never silently ignored)
REMOVED_SETTINGS: dict[str, str] = {
    "prompt_style": "--prompt-style (prompt_style) was removed: use --protocol authors (the authors' released code, "
                    "the default: their scripts' prompts for the Qwen and InternVL rows, eval.py's judge and scoring) "
                    "or --protocol paper (Figure 15, Figure 17, unrounded scores)",
}


def stored_protocol(out: Path | str | None) -> ProtocolName | None:
    """The protocol of the run directory ``out`` from its config.yaml: its ``protocol``, ``paper`` for a run
    directory made before protocols existed, None when ``out`` is no run directory (yet) or unreadable."""
    if out is None:
        return None
    path = Path(out) / "config.yaml"
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None  # reading the run directory later says what is wrong with it
    if not isinstance(data, dict):
        return None
    found = data.get("protocol") or "paper"
    return found if found in ("authors", "paper") else None  # type: ignore[return-value]


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

    model_config = _STRICT

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    #: prompt tokens served from the provider's prefix or context cache (None: priced as ``input``)
    cached_input: float | None = Field(None, ge=0)


class RoleSettings(BackendOptions):
    """Connection and generation settings of one role (model under test, or judge)."""

    model_config = _STRICT

    @field_validator(*_RANGES)
    @classmethod
    def _in_range(cls, v: float | None, info: ValidationInfo) -> float | None:
        ok, rule = _RANGES[info.field_name]
        if v is not None and not ok(v):
            raise ValueError(rule)
        return v

    @field_validator("api_key_env")
    @classmethod
    def _key_variable(cls, v: str | None, info: ValidationInfo) -> str | None:
        """A named key variable must hold a key, when the settings are for a new run or build
        (:func:`validate_settings`), not when a stored ``config.yaml`` is read back."""
        if v is not None and (info.context or {}).get(_CHECK_ENVIRONMENT):
            problem = key_variable_problem(v)
            if problem is not None:
                raise ValueError(problem)
        return v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if key in BackendOptions.model_fields:
                raise ValueError(f"{key!r} is a setting of its own, not a backend option: "
                                 f"give it as {key} (or its flag), not inside extra / --model-option")
        body = v.get("extra_body")
        if body is not None and not isinstance(body, dict):
            raise ValueError(f"extra_body must be a mapping of request fields (e.g. {{top_k: 20}}), "
                             f"got {type(body).__name__} {body!r}")
        return v

    def backend_options(self) -> BackendOptions:
        return BackendOptions.model_validate(self.model_dump()).with_origin(self.origin)


ExecutorName = Literal["local", "ray"]


class RaySettings(BaseModel):
    """Resources of ``--executor ray`` (:mod:`mtvbench.run.ray_executor`, :mod:`mtvbench.construct.ray_executor`).
    How work is spread never changes a result: none of this is part of a run's identity."""

    model_config = _STRICT

    #: model replicas (Ray actors, one model each); default: one per node, or, with ``num_gpus``,
    #: as many as the cluster's GPUs hold
    replicas: int | None = Field(None, ge=1)
    #: GPUs of one replica (``vllm:`` with ``tensor_parallel_size=N``: N); 0 runs it on CPUs
    num_gpus: float = Field(0, ge=0)
    #: CPUs one replica holds for its life
    num_cpus: float = Field(1, ge=0)
    #: CPUs of one frame-decoding task (construction: of one split/key-frame task)
    task_cpus: float = Field(1, ge=0)
    #: GPUs of the construction's detector actor (YOLO11)
    detect_gpus: float = Field(0, ge=0)
    #: times a video's unfinished turns are sent to a new replica after the one running them died
    max_retries: int = Field(3, ge=0)


class RunConfig(BaseModel):
    """Every setting of one evaluation (``mtvbench run``, ``--config run.yaml``, :func:`mtvbench.evaluate`).

    A field with a ``description`` is also a flag of ``mtvbench run`` (``frames`` -> ``--frames``, the
    description its help; :mod:`mtvbench.run.flags`), so a new setting is added here and nowhere
    else. Fields without one are set in the YAML only (or, for ``model_spec``, resolved from a preset)."""

    model_config = _STRICT

    data: Path = Field(description="dataset root in the released layout, or hf:ORG/NAME")
    #: what the user asked for: a preset name (``qwen3-vl-8b-instruct``) or a backend spec
    model: str = Field(description="model under test: a preset (`mtvbench models`), or openai:NAME, gemini:NAME, "
                                   "hf:PATH_OR_ID, vllm:PATH_OR_ID, oracle, refuse")
    #: the backend spec actually run (``hf:Qwen/...``); set from the preset, else equal to ``model``
    model_spec: str | None = None
    #: required: the offline lexical judge only when asked for by name (its scores are not the paper's)
    judge: str = Field(description="judge (required): openai:NAME (the paper's: gemini-2.5-flash), "
                                   "or offline (lexical matcher, pipeline checks only)")
    out: Path = Field(description="run directory (resumable)")
    context: ContextMode = Field("golden", description="golden | self | none")
    #: ``authors`` (the released code that made Table 2) or ``paper`` (the paper's text); None: the run
    #: directory's own when it exists (``paper`` for one made before protocols existed), else ``authors``
    protocol: ProtocolName | None = Field(None, description="authors (default: the authors' released code, "
                                          "as Table 2 was made, so scores compare with it) | paper (the paper's "
                                          "text read cleanly); a run directory keeps its own")
    #: what the model under test is sent: Figure 15 (``paper``) or the authors' script for its row under the
    #: ``authors`` protocol (``qwen-script``, ``internvl-script``); set from the preset, part of the identity
    inference: InferenceStyle = "paper"
    frames: int = Field(128, ge=1, description="frames sampled uniformly over the whole video")
    max_side: int | None = Field(720, ge=16, description="longer side of a frame at most this (px)")
    frame_size: tuple[int, int] | None = Field(None, description="fixed frame size WxH, e.g. 448x448",
                                               validate_default=True)
    jpeg_quality: int = Field(90, ge=10, le=100, description="JPEG quality of the sampled frames (10-100)")
    judge_runs: int = Field(3, ge=1, description="judge runs per turn, averaged")
    judge_max_attempts: int | None = Field(None, ge=1, description="asks per judge run while the reply cannot be "
                                                                   "read (default: 5 under --protocol authors, as "
                                                                   "eval.py; 3 under paper)")
    concurrency: int = Field(16, ge=1, description="model calls in flight")
    #: the memory bound of a run: raise it for more calls in flight on videos with few turns, or
    #: bigger batches of a local engine (hf/vllm) across videos
    videos_in_flight: int = Field(4, ge=1, description="videos whose frames are held at once (decoded ahead or "
                                                       "with turns running)")
    decode_workers: int | None = Field(None, ge=1, description="videos decoded at a time, in threads that hold no "
                                                               "call slot (default: 2, or 1 on one CPU)")
    judge_concurrency: int | None = Field(None, ge=1, description="judge calls in flight (default: --concurrency)")
    limit: int | None = Field(None, ge=1, description="at most N dialogues per task")
    cache_dir: Path | None = Field(None, description="frame cache folder")
    seed: int = Field(0, description="seed of the bootstrap confidence intervals")
    bootstrap: int = Field(1000, ge=0, description="bootstrap draws for the confidence intervals")
    model_settings: RoleSettings = Field(default_factory=RoleSettings)
    judge_settings: RoleSettings = Field(default_factory=RoleSettings)
    #: the tasks evaluated (task keys); None: all six. Part of the run identity.
    tasks: list[str] | None = Field(None, description="evaluate only these tasks, e.g. OR,MR (keys or "
                                                      "abbreviations); the Overall is then partial")
    #: per-million-token prices by role (``model``, ``judge``) or backend spec (``openai:gpt-4o``)
    prices: dict[str, Price] = Field(default_factory=dict)
    #: who asks the model under test: ``local`` (this process) or ``ray`` (a Ray cluster); the
    #: store, the judge and the scores stay in this process either way. Not part of the identity.
    executor: ExecutorName = Field("local", description="local | ray (model calls on a Ray cluster: pip install "
                                                        "'mtvbench[ray]'; see Scaling out)")
    #: the cluster of ``executor: ray``: ``auto`` (started with ``ray start`` on this machine),
    #: ``HOST:PORT`` of its head, or None: a Ray instance started for this run on this machine
    ray_address: str | None = Field(None, description="Ray cluster of --executor ray: auto | HOST:PORT (default: "
                                                      "a Ray instance started for this run)")
    ray: RaySettings = Field(default_factory=RaySettings)
    #: the preset values this run overrides (set by :func:`apply_preset`; recorded in config.yaml): the
    #: run is marked "(modified: ...)" in every table and report
    preset_overrides: list[str] = Field(default_factory=list)

    @field_validator("tasks", mode="before")
    @classmethod
    def _parse_tasks(cls, v: Any) -> Any:
        return None if v is None else parse_tasks(v)

    @model_validator(mode="after")
    def _resolve_protocol(self) -> RunConfig:
        if self.protocol is None:
            self.protocol = stored_protocol(self.out) or DEFAULT_PROTOCOL
        return self

    @field_validator("frame_size", mode="before")
    @classmethod
    def _parse_size(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                w, h = v.lower().split("x")
                return int(w), int(h)
            except ValueError:
                raise ValueError("must look like WIDTHxHEIGHT, e.g. 448x448") from None
        return v

    @field_validator("frame_size")
    @classmethod
    def _positive_size(cls, v: tuple[int, int] | None, info: ValidationInfo) -> tuple[int, int] | None:
        if v is not None and min(v) < 1:
            raise ValueError("width and height must be >= 1")
        if v is not None and max(v) > MAX_FRAME_SIDE:
            raise ValueError(f"width and height must be at most {MAX_FRAME_SIDE} px")
        style = info.data.get("inference")
        if style in NOT_REPRODUCED and "max_side" in info.data:  # an authors' script's frames: its size rule
            problem = script_size_problem(style, info.data["max_side"], v)
            if problem is not None:
                raise ValueError(f"{problem} (inference {style})")
        return v

    @property
    def frame_rule(self) -> FrameRule:
        """Which frames the model is fed: the authors' script's for its inference style, else uniform sampling."""
        return self.inference if self.inference in NOT_REPRODUCED else "uniform"  # type: ignore[return-value]

    @property
    def in_process(self) -> bool:
        """The model runs in this process (``hf:``, ``vllm:``)."""
        return self.backend_spec.partition(":")[0].strip().lower() in IN_PROCESS_BACKENDS

    def frame_settings(self) -> FrameSettings:
        """The frame settings of the run: its rule, and frames kept exact (PNG) where a script's tiles are fed
        in this process; a server is sent JPEG."""
        rule = self.frame_rule
        return FrameSettings(num_frames=self.frames, max_side=self.max_side, size=self.frame_size,
                             jpeg_quality=self.jpeg_quality, rule=rule,
                             lossless=rule == "internvl-script" and self.in_process)

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

    @property
    def protocol_name(self) -> ProtocolName:
        return self.protocol or DEFAULT_PROTOCOL

    @property
    def inference_label(self) -> str:
        """What the model under test is sent, in words (config.yaml, scores.json and every report say it)."""
        if self.protocol_name == "paper":
            return "paper (Figure 15)"
        script = AUTHORS_SCRIPTS.get(self.inference)
        if script is None:
            return "paper (no released script)"
        backend = self.backend_spec.partition(":")[0].strip().lower()
        if backend == "hf":  # the script's own call (models.hf)
            return script
        fs = self.frame_settings()
        size = f"{fs.size[0]}x{fs.size[1]}" if fs.size else ""
        note = NOT_REPRODUCED[self.inference].format(n=self.frames, kind="PNG" if fs.lossless else "JPEG", size=size)
        return f"{script} ({'served' if backend == 'openai' else backend}: {note})"

    @property
    def keeps_thinking(self) -> bool:
        """The answer judged is the whole reply, ``<think>`` text included: the authors' InternVL script splits it
        off only in Think mode (which sets a system prompt); every other inference takes the text after it."""
        return self.inference == "internvl-script" and not self.model_settings.system

    def identity(self) -> dict[str, Any]:
        """The settings that define what a stored answer or verdict means (checked on resume)."""
        identity: dict[str, Any] = {
            "model": self.backend_spec, "judge": self.judge, "context": self.context,
            "frames": self.frame_settings().key(),
            "model_generation": self.model_settings.model_dump(
                include={*GenerationConfig.CALL_FIELDS, "system"}),
            "tasks": [t.value for t in self.selected_tasks],
        }
        if self.protocol_name != "paper":  # absent for paper, so run directories made before protocols resume
            identity["protocol"] = self.protocol_name
            identity["inference"] = self.inference
        return identity


class _StrictYAMLLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""


class _DuplicateYAMLKey(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first: int):
        super().__init__(f"line {line}: duplicate key {key!r} (first at line {first}); "
                         "YAML readers silently keep only the last one")


def _strict_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # '<<: *defaults' then overriding a key is what merge keys are for
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, typing.Hashable):
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateYAMLKey(key, line, seen[key])
            seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictYAMLLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def loads_yaml_strict(text: str, source: str) -> Any:
    """YAML (safe subset) with keys given once; every problem is one :class:`ConfigError` naming ``source``."""
    try:
        return yaml.load(text, Loader=_StrictYAMLLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateYAMLKey as e:
        raise ConfigError(f"{source}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise ConfigError(f"{source}: {where}not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: not valid YAML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply") from None


def load_settings_file(path: Path, what: str = "config file") -> dict[str, Any]:
    """A mapping of settings from a regular UTF-8 file: JSON for ``.json``, YAML otherwise."""
    path = Path(path)
    text = read_text_file(path, what, MAX_CONFIG_BYTES)
    data = loads_strict(text, str(path)) if path.suffix.lower() == ".json" else loads_yaml_strict(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {what} must be a mapping of settings (key: value), "
                          f"got {type(data).__name__}")
    return data


def _merge_extra(preset: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Given settings win; a given ``extra_body`` adds to the preset's instead of replacing it."""
    merged = {**preset, **given}
    if isinstance(preset.get("extra_body"), dict) and isinstance(given.get("extra_body"), dict):
        merged["extra_body"] = {**preset["extra_body"], **given["extra_body"]}
    return merged


def load_yaml(path: Path) -> dict[str, Any]:
    return load_settings_file(path)


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
    given_extra = dict(given.get("extra") or {})
    # a generation setting given in the older spelling (--model-option repetition_penalty=1.05) is its field
    moved = {k: given_extra.pop(k) for k in GenerationConfig.OPTION_FIELDS if k in given_extra}
    preset_extra = dict(preset_settings.get("extra") or {})
    top = {k: v for k, v in given.items() if k != "extra"}
    out = _changed({**top, **{k: v for k, v in moved.items() if k not in top}}, preset_settings)
    out += _changed(given_extra, preset_extra)
    if frames is not None and "frames" in values and values["frames"] != frames.num_frames:
        out.append("frames")
    if frames is not None and {"max_side", "frame_size"} & set(values):
        size = _size(values.get("frame_size"))
        mine = ("size", size) if size is not None else ("side", values.get("max_side", 720))
        theirs = ("size", frames.size) if frames.size is not None else ("side", frames.max_side)
        if mine != theirs:
            out.append("frame size")
    return out


def apply_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Resolve the protocol (given, else the run directory's own, else ``authors``) and ``model`` through the
    preset registry (models/presets.yaml).

    A preset supplies the backend spec, generation settings and frame settings of its paper
    row; every setting present in ``values`` (flags, YAML) wins over the preset's, and the ones
    that change a preset value are recorded in ``preset_overrides`` (:func:`preset_overrides`).
    The model option ``served_name`` names the checkpoint on an OpenAI-compatible server
    (``PRESET@openai``); ``checkpoint`` runs the preset on a local copy of its weights (``hf``/``vllm``:
    ``--model qwen3-vl-8b-instruct --model-option checkpoint=/models/Qwen3-VL-8B-Instruct``)."""
    from mtvbench.models.presets import get_preset, resolve_model
    from mtvbench.models.registry import UnknownModelError

    values = dict(values)
    if values.get("protocol") is None:
        values["protocol"] = stored_protocol(values.get("out")) or DEFAULT_PROTOCOL
    if "model" not in values or values.get("model_spec"):
        return values
    protocol = str(values["protocol"])
    model = str(values["model"])
    given = dict(values.get("model_settings") or {})
    given_extra = dict(given.pop("extra", None) or {})
    served_name = given_extra.pop("served_name", None)
    checkpoint = given_extra.pop("checkpoint", None)
    spec, options, frames = resolve_model(model, checkpoint=None if checkpoint is None else str(checkpoint),
                                          served_name=None if served_name is None else str(served_name),
                                          protocol=protocol)
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
        out["preset_overrides"] = preset_overrides(values, {**preset_settings, "extra": options.extra}, frames)
        out.setdefault("inference", preset.inference(protocol))
        _check_preset_key(preset.name, options.api_key_env, given)
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


# ---------------------------------------------------------------------------- strict validation


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation admits (``RoleSettings``, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _models_in(a)]
    return []


def _admits(annotation: Any, kinds: tuple[type, ...]) -> bool:
    if annotation in kinds:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_admits(a, kinds) for a in typing.get_args(annotation))
    return False


def _field_names(model: type[BaseModel]) -> dict[str, str]:
    """Accepted key -> field name (aliases included)."""
    out = {name: name for name in model.model_fields}
    out.update({f.alias: name for name, f in model.model_fields.items() if f.alias})
    return out


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


class _Problem(NamedTuple):
    loc: tuple[Any, ...]
    kind: Literal["unknown", "structure", "value"]
    message: str
    value: Any


def _structure_problems(model: type[BaseModel], data: Mapping[Any, Any], loc: tuple[Any, ...] = ()
                        ) -> list[_Problem]:
    """Unknown keys, nested settings that are not mappings, booleans given for numbers and
    non-finite numbers, found by walking ``data`` along ``model``'s fields (pydantic's lax
    mode would read ``frames: yes`` as 1, and a model without ``extra="forbid"`` drops typos)."""
    names = _field_names(model)
    out: list[_Problem] = []
    for key, value in data.items():
        here = (*loc, key)
        if not isinstance(key, str) or key not in names:
            close = difflib.get_close_matches(str(key), list(names), n=1, cutoff=0.6)
            hint = f"did you mean '{_dotted((*loc, close[0]))}'?" if close else (
                "known: " + ", ".join(sorted(names)) if len(names) <= 20 else "see --help for the settings")
            out.append(_Problem(here, "unknown", hint, value))
            continue
        annotation = model.model_fields[names[key]].annotation
        subs = _models_in(annotation)
        if subs and value is not None and not isinstance(value, BaseModel):
            if isinstance(value, Mapping):
                out += _structure_problems(subs[0], value, here)
            else:
                out.append(_Problem(here, "structure", f"must be a mapping of settings, got {type(value).__name__}",
                                    value))
        elif isinstance(value, bool) and _admits(annotation, (int, float)) and not _admits(annotation, (bool,)):
            out.append(_Problem(here, "value", "must be a number, not a yes/no value", value))
        elif isinstance(value, float) and not math.isfinite(value) and _admits(annotation, (int, float)):
            out.append(_Problem(here, "value", "must be a finite number", value))
    return out


def _origin(loc: tuple[Any, ...], flags: Mapping[str, str]) -> str | None:
    """The flag that gave the value at ``loc`` (the longest matching prefix), if any."""
    for n in range(len(loc), 0, -1):
        flag = flags.get(_dotted(loc[:n]))
        if flag is not None:
            return flag
    inside = sorted(f for key, f in flags.items() if key.startswith(_dotted(loc) + "."))
    return inside[0] if len(set(inside)) == 1 else None  # e.g. --model-option set a key of 'extra'


def _render(p: _Problem, source: str, flags: Mapping[str, str]) -> str:
    if p.kind == "unknown":
        return f"unknown setting '{_dotted(p.loc)}' in {source} ({p.message})"
    shown = repr(p.value)
    secret = "credential" in p.message or "password" in p.message  # never echo a value that holds one
    got = ("" if secret or p.value is None or isinstance(p.value, (dict, BaseModel)) or len(shown) > 80
           else f" (got {shown})")
    flag = _origin(p.loc, flags)
    if flag is not None:
        return f"{flag}: {p.message}{got}"
    if not p.loc:  # a rule over several settings (a model validator) names them itself
        return f"{source}: {p.message}"
    return f"{source}: field '{_dotted(p.loc)}': {p.message}{got}"


def validate_settings(model: type[M], data: Mapping[str, Any], source: str, *,
                      flags: Mapping[str, str] | None = None,
                      prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> M:
    """``model`` from ``data`` with every problem in one :class:`ConfigError` (one line each).

    ``flags`` maps a dotted key (``model_settings.temperature``) to the command-line flag that
    set it, so that the message names ``--temperature`` instead of the file; ``prepare``
    transforms ``data`` before pydantic sees it (the preset resolution)."""
    flags = flags or {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: settings must be a mapping (key: value), got {type(data).__name__}")
    problems = _structure_problems(model, data)
    if not any(p.kind == "structure" for p in problems):
        named = [p.loc for p in problems]
        try:
            result = model.model_validate(prepare(dict(data)) if prepare else data,
                                          context={_CHECK_ENVIRONMENT: True})
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = tuple(err["loc"])
                if err["type"] != "extra_forbidden" and not any(loc[:len(n)] == n for n in named):
                    problems.append(_Problem(loc, "value", err["msg"].removeprefix("Value error, "),
                                             err.get("input")))
        except MtvbenchError as e:  # the preset resolution: an unknown model
            problems.append(_Problem(("model",), "value", e.message, None))
        else:
            if not problems:
                return result
    raise ConfigError("\n".join(_render(p, source, flags) for p in problems))


def build_config(values: dict[str, Any], source: str = "settings", flags: Mapping[str, str] | None = None
                 ) -> RunConfig:
    """The run settings from plain values (a YAML mapping, flags), checked strictly.

    Args:
        values: the settings (``data``, ``model``, ``judge``, ``out``, ...); a preset name as
            ``model`` supplies its backend, generation and frame settings, given values win.
        source: names the values in messages (a file name, ``command line``).
        flags: dotted setting -> the flag that gave it, so a bad value is named by its flag.

    Returns:
        The settings.

    Raises:
        ConfigError: every problem at once, one line each (see :func:`validate_settings`)."""
    values = dict(values)
    found = values.pop("schema_version", RUN_SCHEMA_VERSION)
    for key in RECORD_KEYS:
        values.pop(key, None)
    if found != RUN_SCHEMA_VERSION:  # a run directory's config.yaml of another format
        raise ConfigError(f"{source}: field 'schema_version': run-directory format {found!r}, "
                          f"this mtvbench reads format {RUN_SCHEMA_VERSION}")
    for key, message in REMOVED_SETTINGS.items():
        if key in values:
            raise ConfigError(f"{source}: {message}")
    cfg = validate_settings(RunConfig, values, source, flags=flags, prepare=apply_preset)
    _mark_origins(cfg, values)
    return cfg


def _mark_origins(cfg: RunConfig, values: Mapping[str, Any]) -> None:
    """Mark each role's settings with its role and the values its preset gave it (for messages that
    say how to drop one: :class:`~mtvbench.models.settings.SettingsOrigin`)."""
    from mtvbench.models.presets import get_preset, resolve_model
    from mtvbench.models.settings import GENERATION_SETTINGS, SettingsOrigin

    preset = None if values.get("model_spec") else get_preset(cfg.model)
    keys: frozenset[str] = frozenset()
    if preset is not None:
        given = values.get("model_settings") if isinstance(values.get("model_settings"), Mapping) else {}
        extra = given.get("extra") if isinstance(given.get("extra"), Mapping) else {}
        defaults = resolve_model(cfg.model, protocol=cfg.protocol_name)[1]
        keys = frozenset(k for k in GENERATION_SETTINGS
                         if getattr(defaults, k) is not None and k not in given and k not in extra)
    cfg.model_settings.mark(SettingsOrigin(role="model", preset=preset.name if preset else None, preset_keys=keys))
    cfg.judge_settings.mark(SettingsOrigin(role="judge"))
