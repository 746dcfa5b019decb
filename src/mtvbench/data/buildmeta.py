"""``metadata.json`` of a dataset made by ``mtvbench build``: what the released JSON lacks.

Per video its category, duration, scene count, clip and segment ranges; per dialogue (keyed by
``task/video/event``, :attr:`mtvbench.data.schema.Dialogue.id`) its construction unit,
single/cross-scene kind, segments, time ranges and objects. Written by the build export
(:mod:`mtvbench.construct.export`), read by the report's breakdowns
(:mod:`mtvbench.analysis.metadata`) and the review app (:mod:`mtvbench.review.source`).

``not_a_benchmark`` is set when the dataset was built with a scripted model (``mtvbench build
-m offline``): its dialogues and checklists only exercise the tools, and ``validate`` and ``run``
say so (:func:`not_a_benchmark`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.data.schema import Task


class VideoMeta(BaseModel):
    category: str
    duration_s: float
    scene_count: int
    clip_count: int
    clips: list[tuple[float, float]]
    segments: list[tuple[float, float]]


class BuiltDialogueMeta(BaseModel):
    task: Task
    video: str
    event: str
    unit: str
    kind: Literal["single", "cross"]
    segments: list[int]
    ranges: list[tuple[float, float]]
    objects: list[str] = Field(default_factory=list)


class BuildMetadata(BaseModel):
    """``metadata.json`` of a built dataset; dialogues keyed by ``task/video/event`` (Dialogue.id)."""

    format: Literal["mtvbench-build-metadata"] = "mtvbench-build-metadata"
    version: int = 1
    videos: dict[str, VideoMeta] = Field(default_factory=dict)
    dialogues: dict[str, BuiltDialogueMeta] = Field(default_factory=dict)
    #: why the dataset is not a real benchmark (built with a scripted model); None for a real build
    not_a_benchmark: str | None = None


def load_metadata(root: str | Path) -> BuildMetadata | None:
    """``<root>/metadata.json`` of a built dataset, or None when there is none."""
    p = Path(root) / "metadata.json"
    return BuildMetadata.model_validate_json(p.read_text(encoding="utf-8")) if p.exists() else None


def not_a_benchmark(root: str | Path) -> str | None:
    """Why the dataset at ``root`` is not a real benchmark, from its ``metadata.json``; None when it
    has none, says nothing of the kind, or cannot be read (its readers report that themselves)."""
    try:
        meta = load_metadata(root)
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    return meta.not_a_benchmark if meta is not None else None
