"""The ``authors`` protocol: what the authors' released code does (NJU-LINK/MT-Video-Bench ``eval/`` at commit
547fe24), which is how the paper's Table 2 was made. Written anew from reading that code; each rule below is
checked against fixtures recorded from the scripts themselves (``tests/fixtures/authors``).

Which rounds (the inference scripts, then ``eval.py``):

- rounds are taken in FILE order (their place in the ``mtqa`` object), which is also the order of the history;
- a round is a model turn in Topic Shifting and Proactive Interaction, or when its ``Ability`` label is EXACTLY
  one of ``Summary``, ``Object Reference``, ``Memory Recall``, ``Answer Refusal`` (``"Memory Recall "`` is not);
  every other round gets the placeholder answer ``No need for this ability to answer.``;
- every round ``Round k`` that has a checklist entry is judged, model turn or not, against the answer at
  POSITION ``k`` of the dialogue's answers (``answers[k - 1]``): the model's answer when that round is a model
  turn, else the placeholder. A position beyond the dialogue's rounds has no answer: not judged (eval.py prints
  a warning and goes on). A ``round index`` given as text never matches: not judged. Both are counted here and
  make the run INCOMPLETE (eval.py drops them silently). eval.py keys its checklist lookup by the raw value:
  of two entries ``2`` and ``"2"`` for one round, the entry written as a number is judged (the last such one),
  whatever their order (:attr:`~mtvbench.data.schema.Round.checklist_by_number`).

The judge (``evaluate_single_task``):

- the prompt is ``eval.py``'s own text (:func:`mtvbench.prompts.render_authors_judge_prompt`): the checklist is the
  entry's ``Q*`` keys in file order;
- a reply is its content exactly as the server sent it (nothing stripped, ``<think>`` text included; an empty or
  null content is one ask, not a transport retry: ``GenerationRequest.exact_reply``), read from its first fenced
  block (```` ```json ```` or ```` ``` ````; ``\\s`` as the ``regex`` module eval.py imports reads it), else whole,
  with ``json.loads`` (which skips only JSON's own whitespace: a reply behind U+00A0 does not load);
  a reply that does not load is asked again, up to 5 asks per judge run; a run that never loads has no score
  (left out of the turn's mean) and a turn whose runs all have none has no score (left out of the dialogue's);
- a JSON object is read as its values IN ITS ORDER, paired by position with the entry's ``A*`` values in file
  order; an item matches when ``str(value).lower()`` equals the expected answer's; the run scores
  ``round(matches / number of keys in the reply, 2)`` (6 keys: a perfect answer scores 0.83; 4 keys: only the
  first 4 items are compared); an empty object (or empty list, empty string) scores 0.0;
- a reply ``null`` leaves the run out at once (eval.py's loop takes it for "not parsed" and stops asking);
- a reply that loads to anything else (a non-empty list or string, a number, ``true``) stops eval.py with an
  exception; here it is asked again like a reply that does not load (a documented difference).

Scores: a turn is ``round(mean of its runs, 2)``, a dialogue ``round(mean of its turns, 2)`` (both with
Python's ``round``), a task the plain mean of its dialogues (``mean_mtqa``), the Overall the mean of the six.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from mtvbench.data.schema import ALL_ROUNDS_TASKS, MODEL_TURN_ABILITIES, Dialogue, Round, Task
from mtvbench.prompts import placeholder_answer, render_authors_judge_prompt
from mtvbench.protocol.base import EvalProtocol, JudgeReading, ProtocolName
from mtvbench.records import Check, JudgeVerdict, Rejected
from mtvbench.util.jsonio import YesNo, yes_no

#: what ``\s`` matches in the ``regex`` module eval.py imports as ``re``: Unicode White_Space. Python's ``re`` also
#: counts U+001C..U+001F (``str.isspace``), so the class is written out rather than taken from ``re``.
WHITESPACE = "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
#: the first fenced block, with or without a ``json`` tag (eval.py's extract_json, ``\s`` as its ``regex`` reads it)
_FENCE = re.compile(f"```(?:json)?{WHITESPACE}*([\\s\\S]*?){WHITESPACE}*```")
_ANSWER_KEY = re.compile(r"A\d+")

NO_TEXT_INDEX = "its 'round index' is given as text, which the authors' eval.py never matches"


def no_answer_at(k: int, n: int) -> str:
    return f"the authors' eval.py takes answers by position and the dialogue has no answer at position {k} ({n} rounds)"


def canonical_raw(rnd: Round) -> list[tuple[str, str]]:
    """A checklist's keys and values when its file order is unknown: Q1, A1, Q2, A2, ..."""
    return [kv for it in rnd.checklist or [] for kv in ((it.key, it.question), (it.answer_key, it.expected))]


