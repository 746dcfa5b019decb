"""What the run asks of a judge: one judge run over one answer and its checklist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mtvbench.data.schema import ChecklistItem
from mtvbench.records import JudgeVerdict


class Judge(Protocol):
    """A judge: the LLM judge (:class:`mtvbench.judge.llm.LLMJudge`) or the offline lexical matcher
    (:class:`mtvbench.judge.offline.OfflineJudge`)."""

    name: str

    async def judge(self, answer: str, items: Sequence[ChecklistItem], run: int) -> JudgeVerdict: ...

    async def aclose(self) -> None: ...
