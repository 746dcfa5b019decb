"""Ask a model, read and check its reply, and ask again while the reply is unusable.

Every caller that needs a *usable* reply (the checklist judge, the checklist generator,
the construction stages) goes through :func:`ask`:

1. the request is sent (``request.id`` gets ``-try<n>``; transport retries, deadlines and
   backoff are the backend's business, below this loop);
2. the reply text goes to the caller's ``check``, which returns the parsed value, or
   :class:`Rejected` with the problems it found;
3. on a rejection the model is asked again, at most ``policy.max_attempts`` calls in all;
   ``policy.reprompt(prompt, problems)`` builds the next prompt (the same prompt by
   default; the construction stages append the problems so the model can fix them).

The outcome is typed (:class:`AskOutcome`): ``ok`` with the value, ``failed`` with the
last problems after the bounded re-asks (given up), or ``error`` when the backend call
itself failed (nothing was decided: callers ask again on their next run). Every raw reply
is kept. This module sits beside :mod:`mtvbench.models.resilience`: that one repeats a call
that did not arrive, this one repeats a call whose content was unusable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from mtvbench.errors import ConfigError
from mtvbench.models.backend import ModelBackend
from mtvbench.records import Check, GenerationRequest, GenerationResult, Rejected, Usage

T = TypeVar("T")

AskStatus = Literal["ok", "failed", "error"]


#: the next prompt from the original prompt and the problems of the last reply
Reprompt = Callable[[str, list[str]], str]


def same_prompt(prompt: str, problems: list[str]) -> str:
    """The reprompt that asks again with the prompt unchanged (the problems are not shown to the model)."""
    return prompt


def append_problems(intro: str, outro: str = "", sep: str = "; ") -> Reprompt:
    """A reprompt: the prompt, then ``intro``, the problems joined by ``sep``, and ``outro``."""

    def reprompt(prompt: str, problems: list[str]) -> str:
        return prompt + intro + sep.join(problems) + outro

    return reprompt


@dataclass(frozen=True)
class ReaskPolicy:
    """How often a check may send a reply back: at most ``max_attempts`` calls in all, each again with
    ``reprompt(prompt, problems)`` as its prompt."""

    max_attempts: int = 3
    reprompt: Reprompt = field(default=same_prompt)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {self.max_attempts}")


@dataclass
class AskOutcome(Generic[T]):
    """``ok``: ``value`` holds the checked reply; ``failed``: ``problems`` of the last reply after
    ``attempts`` calls; ``error``: the backend call failed (``error``), nothing was decided."""

    status: AskStatus
    value: T | None = None
    problems: list[str] = field(default_factory=list)
    attempts: int = 0
    raw: list[str] = field(default_factory=list)
    error: str | None = None
    partial: Any = None
    #: tokens and seconds of every call made for this outcome
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    #: code points UTF-8 cannot encode that were replaced in the replies (``GenerationResult.replaced_characters``)
    replaced_characters: int = 0

    @property
    def ok(self) -> bool:
        """Whether a reply passed the check."""
        return self.status == "ok"


def reply_text(request: GenerationRequest, res: GenerationResult) -> str:
    """What the check reads: the answer after any ``</think>`` (``text``), or with ``request.exact_reply`` the
    content exactly as the server sent it (``raw_text``; ``text`` from a backend that keeps no raw text)."""
    if request.exact_reply:
        return res.raw_text if res.raw_text or not res.text else res.text
    return res.text


async def ask(backend: ModelBackend, request: GenerationRequest, check: Check[T],
              policy: ReaskPolicy | None = None) -> AskOutcome[T]:
    """Ask ``backend`` until ``check`` accepts the reply, at most ``policy.max_attempts`` calls."""
    policy = policy or ReaskPolicy()
    prompt = request.prompt
    raws: list[str] = []
    problems: list[str] = []
    partial: Any = None
    usage, latency = Usage(), 0.0
    replaced = 0
    for attempt in range(1, policy.max_attempts + 1):
        res = await backend.generate(request.model_copy(update={"id": f"{request.id}-try{attempt}",
                                                                "prompt": prompt}))
        usage, latency = usage + res.usage, latency + res.latency_s
        replaced += res.replaced_characters
        spent = {"usage": usage, "latency_s": latency, "replaced_characters": replaced}
        if res.outcome == "error":
            return AskOutcome(status="error", problems=problems, attempts=attempt, raw=raws,
                              error=res.error or "the backend call failed", partial=partial, **spent)
        raws.append(res.raw_text or res.text)
        got = check(reply_text(request, res))
        if not isinstance(got, Rejected):
            return AskOutcome(status="ok", value=got, attempts=attempt, raw=raws, **spent)
        problems, partial = list(got.problems), got.partial
        if got.final:
            return AskOutcome(status="failed", problems=problems, attempts=attempt, raw=raws, partial=partial,
                              **spent)
        prompt = policy.reprompt(request.prompt, problems)
    return AskOutcome(status="failed", problems=problems, attempts=policy.max_attempts, raw=raws, partial=partial,
                      usage=usage, latency_s=latency, replaced_characters=replaced)
