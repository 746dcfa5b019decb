"""The records that cross between models, the judge, the run store and scoring, in one place.

- :class:`GenerationConfig`: how a model generates (max tokens, sampling, system prompt), the only
  shape of these settings: the backend options are one (they inherit it) and a request carries one
  (``request.generation``). Every backend reads one merged record: the backend's options, then the
  request's own values on top (:meth:`GenerationConfig.merge`; a value that is set wins over one that
  is not).
- :class:`GenerationRequest` / :class:`GenerationResult` / :class:`Usage`: what one model call asks
  and returns.
- :class:`JudgeVerdict`: one judge run over one turn's checklist (``ok``, ``unparsed``: no
  parseable verdict after the re-asks, left out of the mean, never counted as wrong; ``error``:
  the call failed, asked again on the next run).
- :class:`Price`: prices per million tokens of a role (set in the run settings, read by scoring's cost).
- :class:`Rejected` and :data:`Check`: what a reply's check returns for an unusable reply (the ask loop,
  :mod:`mtvbench.models.ask`, asks again on it; the protocols' and the judge's readers return it).

**Redaction happens here, once** (:mod:`mtvbench.util.secrets`): the ``error`` text of a result and
of a verdict has every API key removed when the record is made (:data:`RedactedText`), so the
store, the response files and every message that quotes a record hold it already redacted; reply
texts lose the exact values of keys that were read.

**Text is made storable here, once** (:mod:`mtvbench.util.storable`): a code point UTF-8 cannot encode
(a lone surrogate, which a server sends with the JSON escape ``\\ud800``) in any text of a result or
a verdict (answer, raw reply, reasoning, error, the judge's reply keys and values, what the backend fed
the model) is replaced by U+FFFD when the record is made, and counted in its ``replaced_characters``
(stored with it, shown with the scores).

Models (:mod:`mtvbench.models`), the judge (:mod:`mtvbench.judge`), the run
(:mod:`mtvbench.run`) and scoring (:mod:`mtvbench.scoring`) import these from here, so none of
them needs another's module for a record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from mtvbench.media.frames import VideoFrames
from mtvbench.util.jsonio import YesNo
from mtvbench.util.secrets import redact_secrets, scrub_secret_values
from mtvbench.util.storable import encodable, storable_value
from mtvbench.util.strict import STRICT, strict

#: how a call ended: ``ok``; ``blocked`` (content filter) and ``empty`` (no answer, e.g. every token
#: spent thinking) are final answers scored as wrong; ``error`` is asked again on the next run
Outcome = Literal["ok", "blocked", "empty", "error"]
JudgeStatus = Literal["ok", "unparsed", "error"]
#: an error text as a record holds it: every API key removed before anything can store or print it
RedactedText = Annotated[str | None, AfterValidator(redact_secrets)]


class GenerationConfig(BaseModel):
    """How a model generates. ``None`` means "not set": the backend's or the checkpoint's default.

    The only record of generation settings: a role's :class:`~mtvbench.models.settings.BackendOptions`
    *is* one (its fields, spelled the same in YAML and as flags) and every
    :class:`GenerationRequest` carries one (``request.generation``: what that call sets itself). One
    vocabulary for every backend; each maps it to its own API (the OpenAI backend sends ``top_k``,
    ``repetition_penalty`` and ``min_p``, which the OpenAI API lacks, in the request body; local
    backends pass them to ``generate()`` / ``SamplingParams``)."""

    model_config = strict(frozen=True)

    #: the settings a request may set for itself (besides ``system``), also fields of the backend options
    CALL_FIELDS: ClassVar[tuple[str, ...]] = ("max_tokens", "temperature", "top_p", "top_k")
    #: the settings a request does not set for itself: a run's fingerprint reads them with the backend options
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


class GenerationRequest(BaseModel):
    """What one call asks of a model: the text, the frames, and the generation settings it sets itself
    (``generation``; a backend merges them over its options: ``options.settings_for(request.generation)``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

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
    #: the caller reads the reply's content exactly as the server sent it (nothing stripped, ``<think>`` text
    #: included), and a null or empty content is a reply that the caller's check rejects like any other, not a
    #: failure the transport retries: eval.py's judge call, where such a reply is one of its 5 asks
    exact_reply: bool = False
    #: the generation settings this call sets itself (None: the options' value)
    generation: GenerationConfig = _NOTHING_SET
    #: backend options of this call alone (e.g. ``video``: the video file a backend may upload)
    options: dict[str, Any] = Field(default_factory=dict)


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

    #: code points of this reply UTF-8 cannot encode (lone surrogates), replaced by U+FFFD when the record
    #: was made (see the module doc); also those replaced in the replies it was made from
    replaced_characters: int = 0

    @field_validator("text", "raw_text", "reasoning")
    @classmethod
    def _no_key_values(cls, v: str | None) -> str | None:
        return scrub_secret_values(v)  # a server that echoes the key it was sent

    @model_validator(mode="after")
    def _storable(self) -> GenerationResult:
        n = _make_storable(self, ("text", "raw_text", "reasoning", "error", "inputs"))
        # ``text`` and ``reasoning`` are parts of ``raw_text``: a character of the reply counts once
        reply = max(n["raw_text"], n["text"] + n["reasoning"])
        self.replaced_characters += reply + n["error"] + n["inputs"]
        return self


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
    #: code points UTF-8 cannot encode (lone surrogates) replaced by U+FFFD in this judge run's replies and
    #: in its reading of them (see the module doc)
    replaced_characters: int = 0

    @model_validator(mode="after")
    def _storable(self) -> JudgeVerdict:
        self.replaced_characters += sum(_make_storable(self, ("verdicts", "reply", "raw", "error")).values())
        return self


def _make_storable(record: BaseModel, fields: tuple[str, ...]) -> dict[str, int]:
    """Replace what UTF-8 cannot encode in ``fields`` of ``record`` (in place); how many, per field."""
    if encodable([getattr(record, name) for name in fields]):  # the usual case, all fields checked at once
        return dict.fromkeys(fields, 0)
    counts = {}
    for name in fields:
        clean, counts[name] = storable_value(getattr(record, name))
        if counts[name]:
            setattr(record, name, clean)
    return counts


class Price(BaseModel):
    """Prices per million tokens (in the currency you choose; the cost is reported in it)."""

    model_config = STRICT

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    #: prompt tokens served from the provider's prefix or context cache (None: priced as ``input``)
    cached_input: float | None = Field(None, ge=0)


#: the value a :data:`Check` reads from a reply
CheckedValue = TypeVar("CheckedValue")


@dataclass(frozen=True)
class Rejected:
    """What a check returns for an unusable reply: the problems, and optionally what it could read.
    ``final``: give up at once, without asking again (the authors' eval.py on a ``null`` reply)."""

    problems: list[str]
    partial: Any = None
    final: bool = False


#: parse and check one reply: the value, or :class:`Rejected`
Check = Callable[[str], "CheckedValue | Rejected"]


__all__ = ["Check", "GenerationConfig", "GenerationRequest", "GenerationResult", "JudgeStatus", "JudgeVerdict",
           "Outcome", "Price", "Rejected", "Usage"]


class ProviderResource(BaseModel):
    """Something a backend made on a provider's server that costs while it lives (Gemini's context cache of a
    video's frames). Recorded in the run store when it is asked for, so that one a run could not delete is
    named with its expiry (the run's summary, ``scores.json``) and the next run in the same directory deletes
    it, also after ``kill -9``."""

    #: what it is, in words ("Gemini context cache")
    kind: str
    #: the backend's own unique label of it, given when it was asked for (the display name of a cache), so that
    #: one whose creation was never answered can still be found on the server
    token: str
    #: the backend spec that made it and the endpoint it lives at
    backend: str
    url: str
    #: the server's name of it (``cachedContents/...``); None while its creation is unanswered
    name: str | None = None
    #: seconds since the epoch: asked for, ends by itself on the server (its TTL), deleted (None: not yet)
    created: float
    expires: float | None = None
    deleted: float | None = None
    #: why the last delete failed (the server's words, or the deadline), None when it did not fail
    error: str | None = None

    def describe(self) -> str:
        """One line naming it, where it lives, why it is left and when it ends by itself."""
        what = self.name or f"(display name {self.token}; its creation was not answered)"
        line = f"{self.kind} {what} at {self.url}"
        if self.error:
            line += f": could not be deleted ({self.error})"
        if self.expires:
            line += f"; it expires {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.expires))} (its TTL)"
        return line
