"""The typed model of the benchmark (dialogues, rounds, checklists) that every stage uses.

A :class:`Benchmark` holds :class:`Dialogue` records. Each dialogue has ordered
:class:`Round` records; a round is a *model turn* when the official task rule says the
model answers it, and it is *scored* when it also has a checklist of yes/no items.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Task(str, Enum):
    """The six MT-Video-Bench tasks, named by their internal (score) keys."""

    OBJECT_REFERENCE = "object_reference"
    MEMORY_RECALL = "memory_recall"
    CONTENT_SUMMARY = "content_summary"
    ANSWER_REFUSAL = "answer_refusal"
    TOPIC_SHIFTING = "topic_shifting"
    PROACTIVE_INTERACTION = "proactive_interaction"

    @property
    def abbr(self) -> str:
        """The task's short name in tables (``OR`` for Object Reference)."""
        return TASK_ABBR[self]

    @property
    def official_stem(self) -> str:
        """File stem in the released layout (``summary`` for Content Summary)."""
        return OFFICIAL_STEM[self]

    @property
    def label(self) -> str:
        """The task's name as the paper writes it (``Object Reference``)."""
        return TASK_LABEL[self]

    @property
    def group(self) -> str:
        """The task's group in the paper: ``perceptivity`` or ``interactivity``."""
        return "perceptivity" if self in PERCEPTIVITY else "interactivity"


TASKS: tuple[Task, ...] = tuple(Task)
TASK_ABBR = {
    Task.OBJECT_REFERENCE: "OR",
    Task.MEMORY_RECALL: "MR",
    Task.CONTENT_SUMMARY: "CS",
    Task.ANSWER_REFUSAL: "AR",
    Task.TOPIC_SHIFTING: "TS",
    Task.PROACTIVE_INTERACTION: "PI",
}
TASK_LABEL = {
    Task.OBJECT_REFERENCE: "Object Reference",
    Task.MEMORY_RECALL: "Memory Recall",
    Task.CONTENT_SUMMARY: "Content Summary",
    Task.ANSWER_REFUSAL: "Answer Refusal",
    Task.TOPIC_SHIFTING: "Topic Shifting",
    Task.PROACTIVE_INTERACTION: "Proactive Interaction",
}
OFFICIAL_STEM = {t: t.value for t in Task} | {Task.CONTENT_SUMMARY: "summary"}
STEM_TO_TASK = {v: k for k, v in OFFICIAL_STEM.items()}
PERCEPTIVITY = (Task.OBJECT_REFERENCE, Task.MEMORY_RECALL, Task.CONTENT_SUMMARY)
INTERACTIVITY = (Task.ANSWER_REFUSAL, Task.TOPIC_SHIFTING, Task.PROACTIVE_INTERACTION)

#: Ability labels whose rounds are model turns in the four "labelled" tasks.
MODEL_TURN_ABILITIES = frozenset({"Summary", "Object Reference", "Memory Recall", "Answer Refusal"})
#: Tasks in which every round is a model turn, whatever its label.
ALL_ROUNDS_TASKS = frozenset({Task.TOPIC_SHIFTING, Task.PROACTIVE_INTERACTION})


def is_model_turn(task: Task, ability: str | None) -> bool:
    """The official turn-selection rule (see docs/official-format.md)."""
    if task in ALL_ROUNDS_TASKS:
        return True
    return (ability or "").strip() in MODEL_TURN_ABILITIES


Expected = Literal["Yes", "No"]


class ChecklistItem(BaseModel):
    """One yes/no question of a turn's checklist; ``key`` is ``Q1``..``Qn``."""

    model_config = ConfigDict(frozen=True)

    key: str
    question: str
    expected: Expected

    @property
    def answer_key(self) -> str:
        """The key the judge must answer under (``A3`` for ``Q3``)."""
        return "A" + self.key[1:]


class NumberedEntry(BaseModel):
    """A round's checklist entry whose ``round index`` is written as a number, kept beside the round's last entry
    when that one gives it as text: the authors' eval.py keys entries by the raw value and judges this one."""

    checklist: list[ChecklistItem]
    checklist_raw: list[tuple[str, str]]


class Round(BaseModel):
    """One round of a dialogue. ``model_turn`` and the judging fields (``judged``, ``answer_round``,
    ``placeholder_answer``, ``not_judged``) are the evaluation protocol's reading of the round
    (:mod:`mtvbench.protocol`); the loader fills them by the paper's rule."""

    index: int = Field(ge=1, description="k of 'Round k'")
    user: str
    assistant: str
    ability: str | None = None
    model_turn: bool = False
    checklist: list[ChecklistItem] | None = None
    #: 0-based place of the round in its file's ``mtqa`` object (None: unknown, taken as ``index - 1``)
    position: int | None = None
    #: the checklist entry as written: its ``Q*``/``A*`` keys in file order with ``str()`` of each value
    #: (the authors' eval.py lists the questions and pairs the answers in this order)
    checklist_raw: list[tuple[str, str]] | None = None
    #: the checklist entry gave ``round index`` as text ("3"), which the authors' eval.py never matches
    checklist_index_text: bool = False
    #: the last entry for this round written with a number, when a later one gives ``round index`` as text
    #: (``2`` then ``"2"``): the entry the ``authors`` protocol judges; None otherwise (and in run directories
    #: made before it was recorded)
    checklist_by_number: NumberedEntry | None = None
    #: this round's checklist is judged (None: the paper's rule, a model turn with a checklist)
    judged: bool | None = None
    #: the round whose model answer is judged against this round's checklist (None: this round)
    answer_round: int | None = None
    #: a fixed text judged instead of a model answer (the authors' placeholder for non-model rounds)
    placeholder_answer: str | None = None
    #: why a checklist of this round is not judged, when it has one and is not
    not_judged: str | None = None

    @property
    def scored(self) -> bool:
        """This round's checklist is judged (and scored)."""
        if self.judged is not None:
            return self.judged
        return self.model_turn and bool(self.checklist)

    @property
    def answer_index(self) -> int | None:
        """The round whose model answer is judged for this round; None when a fixed placeholder is."""
        if self.placeholder_answer is not None:
            return None
        return self.answer_round if self.answer_round is not None else self.index

    @property
    def file_position(self) -> int:
        """The round's place in its dialogue as written in the file (0 for the first)."""
        return self.position if self.position is not None else self.index - 1


