"""The checklist judge: paper Figure 17 prompt, verdicts parsed BY KEY, bounded re-asks.

A reply is accepted only when every ``A1``..``An`` key is present with a yes/no value
(any case, fenced or surrounded by prose). Otherwise the judge is asked again, at most
``max_attempts`` times; then that judge run is ``unparsed`` and left out of the mean —
never counted as wrong. An API failure after the backend's retries is ``error`` and is
asked again when the run is resumed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from mtvbench.data.schema import ChecklistItem
from mtvbench.judge import offline
from mtvbench.models.ask import Check, ReaskPolicy, Rejected, ask
from mtvbench.models.backend import ModelBackend
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.prompts import render_judge_prompt
from mtvbench.records import GenerationRequest, Usage
from mtvbench.util.jsonio import YesNo, extract_json_object, yes_no

JudgeStatus = Literal["ok", "unparsed", "error"]


class JudgeVerdict(BaseModel):
    run: int
    status: JudgeStatus
    verdicts: dict[str, YesNo] | None = None
    raw: list[str] = Field(default_factory=list)
    attempts: int = 0
    error: str | None = None
    #: tokens and seconds of every attempt of this judge run, summed (for usage and cost)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0

    def matches(self, items: Sequence[ChecklistItem]) -> int:
        assert self.verdicts is not None
        return sum(1 for it in items if self.verdicts.get(it.answer_key) == it.expected)


_PAIR = re.compile(r"""["']?\b(A\d+)\b["']?\s*[:=]\s*["']?\s*(yes|no)\b""", re.IGNORECASE)


def _from_obj(obj: dict[str, Any]) -> dict[str, YesNo]:
    out: dict[str, YesNo] = {}
    for k, v in obj.items():
        key = str(k).strip().upper()
        yn = yes_no(v)
        if re.fullmatch(r"A\d+", key) and yn is not None:
            out[key] = yn
    return out


def parse_verdicts(text: str, keys: Sequence[str]) -> dict[str, YesNo] | None:
    """Return ``{key: Yes/No}`` for all ``keys``, or None when any key is missing.

    The first JSON object (fenced or in prose) that answers every key wins; otherwise
    ``A1: Yes``-style pairs anywhere in the text are read."""
    obj = extract_json_object(text, accept=lambda o: all(k in _from_obj(o) for k in keys))
    found = _from_obj(obj) if obj is not None else {}
    if not all(k in found for k in keys):
        found = {}
        for m in _PAIR.finditer(text):
            found.setdefault(m.group(1).upper(), "Yes" if m.group(2).lower() == "yes" else "No")
    if all(k in found for k in keys):
        return {k: found[k] for k in keys}
    return None


def verdict_check(keys: Sequence[str]) -> Check[dict[str, YesNo]]:
    """The judge's reply check: every key answered, or the keys still missing."""

    def check(text: str) -> dict[str, YesNo] | Rejected:
        got = parse_verdicts(text, keys)
        return got if got is not None else Rejected([f"no parseable verdict for {', '.join(keys)}"])

    return check


class Judge(Protocol):
    name: str

    async def judge(self, answer: str, items: Sequence[ChecklistItem], run: int) -> JudgeVerdict: ...

    async def aclose(self) -> None: ...


class LLMJudge:
    """Any model backend as judge (the paper uses Gemini-2.5-Flash, three runs)."""

    def __init__(self, backend: ModelBackend, max_attempts: int = 3, temperature: float | None = None):
        self.backend = backend
        self.name = backend.name
        self.max_attempts = max_attempts
        self.temperature = temperature

    async def judge(self, answer: str, items: Sequence[ChecklistItem], run: int) -> JudgeVerdict:
        keys = [it.answer_key for it in items]
        request = GenerationRequest(id=f"judge-run{run}", prompt=render_judge_prompt(answer, items),
                                    temperature=self.temperature)
        out = await ask(self.backend, request, verdict_check(keys), ReaskPolicy(self.max_attempts))
        spent = {"raw": out.raw, "attempts": out.attempts, "usage": out.usage, "latency_s": out.latency_s}
        if out.status == "ok":
            return JudgeVerdict(run=run, status="ok", verdicts=out.value, **spent)
        if out.status == "error":
            return JudgeVerdict(run=run, status="error", error=out.error, **spent)
        return JudgeVerdict(run=run, status="unparsed", **spent,
                            error=f"no parseable verdict for {', '.join(keys)} after {out.attempts} attempts")

    async def aclose(self) -> None:
        await self.backend.aclose()


class OfflineJudge:
    """The lexical matcher of :mod:`mtvbench.judge.offline`; deterministic, needs no API."""

    name = "offline"

    def __init__(self, threshold: float = 0.75):
        self.threshold = threshold

    async def judge(self, answer: str, items: Sequence[ChecklistItem], run: int) -> JudgeVerdict:
        verdicts = offline.judge_items(answer, [it.question for it in items], self.threshold)
        return JudgeVerdict(run=run, status="ok", attempts=1,
                            verdicts={it.answer_key: ("Yes" if v else "No") for it, v in zip(items, verdicts)})

    async def aclose(self) -> None:
        return None


def create_judge(spec: str, options: BackendOptions | None = None, max_attempts: int = 3,
                 temperature: float | None = None) -> Judge:
    if spec.strip().lower() == "offline":
        return OfflineJudge()
    return LLMJudge(create_backend(spec, options), max_attempts=max_attempts, temperature=temperature)
