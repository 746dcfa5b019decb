"""turn -> dialogue -> task -> Overall, by the run's protocol (:mod:`mtvbench.protocol`).

- judge run: the protocol's score of one verdict (``paper``: share of checklist items whose verdict equals
  the expected answer, by key; ``authors``: eval.py's positional pairing, divided by the reply's keys and
  rounded to 2 decimals). Judge runs without a verdict (unparsed/error) are left out and counted, never
  scored as wrong. A turn with no scored judge run is *unscored*.
- turn: the protocol's mean of its scored runs (``authors``: rounded to 2 decimals).
- dialogue: the protocol's mean of its scored turns, in round order; a dialogue without any is left out
  and counted.
- task: plain mean of its dialogues. Overall: plain mean of the six task scores.
  Perceptivity = mean(OR, MR, CS); Interactivity = mean(AR, TS, PI).

A checklist the protocol does not judge although the data has it (``authors``: a ``round index`` given as
text, no answer at its position, as eval.py drops them silently) is counted and makes the scores INCOMPLETE.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, computed_field

from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY, TASKS, Dialogue, NotABenchmark, Round, Task
from mtvbench.protocol import EvalProtocol, get_protocol
from mtvbench.records import JudgeVerdict, ProviderResource
from mtvbench.scoring.effects import PaperReading, protocol_effects
from mtvbench.scoring.usage import UsageReport


class TurnScore(BaseModel):
    turn_id: str
    score: float | None  # fraction 0..1, None when unscored
    per_run: dict[int, float] = Field(default_factory=dict)
    unscored_runs: int = 0
    missing_response: bool = False


class DialogueScore(BaseModel):
    dialogue_id: str
    task: Task
    score: float | None
    turns: list[TurnScore]


class Counts(BaseModel):
    dialogues: int = 0
    model_turns: int = 0
    scored_turns: int = 0
    unscored_judge_runs: int = 0
    unscored_turns: int = 0
    missing_responses: int = 0
    dialogues_without_score: int = 0
    #: scored turns without a valid response whose store holds only an answer to an earlier
    #: version of the turn (data edited, not yet asked again): counted in missing_responses
    stale_turns: int = 0
    #: stored results kept for the record but not scored (their inputs changed since)
    superseded_responses: int = 0
    superseded_verdicts: int = 0
    #: checklists in the data that the protocol does not judge (authors: as eval.py silently drops them)
    checklists_not_judged: int = 0
    #: why, with counts
    not_judged_reasons: dict[str, int] = Field(default_factory=dict)
    #: current responses and judge runs whose reply held code points UTF-8 cannot encode (lone surrogates),
    #: stored and scored with each of them replaced by U+FFFD (:mod:`mtvbench.util.storable`), and how many
    replies_with_replaced_characters: int = 0
    replaced_characters: int = 0

    def replaced_line(self) -> str | None:
        """What every display says of replaced characters, or None when there were none."""
        if not self.replies_with_replaced_characters:
            return None
        return (f"replies with unencodable characters replaced: {self.replies_with_replaced_characters} "
                f"({self.replaced_characters} characters, each stored as U+FFFD)")


def turn_score(rnd: Round, runs: Mapping[int, JudgeVerdict], protocol: EvalProtocol | None = None) -> TurnScore:
    """The score of one judged round from its judge runs (in run order), by ``protocol`` (default ``paper``)."""
    protocol = protocol or get_protocol("paper")
    scored: dict[int, JudgeVerdict] = {}
    unscored = 0
    for run, v in sorted(runs.items()):
        if v.status != "ok" or (v.verdicts is None and v.reply is None):
            unscored += 1
            continue
        scored[run] = v
    per_run = dict(zip(scored, protocol.run_scores(rnd, list(scored.values()))))
    score = protocol.mean(list(per_run.values())) if per_run else None
    # made from values computed here (a float or None, run -> float): built without validating them again, as a
    # report over many runs makes one per judged round
    return TurnScore.model_construct(turn_id="", score=score, per_run=per_run, unscored_runs=unscored,
                                     missing_response=False)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def score_dialogues(dialogues: Sequence[Dialogue], responses: Mapping[str, Any],
                    verdicts: Mapping[str, Mapping[int, JudgeVerdict]], judge_runs: int,
                    stale: Collection[str] = (), protocol: EvalProtocol | None = None
                    ) -> tuple[list[DialogueScore], Counts]:
    protocol = protocol or get_protocol("paper")
    counts = Counts()
    out: list[DialogueScore] = []
    for d in dialogues:
        counts.dialogues += 1
        counts.model_turns += len(d.model_turns)
        for r in d.rounds:
            if r.not_judged:
                counts.checklists_not_judged += 1
                counts.not_judged_reasons[r.not_judged] = counts.not_judged_reasons.get(r.not_judged, 0) + 1
        turns: list[TurnScore] = []
        for r in sorted(d.scored_turns, key=lambda x: x.index):
            assert r.checklist
            tid = d.turn_id(r.index)
            source = r.answer_index
            if source is not None and d.turn_id(source) not in responses:
                counts.missing_responses += 1
                counts.stale_turns += d.turn_id(source) in stale
                turns.append(TurnScore.model_construct(turn_id=tid, score=None, per_run={}, unscored_runs=0,
                                                       missing_response=True))
                continue
            runs = dict(verdicts.get(tid, {}))
            ts = turn_score(r, runs, protocol)
            ts.turn_id = tid
            # judge runs never stored (killed mid-run) count as unscored too
            ts.unscored_runs += max(0, judge_runs - len(runs))
            counts.unscored_judge_runs += ts.unscored_runs
            if ts.score is None:
                counts.unscored_turns += 1
            else:
                counts.scored_turns += 1
            turns.append(ts)
        scored = [t.score for t in turns if t.score is not None]
        dscore = protocol.mean(scored) if scored else None
        if dscore is None:
            counts.dialogues_without_score += 1
        out.append(DialogueScore.model_construct(dialogue_id=d.id, task=d.task, score=dscore, turns=turns))
    return out, counts


def task_means(dscores: Sequence[DialogueScore]) -> dict[Task, float]:
    by_task: dict[Task, list[float]] = {}
    for ds in dscores:
        if ds.score is not None:
            by_task.setdefault(ds.task, []).append(ds.score)
    return {t: sum(v) / len(v) for t, v in by_task.items() if v}


def overall(task_scores: Mapping[Task, float]) -> float | None:
    """Plain mean of the task scores (of the six tasks; fewer when a subset was run)."""
    vals = [task_scores[t] for t in TASKS if t in task_scores]
    return sum(vals) / len(vals) if vals else None


def group_mean(task_scores: Mapping[Task, float], group: Sequence[Task]) -> float | None:
    vals = [task_scores[t] for t in group if t in task_scores]
    return sum(vals) / len(vals) if vals else None


def per_run_overall(dscores: Sequence[DialogueScore], judge_runs: int) -> list[float | None]:
    """Overall computed from each judge run alone (the judge's own spread)."""
    out: list[float | None] = []
    for run in range(judge_runs):
        single = []
        for ds in dscores:
            vals = [t.per_run[run] for t in ds.turns if run in t.per_run]
            single.append(DialogueScore(dialogue_id=ds.dialogue_id, task=ds.task,
                                        score=_mean(vals), turns=[]))
        o = overall(task_means(single))
        out.append(None if o is None else 100.0 * o)
    return out


def bootstrap_ci(dscores: Sequence[DialogueScore], n: int = 1000, seed: int = 0, alpha: float = 0.05
                 ) -> dict[str, tuple[float, float]]:
    """Percentile CIs (in percent) resampling dialogues within each task."""
    by_task: dict[Task, np.ndarray] = {}
    for t in TASKS:
        vals = [ds.score for ds in dscores if ds.task == t and ds.score is not None]
        if vals:
            by_task[t] = np.asarray(vals, dtype=float)
    if not by_task or n <= 0:
        return {}
    rng = np.random.default_rng(seed)
    draws: dict[Task, np.ndarray] = {}
    for t, vals in by_task.items():
        idx = rng.integers(0, len(vals), size=(n, len(vals)))
        draws[t] = vals[idx].mean(axis=1)
    lo, hi = 100 * alpha / 2, 100 * (1 - alpha / 2)
    ci: dict[str, tuple[float, float]] = {}
    for t, d in draws.items():
        ci[t.value] = (float(np.percentile(d, lo) * 100), float(np.percentile(d, hi) * 100))
    if len(draws) == len(TASKS):  # Overall (and its CI) exists only over all six tasks
        ov = np.mean(np.stack(list(draws.values())), axis=0)
        ci["overall"] = (float(np.percentile(ov, lo) * 100), float(np.percentile(ov, hi) * 100))
    for name, group in (("perceptivity", PERCEPTIVITY), ("interactivity", INTERACTIVITY)):
        parts = [draws[t] for t in group if t in draws]
        if len(parts) == len(group):
            g = np.mean(np.stack(parts), axis=0)
            ci[name] = (float(np.percentile(g, lo) * 100), float(np.percentile(g, hi) * 100))
    return ci


#: version of the ``scores.json`` layout (bumped when a field changes meaning or is added; 3: ``protocol_effects``
#: and ``paper_reading``)
SCORES_SCHEMA_VERSION = 3


class Scores(BaseModel):
    """The ``scores.json`` contract; all scores in percent (0-100).

    ``overall`` is the paper's Overall: the plain mean of the SIX task scores, and None
    unless all six have one. When fewer tasks have a score (a task subset on purpose,
    missing checklists, failed calls), ``overall_partial`` holds the mean of the
    ``tasks_scored`` that do, and every display says "partial, k/6 tasks". ``complete`` is
    False whenever anything is missing (a model turn without a response, a judge run
    without a verdict, a task or dialogue without a score); ``incomplete_reasons`` says
    what, with counts, and every display marks the score INCOMPLETE.
    """

    schema_version: int = SCORES_SCHEMA_VERSION
    mtvbench_version: str = ""
    overall: float | None
    overall_partial: float | None = None
    tasks_scored: int = 0
    perceptivity: float | None
    interactivity: float | None
    tasks: dict[str, float | None]
    ci95: dict[str, tuple[float, float]]
    counts: Counts
    model: str
    judge: str
    judge_runs: int = 3
    judge_run_overall: list[float | None] = Field(default_factory=list)
    judge_run_std: float | None = None
    context: str = "golden"
    #: the evaluation protocol (``authors``: the released code that made Table 2; ``paper``: the paper's text)
    protocol: str = "paper"
    #: what the model under test was sent (the authors' script for its row, or Figure 15)
    inference: str = "paper (Figure 15)"
    #: the tasks evaluated (a subset only when chosen with --tasks); the others are None in ``tasks``
    tasks_selected: list[str] = Field(default_factory=lambda: [t.value for t in TASKS])
    #: at most this many dialogues per task (--limit), else None
    limit: int | None = None
    #: with a limit: the dialogues of the selected tasks in the dataset, of which ``counts.dialogues`` were evaluated
    dialogues_in_data: int | None = None
    #: the preset values this run overrode (``temperature``, ``frames``, ...; see
    #: :func:`mtvbench.config.apply_preset`): the run is not the preset's paper row
    preset_overrides: list[str] = Field(default_factory=list)
    #: the temporal grounding ablations the run made (``--sampling clip``, ``--frame-timestamps on``): its scores
    #: are not the paper's setting; empty for the paper's
    ablations: list[str] = Field(default_factory=list)
    complete: bool = True
    incomplete_reasons: list[str] = Field(default_factory=list)
    #: calls, tokens, time and cost per role (from the run store)
    usage: UsageReport | None = None
    #: what the run made on a provider's server (Gemini context caches) and could not delete, each with its
    #: expiry; empty when everything was deleted (the next run in the directory deletes these)
    left_on_server: list[ProviderResource] = Field(default_factory=list)
    #: why these numbers are not MT-Video-Bench numbers (the data was built with a scripted model, or is the
    #: bundled synthetic sample); None for a real benchmark. Every table and report made from them says so.
    not_a_benchmark: NotABenchmark | None = None
    #: how often one of the authors' eval.py behaviours gave another value than the paper's reading of the same
    #: stored reply or data, by kind (:data:`mtvbench.scoring.effects.EFFECT_KINDS`; all zero on a clean run;
    #: under ``paper`` the verdicts its reading repairs); None only in a scores.json written before (format 2)
    protocol_effects: dict[str, int] | None = None
    #: ``authors``: the same judged rounds scored from the same stored replies by the paper's parser ("these
    #: replies read by the paper's parser"; not the ``paper`` protocol's score); None under ``paper``
    paper_reading: PaperReading | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> str:
        """``complete`` or ``INCOMPLETE``, also written to scores.json so no reader can miss it."""
        return "complete" if self.complete else "INCOMPLETE"

    @property
    def display_name(self) -> str:
        """The model as every table names the run (``NAME (modified: temperature, frames)``)."""
        return modified_name(self.model, self.preset_overrides)

    def limit_label(self) -> str | None:
        """What ``--limit`` left out, in words (``6 of 13 dialogues (--limit 1 per task)``), or None without one."""
        if self.limit is None:
            return None
        of = f" of {self.dialogues_in_data}" if self.dialogues_in_data is not None else ""
        return f"{self.counts.dialogues}{of} dialogues (--limit {self.limit} per task)"

    def overall_label(self, digits: int = 2) -> str:
        """Overall for display: the number, or ``partial, k/6 tasks: x`` / ``–``."""
        if self.overall is not None:
            return f"{self.overall:.{digits}f}"
        if self.overall_partial is not None:
            return f"partial, {self.tasks_scored}/{len(TASKS)} tasks: {self.overall_partial:.{digits}f}"
        return "–"


def modified_name(name: str, overrides: Sequence[str]) -> str:
    """A run's name in every table and report: a preset run with preset values overridden is marked,
    e.g. ``qwen3-vl-8b-instruct (modified: temperature, frames)``, so it is never read as the preset's
    paper row."""
    return f"{name} (modified: {', '.join(overrides)})" if overrides else name


def pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def incomplete_reasons(counts: Counts, task_scores: Mapping[Task, float],
                       selected: Sequence[Task] = TASKS) -> list[str]:
    out = []
    missing_tasks = [t.abbr for t in selected if t not in task_scores]
    if missing_tasks:
        which = "tasks" if len(selected) == len(TASKS) else "selected tasks"
        out.append(f"{len(missing_tasks)} of {len(selected)} {which} without a score ({', '.join(missing_tasks)})")
    if counts.missing_responses:
        stale = f" ({counts.stale_turns} of them answered only before the data changed)" if counts.stale_turns else ""
        out.append(f"{counts.missing_responses} scored turns without a model response{stale}")
    answered = counts.scored_turns + counts.unscored_turns
    if answered and not counts.scored_turns:
        out.append(f"no judge verdict at all: every judge call of {answered} answered turns failed or was unparsable")
    if counts.unscored_judge_runs:
        out.append(f"{counts.unscored_judge_runs} judge runs without a verdict")
    if counts.unscored_turns:
        out.append(f"{counts.unscored_turns} turns without any judge verdict")
    if counts.dialogues_without_score:
        out.append(f"{counts.dialogues_without_score} dialogues without a score")
    if counts.checklists_not_judged:
        why = "; ".join(f"{n}: {r}" for r, n in sorted(counts.not_judged_reasons.items(), key=lambda x: -x[1]))
        out.append(f"{counts.checklists_not_judged} checklists not judged ({why})")
    return out


def compute_scores(dialogues: Sequence[Dialogue], responses: Mapping[str, Any],
                   verdicts: Mapping[str, Mapping[int, JudgeVerdict]], *, model: str, judge: str,
                   judge_runs: int, context: str = "golden", bootstrap: int = 1000, seed: int = 0,
                   tasks: Sequence[Task] = TASKS, limit: int | None = None, stale: Collection[str] = (),
                   protocol: str = "paper", inference: str = "paper (Figure 15)", preset_overrides: Sequence[str] = (),
                   not_a_benchmark: NotABenchmark | None = None,
                   ablations: Sequence[str] = ()) -> tuple[Scores, list[DialogueScore]]:
    """Scores of ``dialogues`` (as ``protocol`` reads them) from their current responses and verdicts;
    ``tasks`` are the tasks selected on purpose (a missing score of any other task is not a gap), ``stale``
    the turn ids whose store holds only an answer to an earlier version of the turn."""
    from mtvbench._version import __version__

    dscores, counts = score_dialogues(dialogues, responses, verdicts, judge_runs, stale, get_protocol(protocol))
    tm = task_means(dscores)
    runs = per_run_overall(dscores, judge_runs)
    finite = [r for r in runs if r is not None]
    std = float(np.std(finite, ddof=1)) if len(finite) > 1 else (0.0 if finite else None)
    reasons = incomplete_reasons(counts, tm, tasks)
    all_tasks = len(tm) == len(TASKS)
    scores = Scores(
        mtvbench_version=__version__,
        overall=pct(overall(tm)) if all_tasks else None,
        overall_partial=None if all_tasks else pct(overall(tm)),
        tasks_scored=len(tm),
        perceptivity=pct(group_mean(tm, PERCEPTIVITY)) if all(t in tm for t in PERCEPTIVITY) else None,
        interactivity=pct(group_mean(tm, INTERACTIVITY)) if all(t in tm for t in INTERACTIVITY) else None,
        tasks={t.value: pct(tm.get(t)) for t in TASKS},
        ci95=bootstrap_ci(dscores, n=bootstrap, seed=seed),
        counts=counts, model=model, judge=judge, judge_runs=judge_runs,
        judge_run_overall=runs if all_tasks else [None for _ in runs], judge_run_std=std if all_tasks else None,
        context=context, protocol=protocol, inference=inference, complete=not reasons, incomplete_reasons=reasons,
        tasks_selected=[t.value for t in TASKS if t in tasks], limit=limit, preset_overrides=list(preset_overrides),
        not_a_benchmark=not_a_benchmark,
        ablations=list(ablations),
    )
    effects = protocol_effects(dialogues, responses, verdicts, protocol)
    scores.protocol_effects, scores.paper_reading = effects.counts, effects.paper_reading
    return scores, dscores


def fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"
