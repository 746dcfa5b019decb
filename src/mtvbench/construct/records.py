"""Typed artifacts of the construction pipeline, one per stage and video (pydantic, stored as JSON).

Every artifact has ``complete``: a stage some of whose model calls failed stores what it
has with ``complete=False`` (and the failures); the next run asks only for what is
missing (the paid replies are in the workspace's call journal, :mod:`.journal`).

Every artifact also carries :class:`ArtifactMeta`: the fingerprint of what it was made
from (the content digests of the upstream artifacts it read, the video file's content
fingerprint for the first stages, the stage's settings including the model, the prompt
and the stage version) and the digest of its own content. An artifact whose content does
not match its digest was edited by hand; one whose recorded inputs differ from the
current ones is stale (see :mod:`.workspace`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from mtvbench.data.schema import ChecklistItem, Task
from mtvbench.ledger.keys import digest

STAGES = ("split", "caption", "merge", "keyframes", "detect", "objects", "crossscene", "score", "generate",
          "checklists")


#: a video name is a folder name inside the workspace: no separators, no leading dot ("..")
VIDEO_NAME = re.compile(r"[A-Za-z0-9_][\w.\-]{0,199}")


def video_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a video name (it is used as a folder name), or None."""
    if not VIDEO_NAME.fullmatch(name):
        return ("video names may only use letters, digits, '_', '-' and '.', must not start with '.' or '-' "
                f"and have at most 200 characters: {name!r}")
    return None


class VideoRecord(BaseModel):
    name: str
    path: str
    category: str = "uncategorized"

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        problem = video_name_problem(v)
        if problem:
            raise ValueError(problem)
        return v


class Manifest(BaseModel):
    videos: list[VideoRecord] = Field(default_factory=list)


class ArtifactMeta(BaseModel):
    """What an artifact was made from, and the digest of its own content (see module doc)."""

    stage: str
    #: upstream stage -> its content digest; ``video`` -> the video file's content fingerprint
    upstream: dict[str, str] = Field(default_factory=dict)
    #: the stage's settings: model, prompt digest, stage version, frame and rule settings
    settings: dict[str, Any] = Field(default_factory=dict)
    digest: str = ""


class Shortfall(BaseModel):
    """Why a stage made less than it was asked for (one line per video).

    ``failed``: the replies broke the rules so that the video exports no dialogue, or a dialogue
    without any checklist (``build all`` exits 3); otherwise the line is information (units all
    validly rated below the threshold, some of several dialogues given up)."""

    why: str
    failed: bool = False


class Artifact(BaseModel):
    video: str
    complete: bool = True
    meta: ArtifactMeta | None = None

    def shortfall(self) -> Shortfall | None:
        """What this stage could not make from its input (see :class:`Shortfall`); None when nothing."""
        return None


def content_digest(artifact: Artifact) -> str:
    """The digest (24 hex digits) of the artifact's content without its ``meta``, key order ignored."""
    return digest(artifact.model_dump(mode="json", exclude={"meta"}), length=24)


# ------------------------------------------------------------------ 1. split


class Clip(BaseModel):
    index: int
    start_frame: int
    end_frame: int  # exclusive
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


class SplitResult(Artifact):
    detector: str
    fps: float
    total_frames: int
    duration_s: float
    clips: list[Clip]


# ------------------------------------------------------------------ 2. caption


class Failure(BaseModel):
    """One item a stage has no result for. ``error``: the model call failed (asked again on the next
    run; the stage is incomplete); ``rejected``: the replies broke the rules up to the re-ask bound
    (given up: asked again only with ``--retry-failed``)."""

    item: str  # the item's id in the call journal, e.g. "clip/3", "S1/object_reference"
    problems: list[str]
    kind: Literal["error", "rejected"] = "rejected"
    attempts: int = 0


def given_up(failures: list[Failure]) -> list[Failure]:
    """The items whose replies broke the rules up to the re-ask bound."""
    return [f for f in failures if f.kind == "rejected"]


def after_asks(failures: list[Failure]) -> str:
    """`` after 2 re-asks`` for items asked up to three times; empty when asked once."""
    n = max((f.attempts for f in failures), default=1) - 1
    return f" after {n} re-ask{'s' if n != 1 else ''}" if n > 0 else ""


class Captions(Artifact):
    captions: dict[int, str] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)


# ------------------------------------------------------------------ 3. merge


class Segment(BaseModel):
    index: int
    clips: list[int]
    start_s: float
    end_s: float
    caption: str


class MergeDecision(BaseModel):
    pass_index: int
    left: list[int]
    right: list[int]
    same_scene: bool
    prefiltered: bool = False
    reason: str = ""


class MergeResult(Artifact):
    segments: list[Segment] = Field(default_factory=list)
    decisions: list[MergeDecision] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)


# ------------------------------------------------------------------ 4. key frames


class KeyFrame(BaseModel):
    frame: int  # index in the full decode
    time_s: float
    segment: int | None
    sharpness: float
    file: str  # relative to the video's workspace folder


