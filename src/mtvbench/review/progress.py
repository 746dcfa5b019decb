"""Progress of a review: done / open per annotator and task, agreement, active time per dialogue.

**Agreement** is computed per task and over all tasks, from the decisions stored for the items'
current content (:mod:`mtvbench.scoring.kappa` holds the statistics):

- Cohen's kappa **per annotator pair** (the pair's names in alphabetical order, whoever decided
  first), over the items both decided: for the decision (accept / revise / reject), for each
  criterion (met / not met; items where both recorded criteria) and for the checklist items (keep /
  revise; every checklist item of those items is one unit), with the share of identical decisions;
- Krippendorff's alpha (nominal) over every annotator's labels when more than two people decided
  items of the task (each item, or checklist item, is a unit; alpha allows the missing ratings).

A statistic is ``None`` ("n/a") when undefined (no pairable rating, or one label used throughout).

**Time per dialogue** is the page's active time before an annotator's first decision (the page
visible, and input or the video playing within the last minute), as the web app measured it;
decisions made on the command line have none.

**Who sees what**: the full progress (statuses, agreement, everyone's counts and times) is for seniors;
an annotator gets :class:`OwnProgress`: how many dialogues each task has and their own done / open,
nothing that depends on another person's decision.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Hashable
from itertools import combinations
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.data.schema import TASKS, Task
from mtvbench.review.decisions import CRITERIA, STATUSES, Annotation
from mtvbench.review.store import ItemRow, ItemState, UserInfo
from mtvbench.scoring.kappa import cohen_kappa, krippendorff_alpha_nominal

#: what agreement is computed on: the decision, each criterion, the checklist items
ASPECTS: tuple[str, ...] = ("decision", *CRITERIA, "checklist")


class PairAgreement(BaseModel):
    """Cohen's kappa between two annotators (``a`` < ``b``) on the items both decided."""

    a: str
    b: str
    items: int
    #: share of items with the same decision
    same: float | None = None
    #: aspect -> Cohen's kappa
    kappa: dict[str, float | None] = Field(default_factory=dict)
    #: aspect -> how many units it was computed on (items, or checklist items)
    units: dict[str, int] = Field(default_factory=dict)


class Agreement(BaseModel):
    """How far the annotators agree on their decisions: per pair Cohen's kappa, and Krippendorff's alpha per aspect
    when more than two people decided items (see the module docstring)."""

    #: items with two decisions
    items: int = 0
    #: annotators who decided items
    people: int = 0
    pairs: list[PairAgreement] = Field(default_factory=list)
    #: Cohen's kappa of the decision when one pair decided (None with no pair or several: see ``pairs`` and ``alpha``)
    kappa: float | None = None
    #: aspect -> Krippendorff's alpha (nominal); None unless more than two people decided items
    alpha: dict[str, float | None] | None = None


class TaskProgress(BaseModel):
    """One task's progress for seniors: its items by status, those with one decision, revised and referred ones, and
    the annotators' agreement."""

    task: str
    label: str
    items: int = 0
    counts: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    #: items with exactly one decision so far
    one_decision: int = 0
    #: accepted items whose final text was revised by the senior annotator
    revised: int = 0
    #: items with a decision handed to the senior that no senior settled yet
    referred: int = 0
    agreement: Agreement = Field(default_factory=Agreement)


class AnnotatorTask(BaseModel):
    """One annotator's work on one task: items done and items they could still take."""

    done: int = 0
    #: items this annotator could still take (not decided by them, fewer than two others on it)
    open: int = 0


class AnnotatorProgress(BaseModel):
    """One annotator's work for seniors: items done, open and adjudicated, decisions handed to the senior, per task
    and per decision, and the active seconds per decision."""

    name: str
    job: str | None = None
    done: int = 0
    open: int = 0
    adjudicated: int = 0
    #: decisions handed to the senior (changed after both decided, or on a dialogue two others had decided)
    referred: int = 0
    by_task: dict[str, AnnotatorTask] = Field(default_factory=dict)
    decisions: dict[str, int] = Field(default_factory=dict)
    timed: int = 0
    seconds_mean: float | None = None
    seconds_median: float | None = None