class Dialogue(BaseModel):
    """One dialogue of a task over one video (an ``event_index`` of the released files); its id is
    ``task/video/event``."""

    task: Task
    video: str
    event: str
    rounds: list[Round]

    @property
    def id(self) -> str:
        """The dialogue's id, ``task/video/event``."""
        return dialogue_id(self.task, self.video, self.event)

    def turn_id(self, round_index: int) -> str:
        """The id of round ``round_index`` of this dialogue, ``task/video/event#k``."""
        return f"{self.id}#{round_index}"

    def round(self, index: int) -> Round:
        """The round numbered ``index``; ``KeyError`` when there is none."""
        for r in self.rounds:
            if r.index == index:
                return r
        raise KeyError(f"{self.id} has no Round {index}")

    @property
    def model_turns(self) -> list[Round]:
        """The rounds the model under test answers (the official turn rule)."""
        return [r for r in self.rounds if r.model_turn]

    @property
    def scored_turns(self) -> list[Round]:
        """The rounds whose checklist is judged and scored."""
        return [r for r in self.rounds if r.scored]

    def earlier(self, rnd: Round) -> list[Round]:
        """The rounds before ``rnd`` in this dialogue's order (the history of ``rnd``). The loader orders
        rounds by index; the ``authors`` protocol by their place in the file, as the authors' scripts do."""
        out = []
        for r in self.rounds:
            if r.index == rnd.index:
                return out
            out.append(r)
        raise KeyError(f"{self.id} has no Round {rnd.index}")

    def answer_turn_ids(self) -> set[str]:
        """Turn ids whose model answer is judged (for this round or another one)."""
        return {self.turn_id(i) for r in self.scored_turns if (i := r.answer_index) is not None}


def dialogue_id(task: Task, video: str, event: str) -> str:
    """The id of a dialogue: ``task/video/event``."""
    return f"{task._value_}/{video}/{event}"  # (``_value_``: ``value`` is a slow descriptor, read per turn id)


def split_turn_id(turn_id: str) -> tuple[str, int]:
    """``'task/video/event#3'`` -> (``'task/video/event'``, 3)."""
    did, _, k = turn_id.rpartition("#")
    return did, int(k)


#: the longest reason a dataset's mark keeps (a longer one is cut)
MAX_MARK_CHARS = 500


class NotABenchmark(BaseModel):
    """Why the numbers made from a dataset are not MT-Video-Bench numbers: the data was built with a scripted
    model (``mtvbench build -m offline``) or is the bundled synthetic sample. The loader reads it from
    ``metadata.json`` or from the dialogue records themselves (:data:`mtvbench.data.layout.NOT_A_BENCHMARK_KEY`);
    a run records it in ``config.yaml`` and every score file, table and report made from the run shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the reason as the data gives it (untrusted text): one line, control characters removed, at most
    #: :data:`MAX_MARK_CHARS` characters (each sink escapes it for itself)
    reason: str
    #: where it was read: ``metadata.json`` or the first task file that carries it (``mtqa/summary.json``)
    found_in: str

    @field_validator("reason", "found_in")
    @classmethod
    def _one_line(cls, value: str) -> str:
        text = " ".join("".join(c if c.isprintable() else " " for c in value).split())
        return text if len(text) <= MAX_MARK_CHARS else text[:MAX_MARK_CHARS - 1] + "…"

    @property
    def line(self) -> str:
        """The wording every sink shows (escaped for the sink by its writer)."""
        return f"NOT a real benchmark: {self.reason}"


class Benchmark(BaseModel):
    """A loaded dataset: its dialogues (with their checklists) and the video files by name."""

    root: Path
    dialogues: list[Dialogue]
    #: video name -> path of the whole video (the released layout has no per-clip files)
    videos: dict[str, Path]
    #: set when the dataset is not a real benchmark (see :class:`NotABenchmark`)
    not_a_benchmark: NotABenchmark | None = None

    def by_task(self, task: Task) -> list[Dialogue]:
        """The dialogues of ``task``, in file order."""
        return [d for d in self.dialogues if d.task == task]

    def dialogue(self, did: str) -> Dialogue:
        """The dialogue with id ``did``; ``KeyError`` when there is none."""
        for d in self.dialogues:
            if d.id == did:
                return d
        raise KeyError(did)

    def limit(self, n: int | None) -> Benchmark:
        """At most ``n`` dialogues per task (in file order)."""
        if n is None:
            return self
        kept: list[Dialogue] = []
        for t in TASKS:
            kept.extend(self.by_task(t)[:n])
        used = {d.video for d in kept}
        return Benchmark(root=self.root, dialogues=kept, not_a_benchmark=self.not_a_benchmark,
                         videos={k: v for k, v in self.videos.items() if k in used})
