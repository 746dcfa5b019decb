"""Stage 12 — export to the released layout, the metadata file and the human review queue.

Output (``--out``, default ``WS/dataset``)::

    mtqa/<task>.json                 released layout (docs/official-format.md)
    checklist/<task>_CheckList.json
    videos/<video>.<ext>             whole videos (copied, hard-linked or symlinked)
    metadata.json                    BuildMetadata: per video category, duration, scene count,
                                     clip and segment ranges; per dialogue its unit, single/cross-scene
                                     kind, segments and time ranges

Dialogue ``event_index`` values are integers numbered per video over every generated
dialogue in unit order, so they do not change when an export is restricted to accepted
dialogues.

Only current work is exported: a video is exported when its ``checklists`` artifact is
complete and made from the current ``generate`` artifact, and so on down to the video file
(:meth:`Workspace.current`); any other video is listed in ``skipped_videos`` with the
reason (an incomplete, stale, edited or corrupt stage), so new dialogues never go out with
old checklists.

**Human verification** (paper §3.2): ``WS/review_queue.json`` holds one item per generated
dialogue (its rounds and checklists and a content hash); the decisions are in the review store
``WS/review.sqlite`` (:mod:`mtvbench.review`), shared by ``mtvbench review serve`` (the web
app) and :func:`record_review` / :func:`adjudicate` (``mtvbench build review``). Each dialogue
is reviewed by two annotators; when they agree that is the outcome, when they disagree (or
both revised) a senior annotator decides. Re-exporting keeps decisions for dialogues whose
content has not changed. ``accepted_only=True`` exports only dialogues whose status is
``accepted``, ``drop_rejected=True`` leaves out rejected ones; a senior's revision is applied
to what is exported (the review queue keeps the generated text).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.checklists.generator import entry_from_items
from mtvbench.construct.records import (
    ChecklistResult,
    CrossSceneResult,
    GenerateResult,
    MergeResult,
    SplitResult,
    VideoRecord,
)
from mtvbench.construct.workspace import Workspace
from mtvbench.data.schema import TASKS, Task
from mtvbench.errors import OutputError
from mtvbench.review.model import (  # noqa: F401 - the review records, re-exported for callers of this module
    Annotation,
    Decision,
    ReviewError,
    ReviewItem,
    ReviewQueue,
    Status,
    UnknownItemError,
    content_hash,
)
from mtvbench.review.source import QUEUE_NAME, read_queue_file
from mtvbench.review.store import STORE_NAME, ReviewStore
from mtvbench.util.files import atomic_copy_file, atomic_write_json, describe_os_error, ensure_dir

# ------------------------------------------------------------------ metadata


class VideoMeta(BaseModel):
    category: str
    duration_s: float
    scene_count: int
    clip_count: int
    clips: list[tuple[float, float]]
    segments: list[tuple[float, float]]


class DialogueMeta(BaseModel):
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
    dialogues: dict[str, DialogueMeta] = Field(default_factory=dict)


# ------------------------------------------------------------------ review queue
# The queue file holds the dialogues to review (content and content hash); the decisions live
# in the review store ``WS/review.sqlite`` (mtvbench.review.store), which `mtvbench review serve`
# and the `build review` commands share.


def queue_path(ws: Workspace) -> Path:
    return ws.root / QUEUE_NAME


def store_path(ws: Workspace) -> Path:
    return ws.root / STORE_NAME


def load_queue(ws: Workspace) -> ReviewQueue:
    """The review queue with every item's current decisions (from the review store)."""
    p = queue_path(ws)
    if not p.exists():
        return ReviewQueue()
    q = read_queue_file(p)
    legacy = any(it.annotations or it.adjudication for it in q.items.values())
    if legacy:  # decisions kept in the queue file by earlier versions: moved into the store once
        ReviewStore(store_path(ws)).sync(list(q.items.values()))
    if legacy or store_path(ws).exists():
        states = ReviewStore(store_path(ws)).states({i: it.content_hash for i, it in q.items.items()})
        for i, it in q.items.items():
            it.annotations, it.adjudication = states[i].reviews, states[i].adjudication
    return q


def save_queue(ws: Workspace, q: ReviewQueue) -> None:
    """Write the queue's items (content only: decisions are in the review store)."""
    atomic_write_json(queue_path(ws), q.model_dump(mode="json", exclude={"items": {"__all__": {
        "annotations", "adjudication"}}}))


def _decide(ws: Workspace, item_id: str, who: str, decision: str, note: str, senior: bool) -> Status:
    q = read_queue_file(queue_path(ws)) if queue_path(ws).exists() else ReviewQueue()
    it = q.items.get(item_id)
    if it is None:
        raise UnknownItemError(f"no dialogue {item_id!r} in the review queue of {ws.root}",
                               hint="`mtvbench build review status -w WS` lists the ids")
    store = ReviewStore(store_path(ws))
    store.sync(list(q.items.values()))
    act = store.adjudicate if senior else store.record
    return act(it, who, decision, [], note).status


def record_review(ws: Workspace, item_id: str, annotator: str, decision: Decision, note: str = "") -> Status:
    """One annotator's decision (an annotator's later decision replaces their earlier one)."""
    return _decide(ws, item_id, annotator, decision, note, senior=False)


def adjudicate(ws: Workspace, item_id: str, senior: str, decision: Decision, note: str = "") -> Status:
    """The senior annotator's final decision on a dialogue the two annotators disagree on."""
    return _decide(ws, item_id, senior, decision, note, senior=True)


# ------------------------------------------------------------------ export


