"""The records that cross between models, the judge, the run store and scoring, in one place.

- :class:`GenerationConfig`: how a model generates (max tokens, sampling, system prompt), the one
  shape of these settings: the backend options are one (they inherit it) and a request carries one
  (``request.generation``). Every backend reads one merged record: the backend's options, then the
  request's own values on top (:meth:`GenerationConfig.merge`; a value that is set wins over one that
  is not).
- :class:`GenerationRequest` / :class:`GenerationResult` / :class:`Usage`: what one model call asks
  and returns.
- :class:`JudgeVerdict`: one judge run over one turn's checklist (``ok``, ``unparsed``: no
  parseable verdict after the re-asks, left out of the mean, never counted as wrong; ``error``:
  the call failed, asked again on the next run).

**Redaction happens here, once** (:mod:`mtvbench.util.secrets`): the ``error`` text of a result and
of a verdict has every API key removed when the record is made (:data:`RedactedText`), so the
store, the response files and every message that quotes a record hold it already redacted; reply
texts lose the exact values of keys that were read.

Models (:mod:`mtvbench.models`), the judge (:mod:`mtvbench.judge`), the run
(:mod:`mtvbench.run`) and scoring (:mod:`mtvbench.scoring`) import these from here, so none of
them needs another's module for a record.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from mtvbench.media.frames import VideoFrames
from mtvbench.util.jsonio import YesNo
from mtvbench.util.secrets import redact_secrets, scrub_secret_values

#: how a call ended: ``ok``; ``blocked`` (content filter) and ``empty`` (no answer, e.g. every token
#: spent thinking) are final answers scored as wrong; ``error`` is asked again on the next run
Outcome = Literal["ok", "blocked", "empty", "error"]
JudgeStatus = Literal["ok", "unparsed", "error"]
#: an error text as a record holds it: every API key removed before anything can store or print it
RedactedText = Annotated[str | None, AfterValidator(redact_secrets)]


class GenerationConfig(BaseModel):
    """How a model generates. ``None`` means "not set": the backend's or the checkpoint's default.

    The one record of generation settings: a role's :class:`~mtvbench.models.settings.BackendOptions`
    *is* one (its fields, spelled the same in YAML and as flags) and every
    :class:`GenerationRequest` carries one (``request.generation``: what that call sets itself). One
    vocabulary for every backend; each maps it to its own API (the OpenAI backend sends ``top_k``,
    ``repetition_penalty`` and ``min_p``, which the OpenAI API lacks, in the request body; local
    backends pass them to ``generate()`` / ``SamplingParams``)."""

    model_config = ConfigDict(frozen=True)

    #: the settings a request may set for itself (besides ``system``), also fields of the backend options
    CALL_FIELDS: ClassVar[tuple[str, ...]] = ("max_tokens", "temperature", "top_p", "top_k")
    #: the settings that were backend options before they were fields (``--model-option KEY=VALUE``,
    #: ``extra:`` in a config, still read there): a run's fingerprint reads them with the backend options
    OPTION_FIELDS: ClassVar[tuple[str, ...]] = ("do_sample", "repetition_penalty", "presence_penalty", "min_p",
                                                "seed")

    max_tokens: int | None = Field(None, description="max new tokens")
    temperature: float | None = Field(None, description="sampling temperature (>= 0)")
    top_p: float | None = Field(None, description="nucleus sampling top-p, in (0, 1]")
    top_k: int | None = Field(None, description="top-k sampling (-1 / 0: no limit)")
    #: False: greedy decoding whatever the temperature; None: sample when the temperature is above 0
    do_sample: bool | None = Field(None, description="sample (true) or decode greedily (false)")
    repetition_penalty: float | None = Field(None, description="repetition penalty (1.0: none)")
    presence_penalty: float | None = Field(None, description="presence penalty (OpenAI API, vLLM)")
    min_p: float | None = Field(None, description="min-p sampling, in [0, 1]")
    seed: int | None = Field(None, description="sampling seed")
    system: str | None = Field(None, description="system prompt")

    def merge(self, other: GenerationConfig) -> GenerationConfig:
        """These settings with every value that ``other`` sets on top (``other`` wins). Not set: ``None``,
        an empty system prompt and ``max_tokens`` 0 (a request that leaves them to the options)."""
        given = {k: getattr(other, k) for k in GenerationConfig.model_fields}
        return GenerationConfig(**{**self.settings(), **{k: v for k, v in given.items() if _is_set(k, v)}})

    def settings(self) -> dict[str, Any]:
        """The generation settings alone, as a mapping (also of a subclass that holds more)."""
        return {k: getattr(self, k) for k in GenerationConfig.model_fields}

    @property
    def greedy(self) -> bool:
        """Greedy decoding: ``do_sample`` is false, or no temperature above 0 is set."""
        return self.do_sample is False or not self.temperature

    @property
    def sampling(self) -> bool:
        """Sampling for backends whose own default is greedy (transformers): ``do_sample`` when
        given, else a temperature above 0."""
        return bool(self.do_sample) if self.do_sample is not None else bool(self.temperature and self.temperature > 0)

    def __call__(self) -> GenerationConfig:
        """``request.generation()``: the spelling of the release before ``generation`` was a field (one release)."""
        warnings.warn("GenerationRequest.generation() is now a field: use request.generation (no call)",
                      DeprecationWarning, stacklevel=2)
        return self


def _is_set(key: str, value: Any) -> bool:
    return value is not None and not (key in ("system", "max_tokens") and not value)


class Usage(BaseModel):
    """Tokens of one call or of several calls summed (``+``).

    ``cached_tokens``: the part of ``prompt_tokens`` the provider or engine served from its prefix
    cache (OpenAI's ``prompt_tokens_details.cached_tokens``, Gemini's ``cached_content_token_count``,
    vLLM's ``num_cached_tokens``); None: not reported (a server that does not say, a backend without a
    cache, a call stored before mtvbench recorded it). A sum is None only when no part reported it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        cached = None if self.cached_tokens is None and other.cached_tokens is None else (
            (self.cached_tokens or 0) + (other.cached_tokens or 0))
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     total_tokens=self.total_tokens + other.total_tokens, cached_tokens=cached)


