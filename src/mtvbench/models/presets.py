"""The paper's 24 models as data: ``presets.yaml`` -> :class:`Preset` records.

``resolve_model("qwen3-vl-8b-instruct")`` returns the backend spec (``hf:Qwen/Qwen3-VL-8B-Instruct``),
the :class:`BackendOptions` (generation parameters, system prompt, family adapter) and the frame
settings of that row (§4.1: 128 frames; longer side 720, or 448x448 / 728x728). ``name@vllm`` or
``name@openai`` swaps to another backend the preset lists under ``alt_backends``: every open model
runs on an OpenAI-compatible server that serves its checkpoint (``openai:<checkpoint>``, or
``openai:<served_name>``) with the same frames, generation parameters and system prompt. Any other
spec with a known prefix (``hf:/my/ckpt``, ``openai:gpt-4o``, ``oracle``) passes through unchanged.

Generation parameters use one vocabulary for every backend, the generation fields of
``BackendOptions``; each backend maps them to its own API (the OpenAI backend sends the ones the
OpenAI API lacks in the request body).
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mtvbench.media.frames import FrameSettings
from mtvbench.models.registry import UnknownModelError, known_prefixes, parse_spec
from mtvbench.models.settings import BackendOptions
from mtvbench.prompts import InferenceStyle, internvl_think_system

BackendName = Literal["gemini", "openai", "hf", "vllm"]
#: the authors' released inference scripts (NJU-LINK/MT-Video-Bench, eval/)
AuthorsScript = Literal["infer_qwen25vl.py", "infer_internvl.py"]
#: the inference style that reproduces each script (mtvbench.prompts)
SCRIPT_STYLES: dict[str, InferenceStyle] = {"infer_qwen25vl.py": "qwen-script", "infer_internvl.py": "internvl-script"}


class Generation(BaseModel):
    """The model authors' recommended decoding settings (``None``: the backend's default)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_new_tokens: int | None = None
    do_sample: bool | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    #: every value not set here is the checkpoint's own (its generation_config.json), as the authors' Qwen
    #: script leaves them: the hf backend passes only the values set, a server applies its own defaults
    checkpoint_defaults: bool = False
    #: where every value comes from, with URLs
    source: str = ""
    #: True only when every value was seen at the URLs in ``source``
    checked: bool = False

    def summary(self) -> str:
        parts = []
        if self.do_sample is False:
            parts.append("greedy")
        for key, label in (("temperature", "T"), ("top_p", "top_p"), ("top_k", "top_k"),
                           ("repetition_penalty", "rep"), ("presence_penalty", "pres"),
                           ("max_new_tokens", "max")):
            value = getattr(self, key)
            if value is not None and not (self.do_sample is False and key in ("temperature", "top_p", "top_k")):
                parts.append(f"{label}={value:g}" if isinstance(value, float) else f"{label}={value}")
        if self.checkpoint_defaults:
            parts.append("rest: checkpoint's")
        text = " ".join(parts) or "API default"
        return text if self.checked else text + " (unchecked)"


class PaperScores(BaseModel):
    """One row of the paper's Table 2."""

    model_config = ConfigDict(populate_by_name=True)

    overall: float
    OR: float
    MR: float
    CS: float
    AR: float
    TS: float
    PI: float


class FrameOverrides(BaseModel):
    """The frame settings a preset fixes; ``apply`` puts them over a run's settings."""

    num_frames: int
    max_side: int | None = None
    size: tuple[int, int] | None = None

    def apply(self, settings: FrameSettings | None = None) -> FrameSettings:
        base = settings or FrameSettings()
        return base.model_copy(update={"num_frames": self.num_frames, "max_side": self.max_side,
                                       "size": self.size})

    def rule(self) -> str:
        if self.size is not None:
            return f"{self.size[0]}x{self.size[1]}"
        return f"longer side <= {self.max_side}" if self.max_side else "original size"


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    display: str
    group: str
    backend: BackendName
    alt_backends: list[BackendName] = Field(default_factory=list)
    checkpoint: str
    #: a URL where the checkpoint id was seen; None: not verified
    checkpoint_source: str | None = None
    #: the authors' released inference script for this row: what ``--protocol authors`` sends it
    authors_script: AuthorsScript | None = None
    #: the generation settings of the authors' script, when they differ from ``generation`` (the Qwen rows)
    authors_generation: Generation | None = None
    #: the command that serves the checkpoint for ``<name>@openai``; None: no command was verified
    serve: str | None = None
    #: the hf family adapter (internvl, minicpm, videochat_flash, videollama3); None: generic path
    family: str | None = None
    frames: int = Field(128, ge=1)
    max_side: int | None = 720
    size: tuple[int, int] | None = None
    system: str | None = None
    generation: Generation = Field(default_factory=Generation)
    #: settings of the preset's own backend (base_url, api_key_env, adapter settings ...)
    options: dict[str, Any] = Field(default_factory=dict)
    #: settings added when the checkpoint runs on an OpenAI-compatible server (video_part, extra_body ...)
    openai_options: dict[str, Any] = Field(default_factory=dict)
    notes: str | None = None
    paper: PaperScores

    @property
    def closed(self) -> bool:
        return self.group == "closed"

    def backends(self) -> list[str]:
        return [self.backend, *self.alt_backends]

    def spec(self, backend: str | None = None, checkpoint: str | None = None) -> str:
        """``backend:checkpoint``; ``checkpoint`` replaces the hub id (a local copy of it, or the name a
        server exposes it under)."""
        b = backend or self.backend
        if b not in self.backends():
            raise UnknownModelError(f"preset '{self.name}' runs on {', '.join(self.backends())}, not on {b}")
        return f"{b}:{checkpoint or self.checkpoint}"

    def frame_overrides(self) -> FrameOverrides:
        return FrameOverrides(num_frames=self.frames, max_side=None if self.size else self.max_side,
                              size=self.size)

    def inference(self, protocol: str) -> InferenceStyle:
        """What the row is sent under ``protocol``: its authors' script, else Figure 15."""
        if protocol == "authors" and self.authors_script is not None:
            return SCRIPT_STYLES[self.authors_script]
        return "paper"

    def generation_for(self, protocol: str) -> Generation:
        if protocol == "authors" and self.authors_generation is not None:
            return self.authors_generation
        return self.generation

    def system_for(self, protocol: str) -> str | None:
        """The system prompt: under ``authors`` the InternVL3.5 Think rows get infer_internvl.py's own text."""
        if protocol == "authors" and self.system and self.authors_script == "infer_internvl.py":
            return internvl_think_system()
        return self.system

    def backend_options(self, backend: str | None = None, protocol: str = "paper") -> BackendOptions:
        b = backend or self.backend
        g = self.generation_for(protocol)
        opts = dict(self.options) if b == self.backend else {}
        if b == "openai":
            opts.update(self.openai_options)
        base_url = opts.pop("base_url", None)
        api_key_env = opts.pop("api_key_env", None)
        own: dict[str, Any] = {"family": self.family} if self.family and b == "hf" else {}
        if g.checkpoint_defaults:
            own["generation_defaults"] = "checkpoint"
        own.update(opts)
        temperature = g.temperature
        if g.do_sample is False and b in ("vllm", "openai"):
            temperature = 0.0  # greedy
        return BackendOptions(base_url=base_url, api_key_env=api_key_env, max_tokens=g.max_new_tokens,
                              temperature=temperature, top_p=g.top_p, top_k=g.top_k, do_sample=g.do_sample,
                              repetition_penalty=g.repetition_penalty, presence_penalty=g.presence_penalty,
                              system=self.system_for(protocol), extra=own)


