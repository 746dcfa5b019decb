"""The raters' work on a run directory (:mod:`mtvbench.review.run_source`): what comes next, progress,
and the export that ``mtvbench agreement --human`` reads.

- **Next**: a rater gets the sampled dialogues in the sample's order, each once; every sampled turn is
  rated by every rater (no slots as in the double annotation).
- **Progress**: for seniors, per rater and task the dialogues rated, the active time, and the agreement
  among the raters (Krippendorff's alpha, nominal, over their Yes/No answers; the same computation as
  ``agreement``'s, :func:`mtvbench.scoring.human.human_agreement`); a rater sees the size of each task
  and their own work, nothing of the other raters.
- **Export** (:func:`export_ratings`): one record per rater and checklist question (``turn_id``, ``item``,
  ``verdict``, ``rater``, ``at``, the sample's ``seed`` and the digest of the rated answer), written by
  :func:`mtvbench.scoring.human.human_jsonl` and read back with
  :func:`~mtvbench.scoring.human.load_human` before it is kept (one reader). A rater who has not rated
  every sampled dialogue makes the export INCOMPLETE (the command exits 3).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.data.schema import TASKS
from mtvbench.errors import InputError, OutputError
from mtvbench.review.decisions import Rating, ReviewItem
from mtvbench.review.store import UserInfo
from mtvbench.scoring.human import HumanRecord, answer_digest, human_agreement, human_jsonl, load_human
from mtvbench.util.files import atomic_write_text


def next_to_rate(items: Sequence[ReviewItem], rated: set[str], after: str | None = None) -> str | None:
    """The first item (after ``after``, wrapping around) not in ``rated``; None when every one is."""
    ids = [it.id for it in items]
    if after in ids:
        k = ids.index(after) + 1
        ids = ids[k:] + ids[:k - 1]
    return next((i for i in ids if i not in rated), None)


def human_records(items: Sequence[ReviewItem], ratings: dict[str, list[Rating]], seed: int | None
                  ) -> list[HumanRecord]:
    """One record per rater and checklist question of each item's ratings (in the items' order)."""
    out = []
    for it in items:
        for r in ratings.get(it.id, []):
            for key, verdict in r.marks.items():
                rnd, _, q = key.partition(".")
                out.append(HumanRecord(turn_id=f"{it.id}#{rnd}", annotator=r.rater, item="A" + q[1:], verdict=verdict,
                                       at=r.at, seed=seed, answer_digest=answer_digest(it.answers[int(rnd)])))
    return out


# ------------------------------------------------------------------------------ progress

class RaterTask(BaseModel):
    """One task of the raters' sample: its label, how many dialogues it has and how many are rated."""

    task: str
    label: str
    items: int = 0
    done: int = 0


class RaterProgress(BaseModel):
    """One rater's work: dialogues rated, by task, and the active seconds per rating."""

    name: str
    done: int = 0
    by_task: dict[str, int] = Field(default_factory=dict)
    seconds_mean: float | None = None
    seconds_median: float | None = None


class RatingProgress(BaseModel):
    """The raters' whole progress, which only seniors see: the sample (its size, seed and per-task
    size), each task's progress and each rater's work."""

    scope: str = "rating"
    items: int
    questions: int
    seed: int | None = None
    per_task: int | None = None
    tasks: list[RaterTask]
    raters: list[RaterProgress]
    #: dialogues every rater rated
    rated_by_all: int = 0
    #: Krippendorff's alpha among the raters (nominal, their Yes/No answers) and its units
    alpha: float | None = None
    alpha_units: int = 0


class OwnRating(BaseModel):
    """What a rater sees: each task's size and their own work."""

    scope: str = "rating-own"
    items: int
    tasks: list[RaterTask]
    me: RaterProgress


def _tasks(items: Sequence[ReviewItem]) -> dict[str, RaterTask]:
    out = {t.value: RaterTask(task=t.value, label=t.label) for t in TASKS}
    for it in items:
        out[it.task.value].items += 1
    return out


