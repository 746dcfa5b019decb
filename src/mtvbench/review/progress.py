"""Progress of a review: done / open per annotator and task, agreement, time per item.

Agreement is Cohen's kappa (:func:`mtvbench.scoring.kappa.cohen_kappa`) between the
first and the second decision of every item that both annotators decided (labels accept /
revise / reject), per task and over all tasks; it is ``None`` ("n/a") when undefined (no
such item, or both raters used one label only). ``agreement`` is the plain share of items
where both decided the same. Time per item is measured from the moment the web app handed
the item to the annotator to their first decision (items decided on the command line have
no time).
"""

from __future__ import annotations

import statistics
import time

from pydantic import BaseModel, Field

from mtvbench.data.schema import TASKS, Task
from mtvbench.review.model import STATUSES
from mtvbench.review.store import ItemRow, ItemState, UserInfo
from mtvbench.scoring.kappa import cohen_kappa


class Agreement(BaseModel):
    items: int = 0
    kappa: float | None = None
    agreement: float | None = None


class TaskProgress(BaseModel):
    task: str
    label: str
    items: int = 0
    counts: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    #: items with exactly one decision so far
    one_decision: int = 0
    #: accepted items whose final text was revised by the senior annotator
    revised: int = 0
    agreement: Agreement = Field(default_factory=Agreement)


class AnnotatorTask(BaseModel):
    done: int = 0
    #: items this annotator could still take (not decided by them, fewer than two others on it)
    open: int = 0


class AnnotatorProgress(BaseModel):
    name: str
    role: str | None = None
    done: int = 0
    open: int = 0
    adjudicated: int = 0
    by_task: dict[str, AnnotatorTask] = Field(default_factory=dict)
    decisions: dict[str, int] = Field(default_factory=dict)
    timed: int = 0
    seconds_mean: float | None = None
    seconds_median: float | None = None


class ReviewProgress(BaseModel):
    items: int
    counts: dict[str, int]
    tasks: list[TaskProgress]
    overall: TaskProgress
    annotators: list[AnnotatorProgress]


def _agreement(pairs: list[tuple[str, str]]) -> Agreement:
    if not pairs:
        return Agreement()
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    return Agreement(items=len(pairs), kappa=cohen_kappa(a, b), agreement=sum(x == y for x, y in pairs) / len(pairs))


def compute_progress(rows: list[ItemRow], states: dict[str, ItemState], users: list[UserInfo]) -> ReviewProgress:
    now = time.time()
    task_of = {r.id: r.task for r in rows}
    tasks = {t.value: TaskProgress(task=t.value, label=t.label) for t in TASKS}
    overall = TaskProgress(task="all", label="All tasks")
    pairs: dict[str, list[tuple[str, str]]] = {t.value: [] for t in TASKS}
    people: dict[str, AnnotatorProgress] = {u.name: AnnotatorProgress(name=u.name, role=u.role) for u in users}
    seconds: dict[str, list[float]] = {}

    def person(name: str) -> AnnotatorProgress:
        return people.setdefault(name, AnnotatorProgress(name=name))

    for r in rows:
        st = states.get(r.id)
        if st is None:
            continue
        tp = tasks.setdefault(r.task, TaskProgress(task=r.task, label=r.task))
        status = st.status
        for agg in (tp, overall):
            agg.items += 1
            agg.counts[status] += 1
            agg.one_decision += len(st.reviews) == 1 and st.adjudication is None
            agg.revised += st.adjudication is not None and st.adjudication.decision == "revise"
        if len(st.reviews) >= 2:
            pairs.setdefault(r.task, []).append((st.reviews[0].decision, st.reviews[1].decision))
        for rev in st.reviews:
            p = person(rev.annotator)
            p.done += 1
            p.by_task.setdefault(r.task, AnnotatorTask()).done += 1
            p.decisions[rev.decision] = p.decisions.get(rev.decision, 0) + 1
            if rev.seconds is not None:
                seconds.setdefault(rev.annotator, []).append(rev.seconds)
        if st.adjudication is not None:
            person(st.adjudication.annotator).adjudicated += 1
    # what each annotator could still take
    for p in people.values():
        if p.role == "senior" and not p.done:
            continue
        for r in rows:
            st = states.get(r.id)
            if st is None or st.adjudication is not None or st.review_of(p.name) is not None:
                continue
            if len(st.holders(now) - {p.name}) < 2:
                p.open += 1
                p.by_task.setdefault(task_of[r.id], AnnotatorTask()).open += 1
    for name, secs in seconds.items():
        p = people[name]
        p.timed = len(secs)
        p.seconds_mean = statistics.fmean(secs)
        p.seconds_median = statistics.median(secs)
    for t, prs in pairs.items():
        if t in tasks:
            tasks[t].agreement = _agreement(prs)
    overall.agreement = _agreement([p for prs in pairs.values() for p in prs])
    ordered = [tasks[t.value] for t in TASKS] + [v for k, v in tasks.items() if k not in {t.value for t in Task}]
    return ReviewProgress(items=overall.items, counts=dict(overall.counts), tasks=ordered, overall=overall,
                    annotators=sorted(people.values(), key=lambda p: (p.role == "senior", p.name)))
