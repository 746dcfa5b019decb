"""Protocol effects: where one of the authors' eval.py behaviours gives another value than the paper's reading of
the same stored reply or data, counted by kind, and the same stored replies read by the paper's parser.

Both come from what a run directory stores (the judged rounds of ``benchmark.json``, every judge run's replies in
the store): nothing is asked again, and ``mtvbench score RUN`` recomputes them.

Under ``authors`` a judge run's reply is read twice: as eval.py reads it (the run's own score) and by the paper's
parser (:func:`mtvbench.protocol.verdicts.read_verdicts`: by key, yes/no in any spelling, the first stored reply of
the run it reads). When the two values differ, every eval.py behaviour present in that reply is counted once for
the run (:data:`EFFECT_KINDS`); a rounding that changes a run's, a turn's or a dialogue's value is counted where
it happens; the data kinds are counted per judged round that got a score. Under ``paper`` the verdicts that the
paper's reading took as yes/no but eval.py's comparison would not match (``Yes.``, ``true``) are counted.

"These replies read by the paper's parser" (:class:`PaperReading`) scores the same judged rounds from the same
stored replies with the paper's parser and unrounded means. It is not the ``paper`` protocol's score: that
protocol sends another judge prompt, judges other rounds and asks at most 3 times.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.data.schema import TASKS, ChecklistItem, Dialogue, Round, Task
from mtvbench.protocol.authors import NO_TEXT_INDEX, canonical_raw
from mtvbench.protocol.verdicts import read_verdicts
from mtvbench.records import JudgeVerdict

#: every kind, in display order, with what it means (the names are stored in scores.json and never change meaning)
EFFECT_KINDS: dict[str, str] = {
    "verdict_not_yes_no": "a verdict neither yes nor no in eval.py's case-insensitive comparison (`Yes.`, `true`, "
                          "`Yes/No`), scored as a mismatch",
    "reply_keys": "a reply with keys other than the checklist's A1..An or another number of them (divided by the "
                  "number of keys; `{}` scores 0)",
    "keys_out_of_order": "a reply's keys in another order than the checklist's (paired by position)",
    "reply_read_otherwise": "eval.py's reading of the reply (its first ``` block, else the whole, json.loads) gives "
                            "another value than the paper's parser for another reason (JSON in prose or behind a "
                            "non-JSON space asked again, another block read)",
    "run_dropped": "a judge run left out after its asks ran out, or at a null reply, where the paper's parser reads "
                   "one of its replies",
    "placeholder_judged": "a round that is not a model turn judged against the placeholder answer",
    "answer_by_position": "a round judged on the answer at its position, another round's",
    "checklist_by_raw_index": "a checklist entry chosen by its raw `round index` (a number over a later text "
                              "entry, or text never matched)",
    "rounding": "a value changed by the rounding to 2 decimals of a judge run, a turn or a dialogue",
}
#: the label of the paper-parser figure, wherever it is shown
PAPER_READING_LABEL = "these replies read by the paper's parser"

_EPS = 1e-9


class PaperReading(BaseModel):
    """The judged rounds of an ``authors`` run scored from the same stored replies by the paper's parser (percent)."""

    label: str = PAPER_READING_LABEL
    overall: float | None = None
    tasks: dict[str, float | None] = Field(default_factory=dict)
    #: judge runs the paper's parser reads (of the runs stored)
    runs_read: int = 0
    runs_stored: int = 0


class ProtocolEffects(BaseModel):
    """How often each effect of the ``authors`` protocol fired on a run, by kind, and the same run scored by the
    paper's parser (see the module docstring)."""

    counts: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(EFFECT_KINDS, 0))
    paper_reading: PaperReading | None = None

    def add(self, kind: str, n: int = 1) -> None:
        """Count ``n`` more of effect ``kind``."""
        self.counts[kind] += n