def _rater(name: str, items: Sequence[ReviewItem], ratings: dict[str, list[Rating]]) -> RaterProgress:
    me = RaterProgress(name=name)
    secs = []
    for it in items:
        mine = next((r for r in ratings.get(it.id, []) if r.rater == name), None)
        if mine is not None:
            me.done += 1
            me.by_task[it.task.value] = me.by_task.get(it.task.value, 0) + 1
            if mine.seconds is not None:
                secs.append(mine.seconds)
    if secs:
        me.seconds_mean, me.seconds_median = statistics.fmean(secs), statistics.median(secs)
    return me


def rating_progress(items: Sequence[ReviewItem], ratings: dict[str, list[Rating]], users: Sequence[UserInfo],
                    seed: int | None = None, per_task: int | None = None) -> RatingProgress:
    """The full progress of the raters (for seniors)."""
    names = sorted({r.rater for rs in ratings.values() for r in rs} | {u.name for u in users if u.job == "rater"})
    raters = [_rater(n, items, ratings) for n in names]
    _, _, alpha, units = human_agreement(human_records(items, ratings, seed))
    all_rated = sum(len(names) > 0 and {r.rater for r in ratings.get(it.id, [])} >= set(names) for it in items)
    return RatingProgress(items=len(items), questions=sum(len(it.checklist_keys()) for it in items), seed=seed,
                          per_task=per_task, tasks=[t for t in _tasks(items).values() if t.items], raters=raters,
                          rated_by_all=all_rated, alpha=alpha, alpha_units=units)


def own_rating(items: Sequence[ReviewItem], ratings: dict[str, list[Rating]], name: str) -> OwnRating:
    """What rater ``name`` may see of the progress."""
    me = _rater(name, items, ratings)
    tasks = _tasks(items)
    for task, n in me.by_task.items():
        tasks[task].done = n
    return OwnRating(items=len(items), tasks=[t for t in tasks.values() if t.items], me=me)


# ------------------------------------------------------------------------------ export

class RatingExport(BaseModel):
    """What ``review export`` of a run directory wrote: the file, how many records and items, the sample's seed, per
    rater how many sampled dialogues they rated, and how many ratings were left out as outdated."""

    out: str
    records: int
    items: int
    seed: int | None
    #: rater -> sampled dialogues they rated
    rated: dict[str, int]
    #: ratings made on answers that changed since (not exported)
    outdated: int = 0

    @property
    def incomplete(self) -> dict[str, int]:
        """Rater -> sampled dialogues they have not rated yet."""
        return {name: self.items - n for name, n in self.rated.items() if n < self.items}


def export_ratings(items: Sequence[ReviewItem], ratings: dict[str, list[Rating]], outdated: int, seed: int | None,
                   out: Path) -> RatingExport:
    """Write the raters' answers to ``out`` (JSON Lines, the format ``agreement --human`` reads) and read
    the file back with that reader before keeping it (module docstring)."""
    out = Path(out)
    if out.is_dir():
        raise InputError(f"{out}: is a folder; the ratings are written to a file (e.g. --out human.jsonl)")
    if out.suffix.lower() != ".jsonl":
        raise InputError(f"{out}: the ratings are written as JSON Lines: name the file *.jsonl")
    records = human_records(items, ratings, seed)
    if not records:
        raise InputError("no ratings yet: nothing to export (raters rate on the Rate page of `mtvbench review "
                         "serve RUN_DIR`)")
    atomic_write_text(out, human_jsonl(records))
    if load_human(out) != records:
        out.unlink(missing_ok=True)
        raise OutputError(f"{out}: the written file does not read back as written (a bug of mtvbench); removed")
    rated: dict[str, int] = {}
    for it in items:
        for r in ratings.get(it.id, []):
            rated[r.rater] = rated.get(r.rater, 0) + 1
    return RatingExport(out=str(out), records=len(records), items=len(items), seed=seed, rated=rated,
                        outdated=outdated)
