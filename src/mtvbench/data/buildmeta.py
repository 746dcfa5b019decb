"""``metadata.json`` of a dataset made by ``mtvbench build``: what the released JSON lacks.

Per video its category, duration, scene count, clip and segment ranges; per dialogue (keyed by
``task/video/event``, :attr:`mtvbench.data.schema.Dialogue.id`) its construction unit,
single/cross-scene kind, segments, time ranges and objects. Written by the build export
(:mod:`mtvbench.construct.export`), read by the report's breakdowns
(:mod:`mtvbench.analysis.metadata`) and the review app (:mod:`mtvbench.review.source`).

``not_a_benchmark`` is set when the dataset was built with a scripted model (``mtvbench build
-m offline``): its dialogues and checklists only exercise the tools. The build also writes the reason into
every dialogue record (:data:`mtvbench.data.layout.NOT_A_BENCHMARK_KEY`), so a copy without this file is
still recognised; :func:`dataset_mark` reads either, the loader carries it in
:attr:`mtvbench.data.schema.Benchmark.not_a_benchmark`, and every number made from the data shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.data.layout import METADATA_FILE, NOT_A_BENCHMARK_KEY, mtqa_path
from mtvbench.data.schema import TASKS, NotABenchmark, Task
from mtvbench.util.jsonio import load_json_file


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


def record_mark(record: object) -> str | None:
    """The reason a dialogue record of ``mtqa/<task>.json`` carries (:data:`NOT_A_BENCHMARK_KEY`), else None."""
    value = record.get(NOT_A_BENCHMARK_KEY) if isinstance(record, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def mark_of(root: str | Path, in_records: tuple[str, str] | None) -> NotABenchmark | None:
    """The dataset's mark: ``metadata.json``'s, else the mark found in the dialogue records (the reason and the
    task file it was found in, as the loader saw it)."""
    if (why := not_a_benchmark(root)) is not None:
        return NotABenchmark(reason=why, found_in=METADATA_FILE)
    if in_records is not None:
        return NotABenchmark(reason=in_records[0], found_in=in_records[1])
    return None


def dataset_mark(root: str | Path) -> NotABenchmark | None:
    """The mark of the dataset at ``root`` without loading it (``metadata.json``, else the first dialogue
    record that carries one); None for a real benchmark or files that cannot be read."""
    root = Path(root)
    if (why := not_a_benchmark(root)) is not None:
        return NotABenchmark(reason=why, found_in=METADATA_FILE)
    for task in TASKS:
        path = mtqa_path(root, task)
        try:
            data = load_json_file(path, "data file") if path.is_file() else None
        except (OSError, ValueError):  # the loader reports a broken file
            continue
        for records in (data.values() if isinstance(data, dict) else []):
            for rec in records if isinstance(records, list) else []:
                if (why := record_mark(rec)) is not None:
                    return NotABenchmark(reason=why, found_in=str(path.relative_to(root)))
    return None
