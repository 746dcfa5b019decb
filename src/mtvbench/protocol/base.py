"""What every evaluation protocol decides (:class:`EvalProtocol`), and the protocol registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from mtvbench.data.schema import Benchmark, Dialogue, Round, Task
from mtvbench.records import Check, JudgeVerdict, Rejected
from mtvbench.registry import Registry
from mtvbench.util.jsonio import YesNo

ProtocolName = Literal["authors", "paper"]
PROTOCOL_NAMES: tuple[ProtocolName, ...] = ("authors", "paper")


@dataclass(frozen=True)
class JudgeReading:
    """One judge reply as a protocol reads it: ``verdicts`` by answer key (what could be read as Yes/No,
    for display and analyses) and, for the ``authors`` protocol, ``reply``: the reply's keys and values in
    its own order, as text (``eval.py`` pairs them with the checklist by position)."""

    verdicts: dict[str, YesNo]
    reply: list[tuple[str, str]] | None = None


class EvalProtocol(ABC):
    """The rules of one protocol. Stateless; one instance per name (:func:`get_protocol`)."""

    name: ClassVar[ProtocolName]
    #: asks per judge run while the reply cannot be read (``--judge-max-attempts`` overrides)
    judge_attempts: ClassVar[int]

    # the dataset ------------------------------------------------------------------------
    @abstractmethod
    def is_model_turn(self, task: Task, ability: str | None) -> bool:
        """Whether the model answers a round with this ``Ability`` label in ``task``."""

    @abstractmethod
    def apply(self, dialogue: Dialogue) -> Dialogue:
        """The dialogue as this protocol reads it: rounds in the order of their history, ``model_turn``,
        and for every round with a checklist whether it is judged, against which answer, or why not."""

    def apply_all(self, bench: Benchmark) -> Benchmark:
        return bench.model_copy(update={"dialogues": [self.apply(d) for d in bench.dialogues]})

    # the judge --------------------------------------------------------------------------
    @abstractmethod
    def judge_prompt(self, answer: str, rnd: Round) -> str:
        """The text the judge is asked for ``answer`` against ``rnd``'s checklist."""

    @abstractmethod
    def judge_check(self, rnd: Round) -> Check[JudgeReading]:
        """Reads one judge reply: a :class:`JudgeReading`, or :class:`Rejected` (asked again)."""

    # scoring ----------------------------------------------------------------------------
    @abstractmethod
    def run_score(self, rnd: Round, verdict: JudgeVerdict) -> float:
        """The score (0..1) of one judge run with a verdict (status ``ok``)."""

    def run_scores(self, rnd: Round, verdicts: Sequence[JudgeVerdict]) -> list[float]:
        """:meth:`run_score` of each of one round's judge runs, in their order (a protocol makes what they share,
        the round's expected answers, once: a report over many runs scores hundreds of thousands)."""
        return [self.run_score(rnd, v) for v in verdicts]

    @abstractmethod
    def mean(self, values: Sequence[float]) -> float:
        """A turn's score from its runs' and a dialogue's from its turns' (never empty)."""


PROTOCOLS: Registry[type[EvalProtocol]] = Registry("evaluation protocol")
PROTOCOLS.add("authors", "mtvbench.protocol.authors:AuthorsProtocol")
PROTOCOLS.add("paper", "mtvbench.protocol.paper:PaperProtocol")

_INSTANCES: dict[str, EvalProtocol] = {}


def get_protocol(name: str) -> EvalProtocol:
    """The protocol called ``name`` (``authors`` or ``paper``)."""
    if name not in _INSTANCES:
        _INSTANCES[name] = PROTOCOLS.get(name)()
    return _INSTANCES[name]


__all__ = ["PROTOCOL_NAMES", "EvalProtocol", "JudgeReading", "ProtocolName", "Rejected", "get_protocol"]