def summary_line(counts: Mapping[str, int] | None, reading: PaperReading | None = None) -> str | None:
    """One line naming the kinds that fired with their counts, and the paper-parser figure beside them; None when
    nothing was counted (a scores.json written before protocol effects)."""
    if counts is None:
        return None
    fired = [(k, n) for k, n in counts.items() if n]
    line = "protocol effects: " + (", ".join(f"{k} {n}" for k, n in fired) if fired else "none")
    if reading is not None:
        tasks = ", ".join(f"{Task(t).abbr} {v:.2f}" for t, v in reading.tasks.items() if v is not None)
        overall = f"Overall {reading.overall:.2f}" if reading.overall is not None else "Overall –"
        line += f"; {reading.label}: {overall}" + (f" ({tasks})" if tasks else "")
    return line


def _expected(rnd: Round) -> list[tuple[str, str]]:
    return [(k, v) for k, v in (rnd.checklist_raw or canonical_raw(rnd)) if k.startswith("A")]


@dataclass(frozen=True)
class _RoundReading:
    """What every judge run of one round is compared with, made once per round (not once per run)."""

    items: list[ChecklistItem]
    #: the answer keys of the checklist, in its order (the paper's parser reads by them)
    keys: tuple[str, ...]
    #: the expected answers' keys and values (A*) as eval.py pairs them, and the values in lower case
    expected_keys: list[str]
    expected_lower: list[str]

    @classmethod
    def of(cls, rnd: Round) -> _RoundReading:
        items = rnd.checklist or []
        expected = _expected(rnd)
        return cls(items=items, keys=tuple(it.answer_key for it in items), expected_keys=[k for k, _ in expected],
                   expected_lower=[v.lower() for _, v in expected])


#: the paper's parser on one reply and the keys it reads, remembered by both: a judge repeats its replies word for
#: word across the turns of a run (the same few objects of yes and no), and what it read is only read here
_Reader = Callable[[str, tuple[str, ...]], "dict[str, tuple[str, Any]] | None"]


def _paper_run_value(rr: _RoundReading, verdict: JudgeVerdict, read: _Reader
                     ) -> tuple[float | None, dict[str, tuple[str, Any]] | None]:
    """The paper's parser (``read``) on a judge run's stored replies: the share of items right by key from the
    first reply it reads, and what it read (None, None when it reads none)."""
    items, keys = rr.items, rr.keys
    if (verdict.reply is None or not verdict.raw) and verdict.verdicts and all(k in verdict.verdicts for k in keys):
        # no reply read by eval.py's rule (the offline judge gives verdicts by key; the paper's LLM judge read the
        # reply by key already): its verdicts are what the paper reads
        got: dict[str, tuple[str, Any]] = {k: (verdict.verdicts[k], verdict.verdicts[k]) for k in keys}
        return sum(1 for it, k in zip(items, keys) if got[k][0] == it.expected) / len(items), got
    for text in verdict.raw:
        found = read(text, keys)
        if found is not None:
            return sum(1 for it, k in zip(items, keys) if found[k][0] == it.expected) / len(items), found
    return None, None


def _authors_run(rr: _RoundReading, verdict: JudgeVerdict, paper: float | None, effects: ProtocolEffects) -> float:
    """Count the effects of eval.py's reading of one judge run; its unrounded value (matches / keys replied)."""
    reply = verdict.reply if verdict.reply is not None else list((verdict.verdicts or {}).items())
    hits = sum(1 for (_, got), exp in zip(reply, rr.expected_lower) if got.lower() == exp)
    unrounded = hits / len(reply) if reply else 0.0
    if abs(round(unrounded, 2) - unrounded) > _EPS:
        effects.add("rounding")
    if paper is not None and abs(unrounded - paper) <= _EPS:
        return unrounded
    kinds = []
    if any(got.lower() not in ("yes", "no") for (_, got), _ in zip(reply, rr.expected_lower)):
        kinds.append("verdict_not_yes_no")
    got_keys, exp_keys = [k for k, _ in reply], rr.expected_keys
    if sorted(got_keys) != sorted(exp_keys):
        kinds.append("reply_keys")
    elif got_keys != exp_keys:
        kinds.append("keys_out_of_order")
    for kind in kinds or ["reply_read_otherwise"]:
        effects.add(kind)
    return unrounded


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _rounded_mean(values: Sequence[float], effects: ProtocolEffects) -> None:
    if values:
        m = sum(values) / len(values)
        if abs(round(m, 2) - m) > _EPS:
            effects.add("rounding")


