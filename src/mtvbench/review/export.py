"""``mtvbench review export``: the reviewed dataset in the released layout, plus its audit trail.

What is written (``--out DIR``)::

    mtqa/<task>.json, checklist/<task>_CheckList.json   every kept dialogue, the final revision applied
    videos/<video>.<ext>                                 the videos of kept dialogues (hard links by default)
    metadata.json                                        the kept dialogues' entries (when the source has one)
    review.json                                          the audit trail (see :class:`Audit`): every decision
                                                         with its criteria and checklist marks, the decisions
                                                         handed to the senior, before/after of each change

Kept: every dialogue that is not rejected; with ``accepted_only`` only the accepted ones
(both annotators accepted, or the senior accepted or revised): :func:`mtvbench.data.layout.kept`, and
the files are written by the layout's writer. A build workspace is
exported by its source (:meth:`ReviewSource.write_export`: the build export, the same files as
``mtvbench build export`` with the review applied); a dataset folder is rewritten from its own
files (:func:`write_dataset`). The export is assembled in a hidden folder beside ``DIR`` and moved into
place at the end (:class:`mtvbench.util.files.FolderSwap`), so a failed export leaves nothing half-written
and the previous export as it was; an export without any kept dialogue is a failure too
(:class:`~mtvbench.util.files.NothingWritten`). ``DIR`` must be empty, new, or an earlier review export
(it is replaced).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.data.buildmeta import load_metadata
from mtvbench.data.layout import LayoutWriter, kept, videos_dir
from mtvbench.data.schema import Task
from mtvbench.errors import OutputError
from mtvbench.review.decisions import CRITERIA, Annotation, Referral, ReviewItem
from mtvbench.review.source import ReviewSource, VideoMode
from mtvbench.review.store import HistoryEvent, ReviewStore, now_iso
from mtvbench.util.files import FolderSwap, NothingWritten, atomic_write_json

AUDIT_NAME = "review.json"


class Change(BaseModel):
    """One field of the final revision: where it is, and its text before and after."""

    round: int
    field: str
    item: str | None = None
    before: str | None
    after: str


class AuditItem(BaseModel):
    """One dialogue in ``review.json``: its ids, status, whether it was exported, every decision on it and the
    changes of its final revision."""

    id: str
    #: the dialogue's id in the exported layout (task/video/event)
    dialogue_id: str
    task: Task
    video: str
    event: str
    content_hash: str
    status: str
    exported: bool
    reviews: list[Annotation]
    adjudication: Annotation | None
    #: decisions handed to the senior (a change after both decided; a decision on a dialogue two others had decided)
    referrals: list[Referral] = Field(default_factory=list)
    #: the final revision: every field that differs from the dialogue as it was reviewed
    changes: list[Change]


class Audit(BaseModel):
    """``review.json``: who decided what and when, and what changed (before/after)."""

    format: Literal["mtvbench-review-audit"] = "mtvbench-review-audit"
    #: 2: criteria, checklist marks and referrals recorded (None in a decision: not recorded)
    version: int = 2
    #: the criteria the decisions record (key -> what it checks)
    criteria: dict[str, str] = Field(default_factory=lambda: dict(CRITERIA))
    source: str
    source_kind: str
    exported_at: str
    accepted_only: bool
    #: every dialogue has a final decision (none pending or waiting for the senior)
    complete: bool
    counts: dict[str, int]
    exported: int
    items: list[AuditItem]
    #: every decision ever recorded, in order, including replaced ones and those made on
    #: earlier content of a dialogue (``content_hash`` differs from the item's)
    history: list[HistoryEvent]


class ReviewExport(BaseModel):
    """What ``review export`` wrote: the folder, how many dialogues were exported and revised, the count per status,
    and how many videos."""

    out: str
    exported: int = 0
    revised: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    videos: int = 0


def write_dataset(source: ReviewSource, items: list[ReviewItem], out: Path, accepted_only: bool,
                   video_mode: VideoMode) -> int:
    """The released layout of the kept items of a dataset source into the folder ``out`` (the review export's
    stage); returns the number of videos. The source's mark of data that is not a benchmark is kept."""
    mark = source.not_a_benchmark
    layout = LayoutWriter(not_a_benchmark=mark.reason if mark is not None else None)
    used: set[str] = set()
    kept_ids: set[str] = set()
    for it in items:
        if not kept(it.status, accepted_only=accepted_only, drop_rejected=True):
            continue
        rounds, ck = it.final_content()
        layout.add(it.task, it.video, it.event, rounds, ck)
        used.add(it.video)
        kept_ids.add(f"{it.task.value}/{it.video}/{it.event}")
    videos = source.videos()
    vroot = videos_dir(source.root).resolve()
    for name in sorted(used):
        src = videos[name]
        layout.add_video(src, src.relative_to(vroot), video_mode)
    meta = load_metadata(source.root)
    if meta is not None:
        meta.dialogues = {k: v for k, v in meta.dialogues.items() if k in kept_ids}
        meta.videos = {k: v for k, v in meta.videos.items() if k in used}
        layout.metadata = meta.model_dump(mode="json")
    layout.write(out)
    return len(used)