#: a request that sets no generation setting of its own (frozen: one shared instance)
_NOTHING_SET = GenerationConfig()
#: the generation settings a request had as fields of its own before it carried ``generation`` (one release)
_FLAT_REQUEST_FIELDS = (*GenerationConfig.CALL_FIELDS, "system")


def _moved_to_generation(name: str) -> property:
    def read(self: GenerationRequest) -> Any:
        warnings.warn(f"GenerationRequest.{name} is now request.generation.{name}", DeprecationWarning, stacklevel=2)
        return getattr(self.generation, name)

    return property(read, doc=f"``request.generation.{name}`` (the spelling of the release before; one release)")


class GenerationRequest(BaseModel):
    """What one call asks of a model: the text, the frames, and the generation settings it sets itself
    (``generation``; a backend merges them over its options: ``options.settings_for(request.generation)``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    prompt: str
    frames: VideoFrames | None = None
    #: The dataset's answer for this round. Only the ``oracle`` baseline reads it.
    golden_answer: str | None = None
    #: earlier turns sent as chat messages ``(user, assistant)`` before this one (the authors' InternVL
    #: script); None: the history, if any, is inside ``prompt``
    chat_history: list[tuple[str, str]] | None = None
    #: the prompt text goes before the frames, and the message content is a list of parts (the message
    #: shape of the authors' scripts: eval.py's judge call, infer_qwen25vl.py's text-then-video)
    text_first: bool = False
    #: each frame is preceded by its time in the video as text ("Frame at 00:03:12"; ``--frame-timestamps on``)
    frame_timestamps: bool = False
    #: judge the whole reply, ``<think>`` text included (the authors' InternVL script without Think mode)
    keep_thinking: bool = False
    #: the generation settings this call sets itself (None: the options' value)
    generation: GenerationConfig = _NOTHING_SET
    #: backend options of this call alone (e.g. ``video``: the video file a backend may upload); ``extra=``
    #: and ``request.extra`` are the old spelling (one release, with a warning)
    options: dict[str, Any] = Field(default_factory=dict)

    max_tokens = _moved_to_generation("max_tokens")
    temperature = _moved_to_generation("temperature")
    top_p = _moved_to_generation("top_p")
    top_k = _moved_to_generation("top_k")
    system = _moved_to_generation("system")

    @property
    def extra(self) -> dict[str, Any]:
        """The old name of :attr:`options` (one release, with a warning)."""
        warnings.warn("GenerationRequest.extra is now GenerationRequest.options", DeprecationWarning, stacklevel=2)
        return self.options

    @model_validator(mode="before")
    @classmethod
    def _flat_settings(cls, data: Any) -> Any:
        """``GenerationRequest(max_tokens=8)`` and ``extra=``: the spellings of the release before (one release, with
        a warning)."""
        if isinstance(data, dict) and "extra" in data:
            warnings.warn("GenerationRequest(extra=...): give options=... instead", DeprecationWarning, stacklevel=4)
            data = {**{k: v for k, v in data.items() if k != "extra"}, "options": data["extra"]}
        if not isinstance(data, dict) or not any(k in data for k in _FLAT_REQUEST_FIELDS):
            return data
        flat = [k for k in _FLAT_REQUEST_FIELDS if k in data]
        warnings.warn(f"GenerationRequest({', '.join(f'{k}=...' for k in flat)}): give "
                      f"generation=GenerationConfig({', '.join(f'{k}=...' for k in flat)}) instead",
                      DeprecationWarning, stacklevel=4)
        base = data.get("generation")
        settings = base.settings() if isinstance(base, GenerationConfig) else dict(base or {})
        rest = {k: v for k, v in data.items() if k not in _FLAT_REQUEST_FIELDS}
        return {**rest, "generation": {**settings, **{k: data[k] for k in flat}}}


class GenerationResult(BaseModel):
    """What one call returned. ``text`` is what gets judged (after any ``</think>``)."""

    text: str = ""
    raw_text: str = ""
    reasoning: str | None = None
    outcome: Outcome = "ok"
    error: RedactedText = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: int = 1
    #: what the backend actually fed the model, where it knows more than the request says (``hf:``: the
    #: transformers version, the processor's ``video_grid_thw``, the frames and their size); None: not recorded
    inputs: dict[str, Any] | None = None

    @field_validator("text", "raw_text", "reasoning")
    @classmethod
    def _no_key_values(cls, v: str | None) -> str | None:
        return scrub_secret_values(v)  # a server that echoes the key it was sent


class JudgeVerdict(BaseModel):
    """One judge run over one turn: the verdict per answer key (``A1``..``An``) when ``ok``."""

    run: int
    status: JudgeStatus
    verdicts: dict[str, YesNo] | None = None
    #: ``authors`` protocol: the reply's keys and values in the reply's own order, as text (the authors'
    #: eval.py pairs them with the checklist by position and divides by their number)
    reply: list[tuple[str, str]] | None = None
    raw: list[str] = Field(default_factory=list)
    attempts: int = 0
    error: RedactedText = None
    #: tokens and seconds of every attempt of this judge run, summed (for usage and cost)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0


__all__ = ["GenerationConfig", "GenerationRequest", "GenerationResult", "JudgeStatus", "JudgeVerdict", "Outcome",
           "Usage"]