class KeyFrames(Artifact):
    sample_fps: float
    sharpness_threshold: float
    similarity_threshold: float
    sampled: int
    dropped_blurry: list[float] = Field(default_factory=list)  # times
    dropped_similar: list[float] = Field(default_factory=list)
    frames: list[KeyFrame] = Field(default_factory=list)


# ------------------------------------------------------------------ 5. detect


class Box(BaseModel):
    label: str
    confidence: float
    x1: float
    y1: float
    x2: float
    y2: float


class Detection(BaseModel):
    id: int
    frame: int
    time_s: float
    segment: int | None
    box: Box
    crop: str  # relative path of the crop JPEG


class Detections(Artifact):
    detector: str
    detections: list[Detection] = Field(default_factory=list)


# ------------------------------------------------------------------ 6-7. object captions + memory bank


class Appearance(BaseModel):
    detection: int
    segment: int | None
    frame: int
    time_s: float


class BankEntry(BaseModel):
    id: str
    label: str
    captions: list[str] = Field(default_factory=list)
    histogram: list[float] = Field(default_factory=list)
    appearances: list[Appearance] = Field(default_factory=list)

    @property
    def segments(self) -> list[int]:
        return sorted({a.segment for a in self.appearances if a.segment is not None})

    @property
    def description(self) -> str:
        return self.captions[0] if self.captions else self.label


class ObjectsResult(Artifact):
    captions: dict[int, str] = Field(default_factory=dict)  # detection id -> caption
    text_similarity: str = "lexical"
    entries: list[BankEntry] = Field(default_factory=list)
    assignments: dict[int, str] = Field(default_factory=dict)  # detection id -> object ID
    failures: list[Failure] = Field(default_factory=list)


# ------------------------------------------------------------------ 8. cross-scene


class Unit(BaseModel):
    """What one dialogue is generated from: a single-scene segment or a merged cross-scene unit."""

    id: str  # "S3" (segment 3) or "X1" (cross-scene unit 1)
    kind: Literal["single", "cross"]
    segments: list[int]
    ranges: list[tuple[float, float]]
    captions: list[str]
    objects: list[str] = Field(default_factory=list)  # object IDs (cross-scene: the shared ones)
    object_lines: list[str] = Field(default_factory=list)
    link: str = ""  # why the segments were grouped: "objects" or "theme"


class CrossSceneResult(Artifact):
    units: list[Unit] = Field(default_factory=list)


# ------------------------------------------------------------------ 9. scoring


class UnitScores(BaseModel):
    unit: str
    scores: dict[str, int]
    selected: list[Task]


class ScoreResult(Artifact):
    min_score: int = 5
    units: dict[str, UnitScores] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """No unit selected for any task (a failure when some ratings were given up), or some ratings given up."""
        bad = given_up(self.failures)
        total = len(self.units) + len(self.failures)
        broken = f"{len(bad)} of {total} suitability ratings broke the rules{after_asks(bad)}"
        if any(u.selected for u in self.units.values()):
            return Shortfall(why=broken) if bad else None
        if bad:
            return Shortfall(why=f"no unit rated {self.min_score}-6: {broken}", failed=True)
        if self.units:
            return Shortfall(why=f"no unit rated {self.min_score}-6 (all {len(self.units)} rated below "
                                 f"{self.min_score})")
        return None


# ------------------------------------------------------------------ 10. generate


class GenRound(BaseModel):
    index: int
    user: str
    assistant: str
    ability: str | None = None
    topic: str | None = None  # "video" / "non-video" (Topic Shifting)


class GeneratedDialogue(BaseModel):
    unit: str
    task: Task
    rounds: list[GenRound]
    attempts: int


class GenerateResult(Artifact):
    dialogues: dict[str, GeneratedDialogue] = Field(default_factory=dict)  # "<unit>/<task>" -> dialogue
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """Dialogues given up; a failure when none is left."""
        bad = given_up(self.failures)
        if not bad:
            return None
        total = len(self.dialogues) + len(self.failures)
        return Shortfall(why=f"{len(bad)} of {total} dialogues failed the rule checks{after_asks(bad)}",
                         failed=not self.dialogues)


# ------------------------------------------------------------------ 11. checklists


class ChecklistResult(Artifact):
    #: "<unit>/<task>" -> {round index -> items}
    checklists: dict[str, dict[int, list[ChecklistItem]]] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """Scored rounds without a checklist (items ``<unit>/<task>/<round>``); a failure when a dialogue
        is left without any."""
        bad = given_up(self.failures)
        if not bad:
            return None
        total = sum(len(rounds) for rounds in self.checklists.values()) + len(self.failures)
        bare = {f.item.rsplit("/", 1)[0] for f in bad} - {k for k, rounds in self.checklists.items() if rounds}
        why = f"no checklist for {len(bad)} of {total} scored rounds{after_asks(bad)}"
        if bare:
            why += f" ({len(bare)} dialogue{'s' if len(bare) != 1 else ''} without any)"
        return Shortfall(why=why, failed=bool(bare))