def _check_out(out: Path, source: ReviewSource) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder")
    src = source.root.resolve()
    res = out.resolve()
    if res == src or src.is_relative_to(res) or (source.kind == "dataset" and res.is_relative_to(src)):
        raise OutputError(f"{out}: the export would overwrite the data under review ({src}); choose another folder")
    if out.is_dir() and any(out.iterdir()) and not (out / AUDIT_NAME).is_file():
        raise OutputError(f"{out}: folder is not empty and is not an earlier review export",
                          hint="choose a new or empty folder")


def _changes(it: ReviewItem) -> list[Change]:
    return [Change(round=e.round, field=e.field, item=e.item, before=e.before, after=e.value) for e in it.final_edits]


def export_review(source: ReviewSource, store: ReviewStore, out: Path | str, *, accepted_only: bool = False,
                  video_mode: VideoMode = "link") -> ReviewExport:
    """Write the reviewed dataset and ``review.json`` to ``out`` (see the module docstring)."""
    out = Path(out).expanduser()
    _check_out(out, source)
    items = source.load()
    store.sync(items)
    with FolderSwap(out) as stage:
        items, n_videos = source.write_export(stage, items, store, accepted_only, video_mode)
        counts: dict[str, int] = {}
        audit_items = []
        for it in items:
            counts[it.status] = counts.get(it.status, 0) + 1
            audit_items.append(AuditItem(
                id=it.id, dialogue_id=f"{it.task.value}/{it.video}/{it.event}", task=it.task, video=it.video,
                event=it.event, content_hash=it.content_hash, status=it.status,
                exported=kept(it.status, accepted_only=accepted_only, drop_rejected=True), reviews=it.annotations,
                adjudication=it.adjudication, referrals=it.referrals, changes=_changes(it)))
        audit = Audit(source=str(source.root), source_kind=source.kind, exported_at=now_iso(),
                      accepted_only=accepted_only, counts=counts,
                      complete=not (counts.get("pending", 0) or counts.get("needs_adjudication", 0)),
                      exported=sum(a.exported for a in audit_items), items=audit_items, history=store.history())
        if not audit.exported:
            raise NothingWritten(
                f"{out}: no dialogue to export" + (" (--accepted-only: none is accepted yet)" if accepted_only
                                                   else " (every dialogue is rejected)")
                + ("; the previous export there is kept as it was" if out.exists() else "; nothing was written"))
        atomic_write_json(stage / AUDIT_NAME, audit.model_dump(mode="json"))
    return ReviewExport(out=str(out), exported=audit.exported, counts=counts, videos=n_videos,
                        revised=sum(bool(a.changes) and a.exported for a in audit_items))
