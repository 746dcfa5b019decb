"""The LLM judge: paper Figure 17 prompt, verdicts parsed by key, bounded re-asks.

Any model backend can judge (the paper uses Gemini-2.5-Flash, three runs per turn). A reply
without a parseable verdict for every item is asked again, at most ``max_attempts`` times
(:func:`mtvbench.models.ask.ask`); then that judge run is ``unparsed`` and left out of the mean,
never counted as wrong. An API failure after the backend's retries is ``error`` and is asked
again when the run is resumed.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtvbench.data.schema import ChecklistItem
from mtvbench.judge.verdicts import verdict_check
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.models.backend import ModelBackend
from mtvbench.prompts import render_judge_prompt
from mtvbench.records import GenerationRequest, JudgeVerdict


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
