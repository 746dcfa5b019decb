"""What the run asks of a judge: one judge run over one answer and a round's checklist."""

from __future__ import annotations

from typing import Protocol

from mtvbench.data.schema import Round
from mtvbench.records import JudgeVerdict


class Judge(Protocol):
    """A judge: the LLM judge (:class:`mtvbench.judge.llm.LLMJudge`) or the offline lexical matcher
    (:class:`mtvbench.judge.offline.OfflineJudge`)."""

    name: str

    async def judge(self, answer: str, rnd: Round, run: int) -> JudgeVerdict:
        """One judge run over ``answer`` against ``rnd``'s checklist."""

    async def aclose(self) -> None: ...
