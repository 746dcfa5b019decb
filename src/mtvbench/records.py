"""The records that cross between models, the judge, the run store and scoring, in one place.

- :class:`GenerationConfig`: how a model generates (max tokens, sampling, system prompt). Every
  backend reads one merged record: the backend's options, then the request's own values on top
  (:meth:`GenerationConfig.merge`; a value that is set wins over one that is not).
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

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

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

    One vocabulary for every backend; each maps it to its own API (the OpenAI backend sends
    ``top_k``, ``repetition_penalty`` and ``min_p``, which the OpenAI API lacks, in the request
    body; local backends pass them to ``generate()`` / ``SamplingParams``)."""

    model_config = ConfigDict(frozen=True)

    #: the settings a request and the backend options both carry as fields of their own
    CALL_FIELDS: ClassVar[tuple[str, ...]] = ("max_tokens", "temperature", "top_p", "top_k")
    #: the settings given as backend options (``--model-option KEY=VALUE``, ``extra`` in a config)
    OPTION_FIELDS: ClassVar[tuple[str, ...]] = ("do_sample", "repetition_penalty", "presence_penalty", "min_p",
                                                "seed")

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    system: str | None = None
    #: False: greedy decoding whatever the temperature; None: sample when the temperature is above 0
    do_sample: bool | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    min_p: float | None = None
    seed: int | None = None

    def merge(self, other: GenerationConfig) -> GenerationConfig:
        """These settings with every value that ``other`` sets on top (``other`` wins)."""
        return self.model_copy(update=other.model_dump(exclude_none=True))

    @property
    def greedy(self) -> bool:
        """Greedy decoding: ``do_sample`` is false, or no temperature above 0 is set."""
        return self.do_sample is False or not self.temperature

    @property
    def sampling(self) -> bool:
        """Sampling for backends whose own default is greedy (transformers): ``do_sample`` when
        given, else a temperature above 0."""
        return bool(self.do_sample) if self.do_sample is not None else bool(self.temperature and self.temperature > 0)


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


class GenerationRequest(BaseModel):
    """What one call asks of a model."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    prompt: str
    system: str | None = None
    frames: VideoFrames | None = None
    #: The dataset's answer for this round. Only the ``oracle`` baseline reads it.
    golden_answer: str | None = None
    #: earlier turns sent as chat messages ``(user, assistant)`` before this one (the authors' InternVL
    #: script); None: the history, if any, is inside ``prompt``
    chat_history: list[tuple[str, str]] | None = None
    #: the prompt text goes before the frames, and the message content is a list of parts (the message
    #: shape of the authors' scripts: eval.py's judge call, infer_qwen25vl.py's text-then-video)
    text_first: bool = False
    #: judge the whole reply, ``<think>`` text included (the authors' InternVL script without Think mode)
    keep_thinking: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def generation(self) -> GenerationConfig:
        """The generation settings this request sets itself (empty values count as not set)."""
        return GenerationConfig(max_tokens=self.max_tokens or None, temperature=self.temperature, top_p=self.top_p,
                                top_k=self.top_k, system=self.system or None)


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
