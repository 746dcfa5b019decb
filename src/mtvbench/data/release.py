"""The shape of the released benchmark as data (``release.yaml``), for estimating a run before the gated
files are downloaded.

:func:`release_shape` reads the published totals (1,000 dialogues, 5,887 QA pairs, about 135 videos,
5.89 turns per dialogue, the mean question and answer lengths of Table 1) and the figures the paper does
not publish in text, each an assumption (the split over the tasks, the scored turns per dialogue, the
videos' duration and size). :func:`shaped_benchmark` builds a :class:`~mtvbench.data.schema.Benchmark` of
that shape: dialogues with rounds and checklists of the published lengths (placeholder words), over
videos that exist only as their assumed :class:`VideoSize`. Every number it gives is "from the published
statistics, not from the files" (:data:`LABEL`).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from mtvbench.data.schema import ALL_ROUNDS_TASKS, TASKS, Benchmark, ChecklistItem, Dialogue, Round, Task

#: what every figure of a shaped benchmark is said to come from
LABEL = "from the published statistics, not from the files"
#: the ability label of a model turn per task (the official rule, :func:`~mtvbench.data.schema.is_model_turn`)
_ABILITY = {Task.OBJECT_REFERENCE: "Object Reference", Task.MEMORY_RECALL: "Memory Recall",
            Task.CONTENT_SUMMARY: "Summary", Task.ANSWER_REFUSAL: "Answer Refusal"}
_STRICT = ConfigDict(extra="forbid", frozen=True)


class Published(BaseModel):
    """Figures the paper states (its text and Table 1)."""

    model_config = _STRICT
    dialogues: int
    qa_pairs: int
    qa_per_video: float
    turns_per_dialogue: float
    question_tokens: float
    answer_tokens: float
    checklist_items: int

    @property
    def videos(self) -> int:
        return round(self.qa_pairs / self.qa_per_video)


class Assumed(BaseModel):
    """Figures the paper does not publish in text: assumptions, each said as such."""

    model_config = _STRICT
    task_split: str
    model_turns: dict[str, int]
    scored_all_but_first: list[str]
    video_duration_s: float
    video_size: tuple[int, int]
    video_fps: float
    checklist_question_tokens: int


class ReleaseShape(BaseModel):
    model_config = _STRICT
    repo: str
    published: Published
    assumed: Assumed

    def describe(self) -> list[str]:
        """The figures, in words, for a note: the published ones, then the assumptions."""
        p, a = self.published, self.assumed
        w, h = a.video_size
        return [f"{LABEL}: {p.dialogues:,} dialogues, {p.qa_pairs:,} QA pairs, about {p.videos} videos "
                f"({p.qa_pairs:,} / {p.qa_per_video} QA per video), {p.turns_per_dialogue} turns per dialogue, "
                f"questions {p.question_tokens} and answers {p.answer_tokens} tokens on average, "
                f"{p.checklist_items} checklist items per scored turn",
                f"assumed (not published in text): an {a.task_split} split over the six tasks; scored turns per "
                f"dialogue {', '.join(f'{k} {v}' for k, v in a.model_turns.items())}, and every round but the "
                f"first in {', '.join(a.scored_all_but_first)}; videos of {a.video_duration_s / 60:g} min at "
                f"{w}x{h}, {a.video_fps:g} fps; the exact figures once the files are downloaded "
                f"(mtvbench download)"]


@cache
def release_shape() -> ReleaseShape:
    """The shape of the released benchmark (``release.yaml``, shipped with the package)."""
    text = resources.files("mtvbench.data").joinpath("release.yaml").read_text(encoding="utf-8")
    return ReleaseShape.model_validate(yaml.safe_load(text))


class VideoSize(BaseModel):
    """A video of a shaped benchmark: what its container header would say."""

    frames: int
    width: int
    height: int
    duration_s: float


def _words(tokens: float) -> str:
    """Placeholder text of about ``tokens`` tokens by the 4-characters rule (``word`` and a space)."""
    return "word " * max(1, round(tokens * 4 / 5))


def _rounds(task: Task, n: int, shape: ReleaseShape) -> list[Round]:
    p, a = shape.published, shape.assumed
    checklist = [ChecklistItem(key=f"Q{k}", question=_words(a.checklist_question_tokens), expected="Yes")
                 for k in range(1, p.checklist_items + 1)]
    if task in ALL_ROUNDS_TASKS:
        scored = set(range(2, n + 1)) if task.value in a.scored_all_but_first else set(range(1, n + 1))
        turns = set(range(1, n + 1))
    else:
        turns = scored = set(range(n - a.model_turns.get(task.value, 1) + 1, n + 1))
    return [Round(index=k, user=_words(p.question_tokens), assistant=_words(p.answer_tokens),
                  ability=_ABILITY.get(task, "Topic Shifting") if k in turns else "Context",
                  model_turn=k in turns, checklist=checklist if k in scored else None)
            for k in range(1, n + 1)]


def shaped_benchmark(shape: ReleaseShape | None = None) -> tuple[Benchmark, dict[str, VideoSize]]:
    """A benchmark of the release's shape and its videos' sizes (nothing on disk): the dialogues split
    over the tasks, each of 5 or 6 rounds so that the rounds add up to the published QA pairs, dealt
    over the videos in turn."""
    shape = shape or release_shape()
    p, a = shape.published, shape.assumed
    n_videos = p.videos
    longer = p.qa_pairs - 5 * p.dialogues  # dialogues with a sixth round
    dialogues = []
    for i in range(p.dialogues):
        task = TASKS[i % len(TASKS)]
        dialogues.append(Dialogue(task=task, video=f"video{i % n_videos:03d}", event=str(i),
                                  rounds=_rounds(task, 6 if i < longer else 5, shape)))
    w, h = a.video_size
    size = VideoSize(frames=round(a.video_duration_s * a.video_fps), width=w, height=h,
                     duration_s=a.video_duration_s)
    videos = {f"video{v:03d}": size for v in range(n_videos)}
    return Benchmark(root=Path(f"hf:{shape.repo}"), dialogues=dialogues, videos={}), videos


__all__ = ["LABEL", "ReleaseShape", "VideoSize", "release_shape", "shaped_benchmark"]