class ReviewProgress(BaseModel):
    """The review's whole progress, which only seniors see: items by status, each task's and the overall
    progress with the agreement, and each annotator's work."""

    scope: Literal["all"] = "all"
    items: int
    counts: dict[str, int]
    tasks: list[TaskProgress]
    overall: TaskProgress
    annotators: list[AnnotatorProgress]


class OwnTask(AnnotatorTask):
    """One task as an annotator sees it: its size and their own done / open."""

    task: str
    label: str
    items: int = 0


class OwnProgress(BaseModel):
    """What an annotator sees: the size of each task and their own work, nothing about anyone else's."""

    scope: Literal["own"] = "own"
    items: int
    tasks: list[OwnTask]
    me: AnnotatorProgress


# ------------------------------------------------------------------------------ agreement

Labeller = Callable[[Annotation], "dict[Hashable, str] | None"]


def _labels(aspect: str) -> Labeller:
    """unit -> label of one decision for ``aspect`` (None: not recorded)."""
    if aspect == "decision":
        return lambda a: {"": a.decision}
    if aspect == "checklist":
        return lambda a: dict(a.checklist) if a.checklist is not None else None
    return lambda a: ({"": "met" if a.criteria[aspect].met else "not met"}
                      if a.criteria is not None and aspect in a.criteria else None)


def _pair(a: str, b: str, states: list[ItemState]) -> PairAgreement:
    both = [(st.id, st.review_of(a), st.review_of(b)) for st in states]
    both = [(i, x, y) for i, x, y in both if x is not None and y is not None]
    out = PairAgreement(a=a, b=b, items=len(both))
    if both:
        out.same = sum(x.decision == y.decision for _, x, y in both) / len(both)  # type: ignore[union-attr]
    for aspect in ASPECTS:
        label = _labels(aspect)
        xs: list[str] = []
        ys: list[str] = []
        for _, x, y in both:
            lx, ly = label(x), label(y)  # type: ignore[arg-type]
            if lx is None or ly is None:
                continue
            for unit in sorted(set(lx) & set(ly), key=str):
                xs.append(lx[unit])
                ys.append(ly[unit])
        out.kappa[aspect] = cohen_kappa(xs, ys) if xs else None
        out.units[aspect] = len(xs)
    return out


