"""Stage 8 — cross-scene retrieval: group segments that share objects or themes into units.

Every single-scene segment (at least ``min_segment_s`` long) is a unit ``S<i>``. Cross-scene
units ``X<j>`` are made from:

1. *shared objects*: for each memory-bank object seen in two or more segments, the set of
   those segments (first ``max_segments`` in time order); objects with the same segment
   set form one unit, whose ``objects`` are the shared IDs (the generator is told to centre
   the dialogue on them, paper §3.2);
2. *shared themes* (optional, ``theme_threshold``): pairs of segments whose captions have a
   text similarity at or above the threshold and are not already together in a unit.

Units are ordered by the number of shared objects, then by theme similarity, and capped at
``max_units`` per video. A unit's material is the union of its segments' time ranges and
captions (the merged cross-scene "video" is those ranges of the original file).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, VideoRecord
from mtvbench.construct.stages import Stage, StageContext
from mtvbench.construct.stages.merge import MergeResult
from mtvbench.construct.stages.objects import ObjectsResult
from mtvbench.construct.textsim import LexicalSimilarity, TextSimilarity
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import hms


class CrossSceneSettings(BaseModel):
    """The ``crossscene`` section of the build config."""

    model_config = STRICT

    min_segment_s: float = 0.0
    max_segments: int = 4
    max_units: int = 6
    theme_threshold: float | None = 0.5


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
    """The crossscene stage's artifact: the units dialogues are generated from, single-scene segments first, then
    cross-scene units."""

    units: list[Unit] = Field(default_factory=list)


def _object_line(objects: ObjectsResult, oid: str, segments: list[int] | None = None) -> str:
    e = next(x for x in objects.entries if x.id == oid)
    apps = [a for a in e.appearances if segments is None or a.segment in segments]
    times = sorted({hms(a.time_s) for a in apps})
    shown = ", ".join(times[:6]) + (" ..." if len(times) > 6 else "")
    return f"- {e.id} ({e.label}): {e.description} Seen at {shown}."


def retrieve_units(video: str, merge: MergeResult, objects: ObjectsResult | None,
                   settings: CrossSceneSettings | None = None, textsim: TextSimilarity | None = None
                   ) -> CrossSceneResult:
    """The units of ``video`` (see the module docstring): every merged segment at least ``min_segment_s`` long, then
    cross-scene units of segments that share detected objects or, with ``theme_threshold``, have similar captions,
    the strongest first and at most ``max_units``. Asks no model."""
    settings = settings or CrossSceneSettings()
    textsim = textsim or LexicalSimilarity()
    segs = {s.index: s for s in merge.segments}
    result = CrossSceneResult(video=video)
    entries = objects.entries if objects else []
    for s in merge.segments:
        if s.end_s - s.start_s + 1e-6 < settings.min_segment_s:
            continue
        present = [e.id for e in entries if s.index in e.segments]
        result.units.append(Unit(
            id=f"S{s.index}", kind="single", segments=[s.index], ranges=[(s.start_s, s.end_s)],
            captions=[s.caption], objects=present,
            object_lines=[_object_line(objects, oid, [s.index]) for oid in present] if objects else []))

    by_set: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for e in entries:
        segments = e.segments
        if len(segments) >= 2:
            by_set[tuple(segments[: settings.max_segments])].append(e.id)
    candidates: list[tuple[float, tuple[int, ...], list[str], str]] = [
        (float(len(ids)) + 1.0, key, ids, "objects") for key, ids in by_set.items()
    ]
    if settings.theme_threshold is not None:
        idx = sorted(segs)
        for a_i, a in enumerate(idx):
            for b in idx[a_i + 1 :]:
                if any(a in key and b in key for key in by_set):
                    continue
                sim = textsim.similarity(segs[a].caption, segs[b].caption)
                if sim >= settings.theme_threshold:
                    candidates.append((sim, (a, b), [], "theme"))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    for j, (_, key, ids, link) in enumerate(candidates[: settings.max_units], 1):
        members = sorted(key)
        result.units.append(Unit(
            id=f"X{j}", kind="cross", segments=members,
            ranges=[(segs[i].start_s, segs[i].end_s) for i in members],
            captions=[segs[i].caption for i in members], objects=ids,
            object_lines=[_object_line(objects, oid, members) for oid in ids] if objects else [], link=link))
    return result


async def _make(ctx: StageContext, v: VideoRecord) -> CrossSceneResult:
    c = ctx.config
    objects = ctx.artifact(v, "objects", ObjectsResult) if c.objects else None
    return retrieve_units(v.name, ctx.artifact(v, "merge", MergeResult), objects, c.section(CrossSceneSettings),
                          ctx.textsim())


STAGE = Stage(make=_make, artifact=CrossSceneResult,
              help="8. Group segments sharing objects or themes into cross-scene units.",
              upstream=("merge", "objects"), settings_model=CrossSceneSettings,
              settings=lambda ctx: {"crossscene": ctx.config.section(CrossSceneSettings).model_dump(mode="json"),
                                    "textsim": ctx.config.text_embedder or "lexical", "objects": ctx.config.objects},
              prepare=lambda ctx: ctx.textsim() if ctx.config.text_embedder else None)