@functools.lru_cache(maxsize=8)
def read_reply(text: str) -> JudgeReading | Rejected:
    """One judge reply as ``eval.py`` reads it (see the module docstring): ``text`` is the reply's content
    exactly as sent (nothing stripped: ``json.loads`` skips only JSON's four whitespace characters, so a reply
    behind a U+00A0 does not load and is asked again, as in eval.py; an empty or null content is one ask).

    The last few readings are kept: the run store reads the reply a judge run was just given again, in the same
    step of the event loop, to store it once (:meth:`~mtvbench.run.store.RunStore.put_verdict`). A reading is
    shared: never changed by its readers."""
    match = _FENCE.search(text)
    body = match.group(1) if match else text
    try:
        obj: Any = json.loads(body)
    except (ValueError, RecursionError):
        return Rejected(["the reply is not JSON (read from its first ``` block, else whole, as eval.py does)"])
    if isinstance(obj, dict):
        reply = [(str(k), str(v)) for k, v in obj.items()]
        verdicts: dict[str, YesNo] = {}
        for k, v in obj.items():
            yn = yes_no(v)
            if yn is not None and _ANSWER_KEY.fullmatch(str(k).strip().upper()):
                verdicts.setdefault(str(k).strip().upper(), yn)
        return JudgeReading(verdicts=verdicts, reply=reply)
    if isinstance(obj, (list, str)) and not obj:
        return JudgeReading(verdicts={}, reply=[])  # eval.py: len(results) == 0 -> a run score of 0.0
    if obj is None:  # eval.py takes None for "not parsed" and leaves the run out without asking again
        return Rejected(["the reply is JSON null (eval.py leaves the run out at once)"], final=True)
    return Rejected([f"the reply's JSON is {type(obj).__name__}, not an object (eval.py stops with an error on it)"])


class AuthorsProtocol(EvalProtocol):
    name: ClassVar[ProtocolName] = "authors"
    judge_attempts: ClassVar[int] = 5

    def is_model_turn(self, task: Task, ability: str | None) -> bool:
        return task in ALL_ROUNDS_TASKS or ability in MODEL_TURN_ABILITIES

    def apply(self, dialogue: Dialogue) -> Dialogue:
        in_file = sorted(dialogue.rounds, key=lambda x: x.file_position)
        turns = {r.index: self.is_model_turn(dialogue.task, r.ability) for r in in_file}
        rounds = []
        for r in in_file:
            update: dict[str, Any] = {"model_turn": turns[r.index], "judged": False, "answer_round": None,
                                      "placeholder_answer": None, "not_judged": None}
            if r.checklist_by_number is not None:  # 2 then "2": eval.py's lookup by the raw value finds the 2
                update |= {"checklist": r.checklist_by_number.checklist,
                           "checklist_raw": r.checklist_by_number.checklist_raw, "checklist_index_text": False}
            if r.checklist:
                pos = r.index - 1
                if r.checklist_index_text and r.checklist_by_number is None:
                    update["not_judged"] = NO_TEXT_INDEX
                elif pos >= len(in_file):
                    update["not_judged"] = no_answer_at(r.index, len(in_file))
                else:
                    source = in_file[pos]
                    update["judged"] = True
                    if not turns[source.index]:
                        update["placeholder_answer"] = placeholder_answer()
                    elif source.index != r.index:
                        update["answer_round"] = source.index
            rounds.append(r.model_copy(update=update))
        return dialogue.model_copy(update={"rounds": rounds})

    def judge_prompt(self, answer: str, rnd: Round) -> str:
        return render_authors_judge_prompt(answer, rnd.checklist_raw or canonical_raw(rnd))

    def judge_check(self, rnd: Round) -> Check[JudgeReading]:
        return read_reply

    def run_score(self, rnd: Round, verdict: JudgeVerdict) -> float:
        return self.run_scores(rnd, [verdict])[0]

    def run_scores(self, rnd: Round, verdicts: Sequence[JudgeVerdict]) -> list[float]:
        expected = [v.lower() for k, v in (rnd.checklist_raw or canonical_raw(rnd)) if k.startswith("A")]
        out = []
        for verdict in verdicts:
            reply = verdict.reply if verdict.reply is not None else list((verdict.verdicts or {}).items())
            hits = sum(1 for (_, got), exp in zip(reply, expected) if got.lower() == exp)
            out.append(round(hits / len(reply), 2) if reply else 0.0)
        return out

    def mean(self, values: Sequence[float]) -> float:
        return round(sum(values) / len(values), 2)
