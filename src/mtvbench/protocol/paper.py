"""The ``paper`` protocol: the paper's text read cleanly.

- model turns: a round of Topic Shifting or Proactive Interaction, or a round whose ``Ability`` label
  (surrounding spaces ignored) is one of Summary, Object Reference, Memory Recall, Answer Refusal;
- judged: a model turn with a checklist, against its own answer; rounds in index order;
- inference: Figure 15 (:mod:`mtvbench.prompts.templates`); judge: Figure 17 plus a JSON instruction;
- a reply is read BY KEY (:mod:`mtvbench.protocol.verdicts`): a reordered reply is scored right, a reply
  missing a key is asked again (3 asks per judge run by default), never scored as wrong;
- a judge run scores the share of items whose verdict equals the expected answer; a turn is the plain
  mean of its runs, a dialogue of its turns, a task of its dialogues; nothing is rounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from mtvbench.data.schema import Dialogue, Round, Task, is_model_turn
from mtvbench.prompts import render_judge_prompt
from mtvbench.protocol.base import EvalProtocol, JudgeReading, ProtocolName
from mtvbench.protocol.verdicts import parse_verdicts
from mtvbench.records import Check, JudgeVerdict, Rejected


class PaperProtocol(EvalProtocol):
    name: ClassVar[ProtocolName] = "paper"
    judge_attempts: ClassVar[int] = 3

    def is_model_turn(self, task: Task, ability: str | None) -> bool:
        return is_model_turn(task, ability)

    def apply(self, dialogue: Dialogue) -> Dialogue:
        rounds = []
        for r in sorted(dialogue.rounds, key=lambda x: x.index):
            mt = self.is_model_turn(dialogue.task, r.ability)
            rounds.append(r.model_copy(update={"model_turn": mt, "judged": mt and bool(r.checklist),
                                               "answer_round": None, "placeholder_answer": None,
                                               "not_judged": None}))
        return dialogue.model_copy(update={"rounds": rounds})

    def judge_prompt(self, answer: str, rnd: Round) -> str:
        return render_judge_prompt(answer, rnd.checklist or [])

    def judge_check(self, rnd: Round) -> Check[JudgeReading]:
        keys = [it.answer_key for it in rnd.checklist or []]

        def check(text: str) -> JudgeReading | Rejected:
            got = parse_verdicts(text, keys)
            if got is None:
                return Rejected([f"no parseable verdict for {', '.join(keys)}"])
            return JudgeReading(verdicts=dict(got))

        return check

    def run_score(self, rnd: Round, verdict: JudgeVerdict) -> float:
        items = rnd.checklist or []
        got = verdict.verdicts or {}
        return sum(1 for it in items if got.get(it.answer_key) == it.expected) / len(items)

    def mean(self, values: Sequence[float]) -> float:
        return sum(values) / len(values)