class ExportReport(BaseModel):
    out: str
    dialogues: int = 0
    by_task: dict[str, int] = Field(default_factory=dict)
    checklists: int = 0
    videos: list[str] = Field(default_factory=list)
    skipped_videos: dict[str, str] = Field(default_factory=dict)
    review: dict[str, int] = Field(default_factory=dict)


def _place_video(src: Path, dst: Path, mode: str) -> None:
    if dst.exists() or dst.is_symlink():
        if dst.resolve() == src.resolve() or (dst.stat().st_size == src.stat().st_size and mode == "copy"):
            return
        dst.unlink()
    ensure_dir(dst.parent)
    try:
        if mode == "symlink":
            dst.symlink_to(src.resolve())
            return
        if mode == "link":
            try:
                os.link(src, dst)
                return
            except OSError:
                pass
    except OSError as e:
        raise OutputError(describe_os_error(dst, e)) from e
    atomic_copy_file(src, dst)


def export_dataset(ws: Workspace, videos: list[VideoRecord], out: Path | None = None, *,
                   accepted_only: bool = False, video_mode: Literal["copy", "link", "symlink"] = "copy",
                   drop_rejected: bool = False) -> ExportReport:
    out = Path(out) if out is not None else ws.root / "dataset"
    report = ExportReport(out=str(out))
    queue = load_queue(ws)
    mtqa: dict[Task, dict[str, list[dict]]] = {t: {} for t in TASKS}
    checklists: dict[Task, dict[str, dict[str, list[dict]]]] = {t: {} for t in TASKS}
    meta = BuildMetadata()
    used_videos: list[VideoRecord] = []
    for v in videos:
        ready = ws.current(v, "checklists")  # complete, and made from current upstream artifacts all the way down
        if not ready.ok:
            report.skipped_videos[v.name] = ready.problem or "not built"
            continue
        split = ws.load(v.name, "split", SplitResult)
        merge = ws.load(v.name, "merge", MergeResult)
        cross = ws.load(v.name, "crossscene", CrossSceneResult)
        gen = ws.load(v.name, "generate", GenerateResult)
        cks = ws.load(v.name, "checklists", ChecklistResult)
        if split is None or merge is None or cross is None or gen is None or cks is None:  # pragma: no cover
            report.skipped_videos[v.name] = "an artifact changed while exporting"
            continue
        units = {u.id: u for u in cross.units}
        order = {u.id: i for i, u in enumerate(cross.units)}
        keys = sorted(gen.dialogues, key=lambda k: (order.get(gen.dialogues[k].unit, 1 << 30),
                                                     TASKS.index(gen.dialogues[k].task)))
        exported_any = False
        for event, key in enumerate(keys):
            d = gen.dialogues[key]
            unit = units.get(d.unit)
            if unit is None:
                continue
            rounds = [{"User": r.user, "Assistant": r.assistant, "Ability": r.ability} for r in d.rounds]
            ck = cks.checklists.get(key, {})
            item_id = f"{v.name}/{d.unit}/{d.task.value}"
            h = content_hash(rounds, ck)
            old = queue.items.get(item_id)
            item = ReviewItem(id=item_id, task=d.task, video=v.name, event=str(event), unit=d.unit, kind=unit.kind,
                              ranges=unit.ranges, rounds=[dict(r) for r in rounds], checklists=ck, content_hash=h)
            if old is not None and old.content_hash == h:
                item.annotations, item.adjudication = old.annotations, old.adjudication
            queue.items[item_id] = item
            if (accepted_only and item.status != "accepted") or (drop_rejected and item.status == "rejected"):
                continue
            rounds, ck = item.final_content()  # a senior's revision applied
            mtqa[d.task].setdefault(v.name, []).append(
                {"event_index": event, "mtqa": {f"Round {r.index}": rd for r, rd in zip(d.rounds, rounds)}})
            entries = [entry_from_items(k, items) for k, items in sorted(ck.items())]
            if entries:
                checklists[d.task].setdefault(v.name, {})[str(event)] = entries
                report.checklists += len(entries)
            meta.dialogues[f"{d.task.value}/{v.name}/{event}"] = DialogueMeta(
                task=d.task, video=v.name, event=str(event), unit=d.unit, kind=unit.kind, segments=unit.segments,
                ranges=unit.ranges, objects=unit.objects)
            report.dialogues += 1
            report.by_task[d.task.value] = report.by_task.get(d.task.value, 0) + 1
            exported_any = True
        if exported_any:
            used_videos.append(v)
            meta.videos[v.name] = VideoMeta(
                category=v.category, duration_s=split.duration_s, scene_count=len(merge.segments),
                clip_count=len(split.clips), clips=[(c.start_s, c.end_s) for c in split.clips],
                segments=[(s.start_s, s.end_s) for s in merge.segments])
    for t in TASKS:
        atomic_write_json(out / "mtqa" / f"{t.official_stem}.json", mtqa[t])
        atomic_write_json(out / "checklist" / f"{t.official_stem}_CheckList.json", checklists[t])
    for v in used_videos:
        src = Path(v.path)
        _place_video(src, out / "videos" / f"{v.name}{src.suffix.lower()}", video_mode)
        report.videos.append(v.name)
    atomic_write_json(out / "metadata.json", meta.model_dump(mode="json"))
    save_queue(ws, queue)
    report.review = queue.counts()
    return report


def load_metadata(root: str | Path) -> BuildMetadata | None:
    """``<root>/metadata.json`` of a built dataset, or None when there is none."""
    p = Path(root) / "metadata.json"
    return BuildMetadata.model_validate_json(p.read_text(encoding="utf-8")) if p.exists() else None
