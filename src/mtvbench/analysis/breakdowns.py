"""Scores broken down by dialogue properties (paper Figures 4a/4b, 5a and 6, and by category).

A bin's value is the mean of the dialogue scores that fall in it (all tasks pooled), and
per task the mean of that task's dialogues in the bin; both in percent. This is a mean over
dialogues, not the six-task macro mean used for Overall, because a bin rarely holds every
task; ``n`` is printed beside every value so thin bins are visible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel

from mtvbench.analysis.metadata import DialogueMeta
from mtvbench.data.schema import TASKS, Dialogue
from mtvbench.render.tables import MISSING, Col, TextTable, to_markdown
from mtvbench.scoring.aggregate import DialogueScore, fmt

SCENE_BINS = ("1-5", "6-10", "11-15", "16-20", ">20")
TURN_BINS = ("5", "6", "7", "8")
LENGTH_BINS = ("(0,5]", "(5,10]", "(10,15]", "(15,20]", ">20")
UNKNOWN = "unknown"


def scene_bin(n: int | None) -> str | None:
    """1-5, 6-10, 11-15, 16-20, >20 (inclusive integer bins); ``None`` for unknown/<1."""
    if n is None or n < 1:
        return None
    if n > 20:
        return ">20"
    lo = 5 * ((n - 1) // 5) + 1
    return f"{lo}-{lo + 4}"


def turn_bin(n: int) -> str:
    """The number of rounds of a dialogue: '5'..'8' (the released range); others as '<5'/'>8'."""
    if n < 5:
        return "<5"
    if n > 8:
        return ">8"
    return str(n)


def length_bin(duration_s: float | None) -> str | None:
    """(0,5], (5,10], (10,15], (15,20], >20 minutes; right-closed; ``None`` when unknown."""
    if duration_s is None or not math.isfinite(duration_s) or duration_s <= 0:
        return None
    minutes = duration_s / 60.0
    for i, hi in enumerate((5, 10, 15, 20)):
        if minutes <= hi:
            return LENGTH_BINS[i]
    return ">20"


class BinRow(BaseModel):
    label: str
    n: int
    score: float | None
    tasks: dict[str, float | None]
    task_n: dict[str, int]


class Breakdown(BaseModel):
    """One run's scores over one property."""

    name: str  # scenes | turns | length | category
    title: str
    run: str
    rows: list[BinRow]
    unknown: int = 0  # scored dialogues whose property is unknown


def _mean(xs: Sequence[float]) -> float | None:
    return 100.0 * sum(xs) / len(xs) if xs else None


def breakdown(dscores: Sequence[DialogueScore], key: Mapping[str, str | None], labels: Sequence[str], *,
              name: str, title: str, run: str, extra_labels: bool = True) -> Breakdown:
    """Group scored dialogues by ``key[dialogue_id]``; bins in ``labels`` order, always shown
    (empty bins have ``n = 0``); other labels found are appended when ``extra_labels``."""
    groups: dict[str, list[DialogueScore]] = {lab: [] for lab in labels}
    unknown = 0
    for ds in dscores:
        if ds.score is None:
            continue
        lab = key.get(ds.dialogue_id)
        if lab is None:
            unknown += 1
            continue
        if lab not in groups:
            if not extra_labels:
                unknown += 1
                continue
            groups[lab] = []
        groups[lab].append(ds)
    rows = []
    for lab, members in groups.items():
        tasks, task_n = {}, {}
        for t in TASKS:
            vals = [m.score for m in members if m.task == t and m.score is not None]
            tasks[t.value] = _mean(vals)
            task_n[t.value] = len(vals)
        rows.append(BinRow(label=lab, n=len(members), score=_mean([m.score for m in members if m.score is not None]),
                           tasks=tasks, task_n=task_n))
    return Breakdown(name=name, title=title, run=run, rows=rows, unknown=unknown)


def _keys(dialogues: Sequence[Dialogue], fn: Callable[[Dialogue], str | None]) -> dict[str, str | None]:
    return {d.id: fn(d) for d in dialogues}


def all_breakdowns(dialogues: Sequence[Dialogue], dscores: Sequence[DialogueScore], meta: Mapping[str, DialogueMeta],
                   run: str) -> list[Breakdown]:
    """Scenes, turns, video length and category breakdowns of one run."""
    def m(d: Dialogue) -> DialogueMeta | None:
        return meta.get(d.id)

    scenes = _keys(dialogues, lambda d: scene_bin(m(d).scenes if m(d) else None))
    turns = _keys(dialogues, lambda d: turn_bin(len(d.rounds)))
    length = _keys(dialogues, lambda d: length_bin(m(d).duration_s if m(d) else None))
    cats = _keys(dialogues, lambda d: (m(d).category if m(d) else None))
    cat_labels = sorted({c for c in cats.values() if c is not None})
    return [
        breakdown(dscores, scenes, SCENE_BINS, name="scenes", title="By number of scenes in the dialogue",
                  run=run, extra_labels=False),
        breakdown(dscores, turns, TURN_BINS, name="turns", title="By number of turns (rounds) in the dialogue",
                  run=run),
        breakdown(dscores, length, LENGTH_BINS, name="length", title="By video length (minutes)", run=run,
                  extra_labels=False),
        breakdown(dscores, cats, cat_labels, name="category", title="By video category", run=run),
    ]


def _cell(r: BinRow | None, task: str | None = None) -> str:
    if r is None:
        return f"{MISSING} (0)"
    v, n = (r.score, r.n) if task is None else (r.tasks[task], r.task_n[task])
    return f"{fmt(v)} ({n})"


def breakdown_tables(items: Sequence[Breakdown], per_task: bool = True) -> list[TextTable]:
    """Runs as rows, bins as columns (``score (n)``); then, per run, tasks x bins."""
    if not items:
        return []
    first = items[0]
    labels = [r.label for r in first.rows]
    for b in items[1:]:
        labels += [r.label for r in b.rows if r.label not in labels]
    bins = [Col(lab, "text") for lab in labels]
    out = [TextTable(columns=[Col("Run", "id"), *bins, Col("unknown", "num")], title=first.title,
                     rows=[[b.run, *(_cell({r.label: r for r in b.rows}.get(lab)) for lab in labels), b.unknown]
                           for b in items])]
    if per_task:
        for b in items:
            by = {r.label: r for r in b.rows}
            out.append(TextTable(columns=[Col("Task", "id"), *bins], intro=[f"Per task — {b.run}:"],
                                 rows=[[t.abbr, *(_cell(by.get(lab), t.value) for lab in labels)] for t in TASKS]))
    return out


def breakdown_markdown(items: Sequence[Breakdown], per_task: bool = True) -> str:
    return "\n".join(to_markdown(t) for t in breakdown_tables(items, per_task))


def breakdown_csv_rows(items: Sequence[Breakdown]) -> list[dict[str, object]]:
    """Long format: one row per (run, bin, task-or-all)."""
    out: list[dict[str, object]] = []
    for b in items:
        for r in b.rows:
            out.append({"breakdown": b.name, "run": b.run, "bin": r.label, "task": "all", "n": r.n,
                        "score": "" if r.score is None else round(r.score, 4)})
            for t in TASKS:
                v = r.tasks[t.value]
                out.append({"breakdown": b.name, "run": b.run, "bin": r.label, "task": t.abbr,
                            "n": r.task_n[t.value], "score": "" if v is None else round(v, 4)})
    return out