def protocol_effects(dialogues: Sequence[Dialogue], responses: Mapping[str, Any],
                     verdicts: Mapping[str, Mapping[int, JudgeVerdict]], protocol: str) -> ProtocolEffects:
    """The effects of ``protocol`` on the judged rounds of ``dialogues`` (as that protocol read them) and their
    stored judge runs (``verdicts``: the runs that count, ok and unparsed), and, under ``authors``, the paper-parser
    figure (see the module docstring)."""
    effects = ProtocolEffects()
    authors = protocol == "authors"
    by_task: dict[Task, list[float]] = {}
    runs_read = runs_stored = 0
    read = functools.lru_cache(maxsize=None)(read_verdicts)  # for this call only (see _Reader)
    for d in dialogues:
        turn_values: list[float] = []  # eval.py's turn values (for the dialogue's rounding)
        paper_turns: list[float] = []
        if authors:
            for r in d.rounds:
                if r.not_judged == NO_TEXT_INDEX:
                    effects.add("checklist_by_raw_index")
        for r in sorted(d.scored_turns, key=lambda x: x.index):
            source = r.answer_index
            if source is not None and d.turn_id(source) not in responses:
                continue
            runs = verdicts.get(d.turn_id(r.index), {})
            rr = _RoundReading.of(r)
            run_values: list[float] = []
            paper_runs: list[float] = []
            for _, v in sorted(runs.items()):
                if v.status not in ("ok", "unparsed"):
                    continue
                runs_stored += 1
                paper, _ = _paper_run_value(rr, v, read)
                if paper is not None:
                    runs_read += 1
                    paper_runs.append(paper)
                if not authors:  # the accepted reply (the last one stored) as the paper's parser read it
                    as_written = read(v.raw[-1], rr.keys) if v.raw else None
                    spelled = [str(raw).lower() for _, raw in (as_written or {}).values()]
                    if v.status == "ok" and any(w not in ("yes", "no") for w in spelled):
                        effects.add("verdict_not_yes_no")
                    continue
                if v.status == "unparsed":
                    if paper is not None:
                        effects.add("run_dropped")
                    continue
                run_values.append(round(_authors_run(rr, v, paper, effects), 2))
            if paper_runs:
                paper_turns.append(sum(paper_runs) / len(paper_runs))
            if not authors or not run_values:
                continue
            _rounded_mean(run_values, effects)
            turn_values.append(round(sum(run_values) / len(run_values), 2))
            if r.placeholder_answer is not None:
                effects.add("placeholder_judged")
            elif r.answer_round is not None:
                effects.add("answer_by_position")
            if r.checklist_by_number is not None:
                effects.add("checklist_by_raw_index")
        if authors:
            _rounded_mean(turn_values, effects)
            if paper_turns:
                by_task.setdefault(d.task, []).append(sum(paper_turns) / len(paper_turns))
    if authors:
        tasks = {t: _mean(v) for t, v in by_task.items()}
        scored = [tasks[t] for t in TASKS if tasks.get(t) is not None]
        effects.paper_reading = PaperReading(
            overall=100 * sum(scored) / len(scored) if len(scored) == len(TASKS) else None,  # type: ignore[arg-type]
            tasks={t.value: None if tasks.get(t) is None else 100 * tasks[t] for t in TASKS},  # type: ignore[operator]
            runs_read=runs_read, runs_stored=runs_stored)
    return effects