class PresetFile(BaseModel):
    presets: list[Preset]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


@lru_cache(maxsize=1)
def _load() -> tuple[tuple[Preset, ...], dict[str, Preset]]:
    text = resources.files("mtvbench.models").joinpath("presets.yaml").read_text(encoding="utf-8")
    data = PresetFile.model_validate(yaml.safe_load(text))
    index: dict[str, Preset] = {}
    for p in data.presets:
        for alias in {_norm(p.name), _norm(p.display)}:
            if alias in index and index[alias] is not p:
                raise ValueError(f"presets.yaml: the name '{alias}' is used twice")
            index[alias] = p
    return tuple(data.presets), index


def list_presets() -> list[Preset]:
    """Every preset, in the order of the paper's Table 2."""
    return list(_load()[0])


def get_preset(name: str) -> Preset | None:
    """The preset called ``name`` (its name or the paper's display name, any case), or ``None``."""
    return _load()[1].get(_norm(name.partition("@")[0]))


def resolve_model(spec: str, checkpoint: str | None = None, served_name: str | None = None, protocol: str = "paper"
                  ) -> tuple[str, BackendOptions, FrameOverrides | None]:
    """``--model`` value -> (backend spec, backend options, frame settings of the preset or None).

    ``qwen3-vl-8b-instruct``, ``qwen3-vl-8b-instruct@vllm`` and ``qwen3-vl-8b-instruct@openai`` use the
    preset; ``hf:/path``, ``openai:NAME``, ``oracle`` ... pass through with default options and no frame
    overrides. ``checkpoint`` runs a preset's settings on another copy of its weights (a local
    directory); ``served_name`` is the model name an OpenAI-compatible server exposes the checkpoint
    under (default: the checkpoint id, which is what ``vllm serve <checkpoint>`` exposes). ``protocol``
    picks the preset's settings of that protocol (the authors' script's under ``authors``).
    Explicit command-line settings should be applied on top of the returned options.
    """
    name, _, backend = spec.partition("@")
    preset = get_preset(name)
    if preset is not None:
        b = backend.strip().lower() or None
        if served_name is not None and (b or preset.backend) != "openai":
            raise UnknownModelError(f"served_name names the model on an OpenAI-compatible server: use "
                                    f"'{preset.name}@openai' with it, not '{spec}'")
        if checkpoint is not None and (b or preset.backend) == "openai":
            raise UnknownModelError(f"checkpoint names a local copy of the weights (hf, vllm); a server names its "
                                    f"model with served_name: use '{preset.name}@openai' with served_name=NAME")
        return (preset.spec(b, served_name or checkpoint), preset.backend_options(b, protocol),
                preset.frame_overrides())
    prefix, _ = parse_spec(spec)
    if checkpoint is not None or served_name is not None:
        raise UnknownModelError(f"'{spec}' is not a preset: give the checkpoint or served name in the spec instead")
    if prefix in known_prefixes():
        return spec, BackendOptions(), None
    names = [p.name for p in list_presets()]
    close = difflib.get_close_matches(_norm(name), names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; presets: {', '.join(names)}"
    raise UnknownModelError(
        f"unknown model '{spec}': not a preset and the prefix is not one of {', '.join(known_prefixes())}{hint}")


__all__ = ["FrameOverrides", "Generation", "PaperScores", "Preset", "get_preset", "list_presets",
           "resolve_model"]
