"""A run directory as a source of the review app: human raters answer the checklists of the model's answers
(paper §4.5, Table 3), as the judge does, so that ``mtvbench agreement`` can set the judges against them.

**The sample** (:class:`RatingSample`): ``per_task`` dialogues of each task (the paper: 20; every dialogue
of a task that has fewer), drawn with ``seed`` among the dialogues that have at least one rated turn, the
same for every rater. It is drawn once, when the run directory is first served, and kept in the review
store (``settings``), so a restart, another rater or a resumed run never changes it; serving again with
another ``--sample-per-task`` or ``--seed`` is refused (a new ``--store`` starts a new sample).

**An item** is one sampled dialogue (id ``task/video/event``, as in ``responses.jsonl``): every round, and
for each *rated turn* (a scored turn the run has an answer for) the answer its checklist is judged against
(:func:`mtvbench.run.responses.judged_answer`) and the checklist. Its content hash covers the answers: when
a resumed run changes an answer, the ratings made on the old one no longer count (the export says how many).
A scored turn without an answer yet (an INCOMPLETE run) is not rated; ``serve`` says how many.
"""

from __future__ import annotations

import random
from pathlib import Path

from pydantic import BaseModel, ValidationError

from mtvbench.data.schema import TASKS, Dialogue
from mtvbench.errors import ConfigError, InputError, RunDirError
from mtvbench.review.decisions import ReviewItem, content_hash
from mtvbench.review.source import ReviewSource, VideoMode, dataset_item
from mtvbench.review.store import ReviewStore, now_iso
from mtvbench.run.responses import judged_answer
from mtvbench.run.rundir import RunDirectory

#: the paper's sample: 20 dialogues per task (120)
DEFAULT_PER_TASK = 20
DEFAULT_SEED = 0
#: the review store's setting that holds the sample
SAMPLE_KEY = "rating_sample"


class RatingSample(BaseModel):
    """Which dialogues every rater rates (module docstring)."""

    seed: int
    per_task: int
    #: the sampled dialogue ids, in the order raters get them (task by task)
    ids: list[str]
    #: when it was drawn
    at: str = ""


def rated_turns(d: Dialogue, responses: dict) -> dict[int, str]:
    """Scored round -> the answer its checklist is judged against, for the rounds the run has one for."""
    out = {}
    for r in d.scored_turns:
        answer = judged_answer(d, r, responses)
        if answer is not None:
            out[r.index] = answer
    return out


def draw_sample(dialogues: list[Dialogue], responses: dict, per_task: int, seed: int) -> RatingSample:
    """``per_task`` dialogues of each task with a rated turn (all when fewer), drawn with ``seed``."""
    ids = []
    for task in TASKS:
        pool = sorted(d.id for d in dialogues if d.task == task and rated_turns(d, responses))
        rng = random.Random(f"mtvbench-rating-sample:{seed}:{task.value}")
        ids += sorted(rng.sample(pool, min(per_task, len(pool))))
    return RatingSample(seed=seed, per_task=per_task, ids=ids, at=now_iso())


def rating_item(d: Dialogue, answers: dict[int, str]) -> ReviewItem:
    """The item of a sampled dialogue: its rounds, and the checklists of its rated turns with their answers."""
    it = dataset_item(d)
    it.checklists = {k: v for k, v in it.checklists.items() if k in answers}
    it.answers = dict(answers)
    it.content_hash = content_hash(it.rounds, it.checklists, it.answers)
    return it


class RunSource(ReviewSource):
    """A run directory (:class:`~mtvbench.run.rundir.RunDirectory`): its answers, rated."""

    kind = "run"
    work = "rate"
    describe = f"a run directory ({', '.join(RunDirectory.FILES)})"

    def __init__(self, root: Path):
        super().__init__(root)
        self.sample: RatingSample | None = None
        #: scored turns of the sampled dialogues that have no answer yet (as of the last load)
        self.unanswered = 0

    @classmethod
    def detect(cls, root: Path) -> bool:
        try:
            return RunDirectory.detect(root) is not None
        except RunDirError:  # some of its files: near_miss says which is missing
            return False

    @classmethod
    def near_miss(cls, root: Path) -> InputError | None:
        try:
            RunDirectory.detect(root)
        except RunDirError as e:
            return InputError(e.message, hint=e.hint)
        return None

    def files(self) -> list[Path]:
        return [self.root / name for name in (*RunDirectory.FILES, f"{RunDirectory.STORE}-wal")]

    def prepare(self, store: ReviewStore, per_task: int | None = None, seed: int | None = None) -> None:
        """Fix the sample: the sample kept in ``store``, or (the first time) one drawn now and kept."""
        stored = store.setting(SAMPLE_KEY)
        if stored is None:
            run = RunDirectory.open(self.root).load(bootstrap=0, details=True)
            drawn = draw_sample(run.snapshot.dialogues, run.responses,
                                DEFAULT_PER_TASK if per_task is None else per_task,
                                DEFAULT_SEED if seed is None else seed)
            stored = store.keep_setting(SAMPLE_KEY, drawn.model_dump_json())  # another process may have been first
        try:
            sample = RatingSample.model_validate_json(stored)
        except ValidationError as e:
            raise InputError(f"{store.path}: the stored rating sample is not readable ({e.errors()[0]['msg']})",
                             hint="rate into a new review store with --store FILE") from None
        asked = {"sample-per-task": per_task, "seed": seed}
        kept = {"sample-per-task": sample.per_task, "seed": sample.seed}
        differ = [f"--{k} {v} (the sample has {kept[k]})" for k, v in asked.items() if v is not None and v != kept[k]]
        if differ:
            raise ConfigError(f"{store.path}: the raters' sample was drawn with --sample-per-task {sample.per_task} "
                              f"--seed {sample.seed} on {sample.at}; it cannot change under them: " + ", ".join(differ),
                              hint="leave the options out to keep rating it, or start another sample in a new "
                                   "review store with --store FILE")
        self.sample = sample

    def load(self) -> list[ReviewItem]:
        if self.sample is None:
            raise RuntimeError("RunSource.prepare(store) fixes the sample before load()")
        run = RunDirectory.open(self.root).load(bootstrap=0, details=True)
        by_id = run.dialogue_by_id
        items, self.unanswered = [], 0
        for did in self.sample.ids:
            d = by_id.get(did)
            if d is None:
                continue
            answers = rated_turns(d, run.responses)
            self.unanswered += len(d.scored_turns) - len(answers)
            if answers:
                items.append(rating_item(d, answers))
        self.not_a_benchmark = run.scores.not_a_benchmark
        self._videos = {v: Path(p) for v, p in run.snapshot.videos.items()}
        return items

    def write_export(self, out: Path, items: list[ReviewItem], store: ReviewStore, accepted_only: bool,
                     video_mode: VideoMode) -> tuple[list[ReviewItem], int]:
        raise InputError(f"{self.root} is a run directory: its ratings are exported as a human file for "
                         "`mtvbench agreement --human` (mtvbench review export RUN_DIR --out human.jsonl)")