def _alpha(states: list[ItemState]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for aspect in ASPECTS:
        label = _labels(aspect)
        units: dict[tuple[str, Hashable], list[str]] = {}
        for st in states:
            for r in st.reviews:
                for unit, v in (label(r) or {}).items():
                    units.setdefault((st.id, unit), []).append(v)
        out[aspect] = krippendorff_alpha_nominal(list(units.values()))
    return out


def agreement(states: list[ItemState]) -> Agreement:
    """The agreement among the annotators of ``states`` (see the module docstring)."""
    people = sorted({r.annotator for st in states for r in st.reviews})
    pairs = [p for a, b in combinations(people, 2) if (p := _pair(a, b, states)).items]
    return Agreement(items=sum(len(st.reviews) >= 2 for st in states), people=len(people), pairs=pairs,
                     kappa=pairs[0].kappa["decision"] if len(pairs) == 1 else None,
                     alpha=_alpha(states) if len(people) > 2 else None)


# ------------------------------------------------------------------------------ progress

def _open_to(st: ItemState, name: str, now: float) -> bool:
    """Whether ``name`` could still take the item as one of its two annotators."""
    if st.closed or st.review_of(name) is not None or st.referral_of(name) is not None:
        return False
    return len(st.holders(now) - {name}) < 2


def _people(rows: list[ItemRow], states: dict[str, ItemState], users: list[UserInfo]) -> dict[str, AnnotatorProgress]:
    now = time.time()
    people = {u.name: AnnotatorProgress(name=u.name, job=u.job) for u in users}
    seconds: dict[str, list[float]] = {}

    def person(name: str) -> AnnotatorProgress:
        return people.setdefault(name, AnnotatorProgress(name=name))

    for r in rows:
        st = states.get(r.id)
        if st is None:
            continue
        for rev in st.reviews:
            p = person(rev.annotator)
            p.done += 1
            p.by_task.setdefault(r.task, AnnotatorTask()).done += 1
            p.decisions[rev.decision] = p.decisions.get(rev.decision, 0) + 1
            if rev.seconds is not None:
                seconds.setdefault(rev.annotator, []).append(rev.seconds)
        for ref in st.referrals:
            person(ref.annotator).referred += 1
        if st.adjudication is not None:
            person(st.adjudication.annotator).adjudicated += 1
    for p in people.values():
        if p.job == "senior" and not p.done:
            continue
        for r in rows:
            st = states.get(r.id)
            if st is not None and _open_to(st, p.name, now):
                p.open += 1
                p.by_task.setdefault(r.task, AnnotatorTask()).open += 1
    for name, secs in seconds.items():
        p = people[name]
        p.timed, p.seconds_mean, p.seconds_median = len(secs), statistics.fmean(secs), statistics.median(secs)
    for p in people.values():  # not registered (open mode): the job their work shows
        if p.job is None:
            p.job = "senior" if p.adjudicated else "annotator"
    return people


def compute_progress(rows: list[ItemRow], states: dict[str, ItemState], users: list[UserInfo]) -> ReviewProgress:
    """The full progress (for seniors)."""
    tasks = {t.value: TaskProgress(task=t.value, label=t.label) for t in TASKS}
    overall = TaskProgress(task="all", label="All tasks")
    by_task: dict[str, list[ItemState]] = {}
    for r in rows:
        st = states.get(r.id)
        if st is None:
            continue
        tp = tasks.setdefault(r.task, TaskProgress(task=r.task, label=r.task))
        by_task.setdefault(r.task, []).append(st)
        for agg in (tp, overall):
            agg.items += 1
            agg.counts[st.status] += 1
            agg.one_decision += len(st.reviews) == 1 and st.adjudication is None
            agg.revised += st.adjudication is not None and st.adjudication.decision == "revise" and \
                st.status == "accepted"
            agg.referred += bool(st.open_referrals)
    for t, sts in by_task.items():
        tasks[t].agreement = agreement(sts)
    overall.agreement = agreement([st for sts in by_task.values() for st in sts])
    known = {t.value for t in Task}
    ordered = [tasks[t.value] for t in TASKS] + [v for k, v in tasks.items() if k not in known]
    people = _people(rows, states, users)
    return ReviewProgress(items=overall.items, counts=dict(overall.counts), tasks=ordered, overall=overall,
                          annotators=sorted(people.values(), key=lambda p: (p.job == "senior", p.name)))


def own_progress(rows: list[ItemRow], states: dict[str, ItemState], name: str) -> OwnProgress:
    """What ``name`` (an annotator) may see of the progress."""
    now = time.time()
    tasks = {t.value: OwnTask(task=t.value, label=t.label) for t in TASKS}
    me = AnnotatorProgress(name=name, job="annotator")
    secs: list[float] = []
    for r in rows:
        st = states.get(r.id)
        if st is None:
            continue
        tp = tasks.setdefault(r.task, OwnTask(task=r.task, label=r.task))
        tp.items += 1
        mine = st.review_of(name)
        if mine is not None:
            tp.done += 1
            me.done += 1
            me.decisions[mine.decision] = me.decisions.get(mine.decision, 0) + 1
            if mine.seconds is not None:
                secs.append(mine.seconds)
        me.referred += sum(ref.annotator == name for ref in st.referrals)
        if _open_to(st, name, now):
            tp.open += 1
            me.open += 1
        me.by_task[r.task] = AnnotatorTask(done=tp.done, open=tp.open)
    if secs:
        me.timed, me.seconds_mean, me.seconds_median = len(secs), statistics.fmean(secs), statistics.median(secs)
    return OwnProgress(items=sum(t.items for t in tasks.values()), tasks=list(tasks.values()), me=me)
