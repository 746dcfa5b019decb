"""What the run asks of a judge (one judge run over one answer and a round's checklist), and what a judge
is made with (:class:`JudgeSettings`, given to the factories of :data:`mtvbench.judge.registry.JUDGES`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mtvbench.data.schema import Round
from mtvbench.records import JudgeVerdict

if TYPE_CHECKING:
    from mtvbench.models.settings import BackendOptions
    from mtvbench.protocol import EvalProtocol


class Judge(Protocol):
    """A judge: the LLM judge (:class:`mtvbench.judge.llm.LLMJudge`) or the offline lexical matcher
    (:class:`mtvbench.judge.offline.OfflineJudge`)."""

    name: str

    async def judge(self, answer: str, rnd: Round, run: int) -> JudgeVerdict:
        """One judge run over ``answer`` against ``rnd``'s checklist."""

    async def aclose(self) -> None:
        """Release what the judge holds (its backend's connections); a judge that asks no model has nothing."""
        ...


@dataclass(frozen=True)
class JudgeSettings:
    """What a judge is made with besides its spec (a judge that asks no model ignores all of it)."""

    #: the judge backend's settings (``judge_settings``: URL, key variable, generation settings)
    options: BackendOptions | None = None
    #: asks per judge run while the reply has no readable verdict (None: the protocol's)
    max_attempts: int | None = None
    #: the judge's sampling temperature (None: the backend's)
    temperature: float | None = None
    #: the evaluation protocol that writes the judge prompt and reads the reply (None: ``paper``)
    protocol: EvalProtocol | None = None


#: ``(the spec after NAME:, settings) -> judge``: the entry of a judge in :data:`mtvbench.judge.registry.JUDGES`
JudgeFactory = Callable[[str, JudgeSettings], Judge]
