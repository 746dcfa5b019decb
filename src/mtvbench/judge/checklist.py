"""The checklist judge: paper Figure 17 prompt, verdicts parsed BY KEY, bounded re-asks.

A reply is accepted only when every ``A1``..``An`` key is present with a yes/no value
(any case, fenced or surrounded by prose). Otherwise the judge is asked again, at most
``max_attempts`` times; then that judge run is ``unparsed`` and left out of the mean —
never counted as wrong. An API failure after the backend's retries is ``error`` and is
asked again when the run is resumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from mtvbench.data.schema import ChecklistItem
from mtvbench.judge import offline
from mtvbench.models.base import BackendOptions, GenerationRequest, ModelBackend, Usage, create_backend
from mtvbench.prompts import render_judge_prompt

JudgeStatus = Literal["ok", "unparsed", "error"]
YesNo = Literal["Yes", "No"]


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


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_PAIR = re.compile(r"""["']?\b(A\d+)\b["']?\s*[:=]\s*["']?\s*(yes|no)\b""", re.IGNORECASE)


def _yes_no(value: object) -> YesNo | None:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, str):
        v = value.strip().strip(".!").strip().lower()
        if v in ("yes", "no"):
            return "Yes" if v == "yes" else "No"
    return None


def _from_obj(obj: object) -> dict[str, YesNo]:
    out: dict[str, YesNo] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = str(k).strip().upper()
            yn = _yes_no(v)
            if re.fullmatch(r"A\d+", key) and yn is not None:
                out[key] = yn
    return out


def parse_verdicts(text: str, keys: Sequence[str]) -> dict[str, YesNo] | None:
    """Return ``{key: Yes/No}`` for all ``keys``, or None when any key is missing."""
    candidates: list[str] = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    found: dict[str, YesNo] = {}
    for cand in candidates:
        try:
            found = _from_obj(json.loads(cand))
        except (json.JSONDecodeError, ValueError):
            continue
        if all(k in found for k in keys):
            break
    if not all(k in found for k in keys):
        found = {}
        for m in _PAIR.finditer(text):
            found.setdefault(m.group(1).upper(), "Yes" if m.group(2).lower() == "yes" else "No")
    if all(k in found for k in keys):
        return {k: found[k] for k in keys}
    return None


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
        prompt = render_judge_prompt(answer, items)
        keys = [it.answer_key for it in items]
        raws: list[str] = []
        usage, latency = Usage(), 0.0
        for attempt in range(1, self.max_attempts + 1):
            res = await self.backend.generate(
                GenerationRequest(id=f"judge-run{run}-try{attempt}", prompt=prompt, temperature=self.temperature)
            )
            usage = Usage(prompt_tokens=usage.prompt_tokens + res.usage.prompt_tokens,
                          completion_tokens=usage.completion_tokens + res.usage.completion_tokens,
                          total_tokens=usage.total_tokens + res.usage.total_tokens)
            latency += res.latency_s
            if res.outcome == "error":
                return JudgeVerdict(run=run, status="error", raw=raws, attempts=attempt, error=res.error, usage=usage,
                                    latency_s=latency)
            raws.append(res.raw_text)
            parsed = parse_verdicts(res.text, keys)
            if parsed is not None:
                return JudgeVerdict(run=run, status="ok", verdicts=parsed, raw=raws, attempts=attempt, usage=usage,
                                    latency_s=latency)
        return JudgeVerdict(run=run, status="unparsed", raw=raws, attempts=self.max_attempts, usage=usage,
                            latency_s=latency,
                            error=f"no parseable verdict for {', '.join(keys)} after {self.max_attempts} attempts")

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
