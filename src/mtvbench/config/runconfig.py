"""Run settings: :class:`RunConfig` (one pydantic model, immutable), loadable from YAML and overridden by CLI
flags; :func:`mtvbench.run.settings.build_config` makes one from plain values (the protocol of an existing run
directory kept, presets resolved, every value checked). Validating a :class:`RunConfig` reads nothing from disk.

No secret is ever part of a config: keys are named by the environment variable that holds
them (``model_api_key_env``), and only that name is stored.

Strict (:func:`~mtvbench.config.validation.validate_settings`): an unknown key is an error with a
suggestion, a number must be a finite number of the right kind, each role's ranges are its own
(:mod:`.roles`), ``frames``/``concurrency``/``judge_runs`` ``>= 1``, a frame size ``WxH`` of integers
from 1 to 8192. Every problem is listed at once, one line each, naming the flag (``--temperature``)
when the value came from the command line and the file and key otherwise.

:meth:`RunConfig.identity` is the only function that computes a run's identity: what a run directory belongs to, and the
settings parts of every answer's fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from mtvbench.config.roles import ExecutorName, RaySettings, RoleSettings
from mtvbench.config.stored import DEFAULT_PROTOCOL
from mtvbench.data.schema import TASKS, Task
from mtvbench.media.frames import MAX_FRAME_SIDE, FrameRule, FrameSettings, script_size_problem
from mtvbench.models.settings import GENERATION_SETTINGS, OPTIONS_KEY, SettingsOrigin
from mtvbench.prompts import InferenceStyle
from mtvbench.protocol import ProtocolName
from mtvbench.records import Price
from mtvbench.util.strict import strict

#: ``hf:`` families whose processor decodes the video file itself (:mod:`mtvbench.models.hf_families`)
FILE_READING_FAMILIES = frozenset({"videollama3", "videochat_flash"})
ContextMode = Literal["golden", "self", "none"]
#: ``run --sampling``: frames uniform over the whole video (the paper's), or part of them inside the time ranges
#: the turn's text names (:func:`mtvbench.media.frames.clip_indices`)
Sampling = Literal["uniform", "clip"]
OnOff = Literal["on", "off"]
#: ``run --cache-order``: a video's first turn alone, its other turns once it was answered (or every turn at once)
CacheOrder = Literal["on", "off"]
#: the ``authors`` protocol's inference styles, by the authors' script they reproduce
AUTHORS_SCRIPTS: dict[str, str] = {"qwen-script": "authors: eval/infer_qwen25vl.py",
                                   "internvl-script": "authors: eval/infer_internvl.py"}
#: backends that run the model in this process: a script's frames reach them without loss (PNG tiles), and
#: ``hf:`` feeds the checkpoint's own processor exactly as the script does
IN_PROCESS_BACKENDS = ("hf", "vllm")
#: what a backend other than ``hf:`` gets under a script's style, and what of the script it cannot reproduce
#: (``{n}`` frames, ``{kind}`` JPEG/PNG, ``{size}`` the tile size, ``{qwen3}`` what only a Qwen3-VL checkpoint
#: does besides: :data:`QWEN3_NOT_REPRODUCED`)
NOT_REPRODUCED: dict[str, str] = {
    "qwen-script": "the script's MP4 decoded to {n} {kind} images after the text; the checkpoint processor's own "
                   "resampling of the MP4{qwen3} not reproduced",
    "internvl-script": "the script's {n} frames as {size} {kind} images; where InternVL's chat() puts the image "
                       "tokens (the first 128 '<image>' lines, in the first history turn that has them) not "
                       "reproduced",
}


#: the roles a price may be given for by name
PRICE_ROLES = ("model", "judge")


def price_key_problem(key: str) -> str | None:
    """What is wrong with a key of ``prices``, or None: a key is a role (``model``, ``judge``), a backend spec
    (``PREFIX:NAME`` of a known backend, or a backend's bare name such as ``oracle``) or a preset name. A key for
    a model this run does not use is fine (one price table serves several runs); anything else is a typo."""
    import difflib

    from mtvbench.models.presets import get_preset, list_presets
    from mtvbench.models.registry import BACKENDS, parse_spec

    prefixes = BACKENDS.names()
    prefix, name = parse_spec(key)
    if key in PRICE_ROLES or get_preset(key) is not None:
        return None
    if ":" in key and prefix in prefixes and name:
        return None
    if ":" not in key and key in prefixes:
        return None
    if ":" in key:
        close = difflib.get_close_matches(prefix, prefixes, n=1, cutoff=0.6)
        guess = f"{close[0]}:{name}" if close and name else None
    else:
        names = [*PRICE_ROLES, *(p.name for p in list_presets()), *prefixes]
        close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        guess = close[0] if close else None
    hint = f"did you mean '{guess}'? " if guess else ""
    return (f"unknown price key '{key}' ({hint}a key is model, judge, a backend spec PREFIX:NAME such as "
            "openai:gpt-4o, or a preset name)")


#: the help panel of a ``run`` flag, by topic (the ``panel`` of a field's metadata, :mod:`mtvbench.run.flags`)
RUN_PANELS = ("Data", "Model", "Judge", "Frames", "Context and protocol", "Concurrency", "Output")
DATA, MODEL, JUDGE, FRAMES, PROTOCOL, CONCURRENCY, OUTPUT = ({"json_schema_extra": {"panel": name}}
                                                            for name in RUN_PANELS)
#: what a Qwen3-VL checkpoint's processor does to the script's MP4 besides (its 2 fps resampling keeps 17 of
#: 128 frames of the sample's videos; its clip timestamps)
QWEN3_NOT_REPRODUCED = (" (Qwen3-VL: 17 of 128 frames)", " and Qwen3-VL's clip timestamps")


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


class RunConfig(BaseModel):
    """Every setting of one evaluation (``mtvbench run``, ``--config run.yaml``, :func:`mtvbench.evaluate`).

    A field with a ``description`` is also a flag of ``mtvbench run`` (``frames`` -> ``--frames``, the
    description its help; :mod:`mtvbench.run.flags`), so a new setting is added here and nowhere
    else. Fields without one are set in the YAML only (or, for ``model_spec``, resolved from a preset)."""

    model_config = strict(frozen=True)

    data: Path = Field(**DATA, description="dataset root in the released layout, or hf:ORG/NAME")
    #: what the user asked for: a preset name (``qwen3-vl-8b-instruct``) or a backend spec
    model: str = Field(**MODEL,
                       description="model under test: a preset (`mtvbench models`), or openai:NAME, gemini:NAME, "
                                   "hf:PATH_OR_ID, vllm:PATH_OR_ID, oracle, refuse")
    #: the backend spec actually run (``hf:Qwen/...``); set from the preset, else equal to ``model``
    model_spec: str | None = None
    #: required: the offline lexical judge only when asked for by name (its scores are not the paper's)
    judge: str = Field(**JUDGE, description="judge (required): openai:NAME (the paper's: gemini-2.5-flash), "
                                            "or offline (lexical matcher, pipeline checks only)")
    out: Path = Field(**OUTPUT, description="run directory (resumable)")
    context: ContextMode = Field("golden", **PROTOCOL, description="golden | self | none")
    #: ``authors`` (the released code that made Table 2) or ``paper`` (the paper's text); not given: ``authors``
    #: (:func:`mtvbench.run.settings.build_config` gives the run directory's own when it exists)
    protocol: ProtocolName | None = Field(None, **PROTOCOL,
                                          description="authors (default: the authors' released code, as Table 2 "
                                                      "was made, so scores compare with it) | paper (the paper's "
                                                      "text read cleanly); a run directory keeps its own")
    #: what the model under test is sent: Figure 15 (``paper``) or the authors' script for its row under the
    #: ``authors`` protocol (``qwen-script``, ``internvl-script``); set from the preset, part of the identity
    inference: InferenceStyle = "paper"
    frames: int = Field(128, **FRAMES, ge=1, description="frames sampled uniformly over the whole video")
    #: an ablation of temporal grounding (not the paper's setting): part of the identity when not uniform
    sampling: Sampling = Field("uniform", **FRAMES, description="uniform (the paper's: over the whole video) | clip: "
                               "--clip-share of each turn's frames inside the time ranges its text names so far")
    clip_share: float = Field(0.5, **FRAMES, ge=0.0, le=1.0,
                              description="share of the frames inside the named ranges under --sampling clip (0 to 1)")
    #: an ablation: each frame's time as text before it ("Frame at 00:03:12"), or a video part's metadata; part of
    #: the identity when on
    frame_timestamps: OnOff = Field("off", **FRAMES,
                                    description="on | off: each image preceded by its time in the video "
                                                "(\"Frame at 00:03:12\"); a video part gets its frames' times as "
                                                "metadata")
    max_side: int | None = Field(720, **FRAMES, ge=16, description="longer side of a frame at most this (px)")
    frame_size: tuple[int, int] | None = Field(None, **FRAMES, description="fixed frame size WxH, e.g. 448x448",
                                               validate_default=True)
    jpeg_quality: int = Field(90, **FRAMES, ge=10, le=100, description="JPEG quality of the sampled frames (10-100)")
    judge_runs: int = Field(3, **JUDGE, ge=1, description="judge runs per turn, averaged")
    judge_max_attempts: int | None = Field(None, **JUDGE, ge=1,
                                           description="asks per judge run while the reply cannot be "
                                                       "read (default: 5 under --protocol authors, as "
                                                       "eval.py; 3 under paper)")
    concurrency: int = Field(16, **CONCURRENCY, ge=1, description="model calls in flight")
    #: the memory bound of a run; not set, enough videos for --concurrency calls in flight
    #: (mtvbench.dispatch.video_slots); set it for bigger batches of a local engine (hf/vllm) across videos
    videos_in_flight: int | None = Field(None, **CONCURRENCY, ge=1,
                                         description="videos whose frames are held at once (decoded ahead or "
                                                     "with turns running; default: enough for --concurrency, "
                                                     "4 x concurrency / the calls a video can have in flight at "
                                                     "once, 4 to 2 x concurrency; 4 per replica under "
                                                     "--executor ray)")
    decode_workers: int | None = Field(None, **CONCURRENCY, ge=1,
                                       description="videos decoded at a time, in threads that hold no "
                                                   "call slot (default: 2, or 1 on one CPU)")
    judge_concurrency: int | None = Field(None, **CONCURRENCY, ge=1,
                                          description="judge calls in flight (default: --concurrency)")
    #: how the turns are ordered, not what they ask: not part of the identity
    cache_order: CacheOrder | None = Field(None, **CONCURRENCY,
                                           description="on | off: send a video's first turn alone and its other "
                                                       "turns once it was answered, so they find its frames in the "
                                                       "provider's or engine's prefix cache (default: on for "
                                                       "openai, gemini and vllm, off for hf)")
    limit: int | None = Field(None, **DATA, ge=1, description="at most N dialogues per task")
    cache_dir: Path | None = Field(None, **FRAMES, description="frame cache folder")
    seed: int = Field(0, **OUTPUT, description="seed of the bootstrap confidence intervals")
    bootstrap: int = Field(1000, **OUTPUT, ge=0, description="bootstrap draws for the confidence intervals")
    model_settings: RoleSettings = Field(default_factory=RoleSettings)
    judge_settings: RoleSettings = Field(default_factory=RoleSettings)
    #: the tasks evaluated (task keys); None: all six. Part of the run identity.
    tasks: list[str] | None = Field(None, **DATA, description="evaluate only these tasks, e.g. OR,MR (keys or "
                                                              "abbreviations); the Overall is then partial")
    #: per-million-token prices by role (``model``, ``judge``) or backend spec (``openai:gpt-4o``)
    prices: dict[str, Price] = Field(default_factory=dict)
    #: who asks the model under test: ``local`` (this process) or ``ray`` (a Ray cluster); the
    #: store, the judge and the scores stay in this process either way. Not part of the identity.
    executor: ExecutorName = Field("local", **CONCURRENCY,
                                   description="local | ray (model calls on a Ray cluster: pip install "
                                               "'mtvbench[ray]'; see Scaling out)")
    #: the cluster of ``executor: ray``: ``auto`` (started with ``ray start`` on this machine),
    #: ``HOST:PORT`` of its head, or None: a Ray instance started for this run on this machine
    ray_address: str | None = Field(None, **CONCURRENCY,
                                    description="Ray cluster of --executor ray: auto | HOST:PORT (default: "
                                                "a Ray instance started for this run)")
    ray: RaySettings = Field(default_factory=RaySettings)
    #: the preset values this run overrides (set by :func:`apply_preset`; recorded in config.yaml): the
    #: run is marked "(modified: ...)" in every table and report
    preset_overrides: list[str] = Field(default_factory=list)
    #: judge the answers stored in this run directory instead of asking the model (``run --answers-from``,
    #: :mod:`mtvbench.run.replay`): where the answers come from; part of the identity
    answers_from: Path | None = None

    @field_validator("prices")
    @classmethod
    def _price_keys(cls, v: dict[str, Price]) -> dict[str, Price]:
        problems = [p for p in map(price_key_problem, v) if p is not None]
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @field_validator("tasks", mode="before")
    @classmethod
    def _parse_tasks(cls, v: Any) -> Any:
        return None if v is None else parse_tasks(v)

    @model_validator(mode="before")
    @classmethod
    def _default_protocol(cls, data: Any) -> Any:
        """No protocol given: ``authors``. The protocol of an existing run directory is given by the edge
        (:func:`mtvbench.run.settings.build_config`): nothing here reads the disk."""
        if isinstance(data, Mapping) and data.get("protocol") is None:
            return {**data, "protocol": DEFAULT_PROTOCOL}
        return data

    @model_validator(mode="after")
    def _check_combinations(self) -> RunConfig:
        if self.ablations and self.protocol == "authors" and self.inference in NOT_REPRODUCED:
            raise ValueError(f"{' and '.join(self.ablations)} would change what {AUTHORS_SCRIPTS[self.inference]} "
                             f"sends the model: under --protocol authors its frame rule is kept; give "
                             f"--protocol paper for the ablation")
        options = self.model_settings.options
        family = self._hf_family()
        if self.ablations and family in FILE_READING_FAMILIES:
            raise ValueError(f"{' and '.join(self.ablations)}: the {family} model reads the video file with its own "
                             "processor (its own frames), so no frame of this run is sent to pick or to give a "
                             "time to: use another model")
        if self.ablations and options.get("input") == "upload":
            raise ValueError(f"{' and '.join(self.ablations)}: gemini input=upload sends the video file, whose "
                             "frames Gemini samples itself (video_fps), so no frame of this run is sent to pick or "
                             "to give a time to (a Part's video_metadata sets only that rate and a start/end "
                             "offset): use input=frames")
        if self.executor == "ray" and options.get("context_cache"):
            raise ValueError("--model-option context_cache: a context cache made in a Ray replica is not recorded in "
                             "this run's store, so one a killed run leaves could not be named or deleted by the next "
                             "run: use --executor local with context_cache, or drop it")
        if self.sampling == "clip" and self.model_settings.options.get("context_cache"):
            raise ValueError("--sampling clip sends each turn its own frames: a context cache holds one frame set "
                             "per video (drop --model-option context_cache)")
        return self

    @property
    def ablations(self) -> list[str]:
        """The temporal grounding ablations this run makes, in words (empty: the paper's setting). Shown in the
        summary and in scores.json."""
        out = []
        if self.sampling == "clip":
            out.append(f"--sampling clip (share {self.clip_share:g})")
        if self.frame_timestamps == "on":
            out.append("--frame-timestamps on")
        return out

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

    def _hf_family(self) -> str | None:
        """The ``hf:`` family adapter the model gets (``options["family"]`` or detected), None for others."""
        kind, _, checkpoint = self.backend_spec.partition(":")
        if kind.strip().lower() != "hf":
            return None
        from mtvbench.models.hf_families import detect_family

        return str(self.model_settings.options.get("family") or detect_family(checkpoint.strip()) or "generic")

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
                             lossless=rule == "internvl-script" and self.in_process,
                             clip_share=self.clip_share if self.sampling == "clip" else None)

    @property
    def backend_spec(self) -> str:
        return self.model_spec or self.model

    @property
    def first_alone(self) -> bool | None:
        """``cache_order`` as a dispatcher takes it (None: the model backend's default)."""
        return None if self.cache_order is None else self.cache_order == "on"

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
        checkpoint = self.backend_spec.lower().replace("_", "-")
        qwen3 = "".join(QWEN3_NOT_REPRODUCED[0 if self.frames == 128 else 1:]) if "qwen3-vl" in checkpoint else ""
        note = NOT_REPRODUCED[self.inference].format(n=self.frames, kind="PNG" if fs.lossless else "JPEG", size=size,
                                                     qwen3=qwen3)
        return f"{script} ({'served' if backend == 'openai' else backend}: {note})"

    @property
    def keeps_thinking(self) -> bool:
        """The answer judged is the whole reply, ``<think>`` text included: the authors' InternVL script splits it
        off only in Think mode (which sets a system prompt); every other inference takes the text after it."""
        return self.inference == "internvl-script" and not self.model_settings.system

    def identity(self) -> dict[str, Any]:
        """The settings that define what a stored answer means: the run's identity (stored in the run
        directory, checked on resume: :func:`~mtvbench.config.stored.identity_differences`) and, the same
        values, the settings parts of every answer's fingerprint (:class:`mtvbench.run.identity.RunKeys`).
        The model's settings come from :meth:`~mtvbench.models.settings.BackendOptions.answer_settings`;
        the judge's are part of each verdict's fingerprint (changing them judges again), not of the run."""
        model = self.model_settings.answer_settings()
        identity: dict[str, Any] = {
            "model": self.backend_spec, "judge": self.judge, "context": self.context,
            "frames": self.frame_settings().key(),
            "model_generation": model["generation"],
            "model_options": _json_values(model["options"]),
            "tasks": [t.value for t in self.selected_tasks],
        }
        if self.protocol_name != "paper":  # absent for paper, so run directories made before protocols resume
            identity["protocol"] = self.protocol_name
            identity["inference"] = self.inference
        if self.frame_timestamps == "on":  # absent when off, so runs made before it resume (clip: in "frames")
            identity["frame_timestamps"] = "on"
        if self.answers_from is not None:  # absent otherwise: a run that asks the model never takes stored answers
            identity["answers_from"] = str(Path(self.answers_from).resolve())
        return identity


def _json_values(value: Any) -> Any:
    """``value`` as JSON reads it back (what is stored), anything JSON lacks as its text."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def mark_origins(cfg: RunConfig, values: Mapping[str, Any]) -> None:
    """Mark each role's settings with its role and the values its preset gave it (for messages that
    say how to drop one: :class:`~mtvbench.models.settings.SettingsOrigin`)."""
    from mtvbench.models.presets import get_preset, resolve_model

    preset = None if values.get("model_spec") else get_preset(cfg.model)
    keys: frozenset[str] = frozenset()
    if preset is not None:
        given = values.get("model_settings") if isinstance(values.get("model_settings"), Mapping) else {}
        options = given.get(OPTIONS_KEY) if isinstance(given.get(OPTIONS_KEY), Mapping) else {}
        defaults = resolve_model(cfg.model, protocol=cfg.protocol_name)[1]
        keys = frozenset(k for k in GENERATION_SETTINGS
                         if getattr(defaults, k) is not None and k not in given and k not in options)
    cfg.model_settings.mark(SettingsOrigin(role="model", preset=preset.name if preset else None, preset_keys=keys))
    cfg.judge_settings.mark(SettingsOrigin(role="judge"))
