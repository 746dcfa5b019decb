"""The LLM judge: the protocol's judge prompt, its reading of the reply, bounded re-asks.

Any model backend can judge (the paper uses Gemini-2.5-Flash, three runs per turn). The run's
protocol (:mod:`mtvbench.protocol`) writes the prompt and reads the reply; a reply it cannot read is
asked again, at most ``max_attempts`` times (:func:`mtvbench.models.ask.ask`); then that judge run is
``unparsed`` and left out of the mean, never counted as wrong. An API failure after the backend's
retries is ``error`` and is asked again when the run is resumed.
"""

from __future__ import annotations

from mtvbench.data.schema import Round
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.models.backend import ModelBackend
from mtvbench.protocol import EvalProtocol, JudgeReading, get_protocol
from mtvbench.records import GenerationConfig, GenerationRequest, JudgeVerdict


class LLMJudge:
    """Any model backend as judge, under one evaluation protocol."""

    def __init__(self, backend: ModelBackend, max_attempts: int | None = None, temperature: float | None = None,
                 protocol: EvalProtocol | None = None):
        self.backend = backend
        self.name = backend.name
        self.protocol = protocol or get_protocol("paper")
        self.max_attempts = max_attempts or self.protocol.judge_attempts
        self.temperature = temperature

    async def judge(self, answer: str, rnd: Round, run: int) -> JudgeVerdict:
        request = GenerationRequest(id=f"judge-run{run}", prompt=self.protocol.judge_prompt(answer, rnd),
                                    generation=GenerationConfig(temperature=self.temperature),
                                    text_first=self.protocol.name == "authors",
                                    exact_reply=self.protocol.name == "authors")
        out = await ask(self.backend, request, self.protocol.judge_check(rnd), ReaskPolicy(self.max_attempts))
        spent = {"raw": out.raw, "attempts": out.attempts, "usage": out.usage, "latency_s": out.latency_s,
                 "replaced_characters": out.replaced_characters}
        if out.status == "ok":
            reading: JudgeReading = out.value  # type: ignore[assignment]
            return JudgeVerdict(run=run, status="ok", verdicts=reading.verdicts, reply=reading.reply, **spent)
        if out.status == "error":
            return JudgeVerdict(run=run, status="error", error=out.error, **spent)
        why = "; ".join(out.problems) or "no readable verdict"
        return JudgeVerdict(run=run, status="unparsed", **spent, error=f"{why} after {out.attempts} attempts")

    async def aclose(self) -> None:
        await self.backend.aclose()
