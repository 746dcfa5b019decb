"""Typed artifacts of the construction pipeline, one per stage and video (pydantic, stored as JSON).

Every artifact has ``complete``: a stage that stopped half-way (an LLM stage interrupted,
some calls failed) stores what it has with ``complete=False`` and the next run fills in
only what is missing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.data.schema import ChecklistItem, Task

STAGES = ("split", "caption", "merge", "keyframes", "detect", "objects", "crossscene", "score", "generate",
          "checklists")


def hms(seconds: float) -> str:
    """``HH:MM:SS`` (the form the released questions use for clip ranges)."""
    s = max(0, int(seconds + 1e-6))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class VideoRecord(BaseModel):
    name: str
    path: str
    category: str = "uncategorized"


class Manifest(BaseModel):
    videos: list[VideoRecord] = Field(default_factory=list)


class Artifact(BaseModel):
    video: str
    complete: bool = True


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
    item: str
    problems: list[str]


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
    attempted: list[str] = Field(default_factory=list)  # keys given up on (re-asked to the bound)


# ------------------------------------------------------------------ 11. checklists


class ChecklistResult(Artifact):
    #: "<unit>/<task>" -> {round index -> items}
    checklists: dict[str, dict[int, list[ChecklistItem]]] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)
