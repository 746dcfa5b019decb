"""Stage 12 — export to the released layout, the metadata file and the human review queue.

Output (``--out``, default ``WS/dataset``)::

    mtqa/<task>.json                 released layout (docs/official-format.md)
    checklist/<task>_CheckList.json
    videos/<video>.<ext>             whole videos (copied or hard-linked; never symbolic links)
    metadata.json                    BuildMetadata (mtvbench.data.buildmeta): per video category, duration, scene count,
                                     clip and segment ranges; per dialogue its unit, single/cross-scene
                                     kind, segments and time ranges

Dialogue events are numbered per video over every generated dialogue in unit order, so they
do not change when an export is restricted to accepted dialogues; the files, ``event_index`` and
which dialogues are kept follow :mod:`mtvbench.data.layout` (the only module that writes the layout).

Only current work is exported: a video is exported when its ``checklists`` artifact is
complete and made from the current ``generate`` artifact, and so on down to the video file
(:meth:`Workspace.current`); any other video is listed in ``skipped_videos`` with the
reason (an incomplete, stale, edited or corrupt stage), so new dialogues never go out with
old checklists.

**What a video could not give** (``shortfalls``): the :meth:`~.records.Artifact.shortfall` of its
suitability, generation and checklist artifacts as one line per video, marked ``failed`` when
the video exports no dialogue, or a dialogue without any checklist, because replies broke the
rules (``build all`` then exits 3); a video whose units were all validly rated below the
threshold gets its line without being a failure.

**Not a real benchmark**: when any exported video was built with the scripted offline model
(:mod:`mtvbench.construct.offline_model`), ``metadata.json`` says so (``not_a_benchmark``), and so does every
dialogue record of ``mtqa/`` (:data:`mtvbench.data.layout.NOT_A_BENCHMARK_KEY`, which eval.py ignores), so a
copy without ``metadata.json`` is still marked; ``validate``, ``run`` and every score made from it repeat it.

**All or nothing**: the folder is written beside ``--out`` and swapped in when complete
(:meth:`mtvbench.data.layout.LayoutWriter.export`); an export without a dialogue (``--accepted-only`` before
anything is accepted) writes nothing (``written`` is False) and leaves the previous export as it was. The
review queue is saved either way.

**Human verification** (paper §3.2): the export writes the review queue
(:mod:`mtvbench.construct.review_queue`: one item per generated dialogue, the decisions in the
review store). Re-exporting keeps decisions for dialogues whose content has not changed.
``accepted_only=True`` exports only dialogues whose status is ``accepted``,
``drop_rejected=True`` leaves out rejected ones; a senior's revision is applied to what is
exported (the review queue keeps the generated text).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Shortfall, VideoRecord
from mtvbench.construct.offline_model import scripted_note
from mtvbench.construct.review_queue import load_queue, save_queue
from mtvbench.construct.stages.caption import Captions
from mtvbench.construct.stages.checklists import ChecklistResult
from mtvbench.construct.stages.crossscene import CrossSceneResult
from mtvbench.construct.stages.generate import GenerateResult
from mtvbench.construct.stages.merge import MergeResult
from mtvbench.construct.stages.split import SplitResult
from mtvbench.construct.stages.suitability import SuitabilityResult
from mtvbench.construct.workspace import Workspace
from mtvbench.data.buildmeta import BuildMetadata, BuiltDialogueMeta, VideoMeta
from mtvbench.data.layout import LayoutWriter, kept
from mtvbench.data.schema import TASKS
from mtvbench.review.decisions import ReviewItem, content_hash
from mtvbench.util.files import NothingWritten, VideoMode


class ExportReport(BaseModel):
    out: str
    dialogues: int = 0
    by_task: dict[str, int] = Field(default_factory=dict)
    checklists: int = 0
    videos: list[str] = Field(default_factory=list)
    skipped_videos: dict[str, str] = Field(default_factory=dict)
    #: per video, what it could not give and why (see module doc)
    shortfalls: dict[str, Shortfall] = Field(default_factory=dict)
    review: dict[str, int] = Field(default_factory=dict)
    #: set when a scripted model built what was exported (see module doc)
    not_a_benchmark: str | None = None
    #: False when nothing was written (no dialogue to export): the previous export is kept as it was
    written: bool = True


def video_shortfall(artifacts: list[Artifact]) -> Shortfall | None:
    """The shortfalls of a video's stages as one line (``failed`` when any of them is)."""
    found = [s for s in (a.shortfall() for a in artifacts) if s is not None]
    if not found:
        return None
    return Shortfall(why="; ".join(s.why for s in found), failed=any(s.failed for s in found))


def export_dataset(ws: Workspace, videos: list[VideoRecord], out: Path | None = None, *,
                   accepted_only: bool = False, video_mode: VideoMode = "copy",
                   drop_rejected: bool = False) -> ExportReport:
    out = Path(out) if out is not None else ws.root / "dataset"
    report = ExportReport(out=str(out))
    queue = load_queue(ws)
    layout = LayoutWriter()
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
        rated = ws.load(v.name, "suitability", SuitabilityResult)
        gen = ws.load(v.name, "generate", GenerateResult)
        cks = ws.load(v.name, "checklists", ChecklistResult)
        if (split is None or merge is None or cross is None or rated is None or gen is None
                or cks is None):  # pragma: no cover
            report.skipped_videos[v.name] = "an artifact changed while exporting"
            continue
        short = video_shortfall([rated, gen, cks])
        if short is not None:
            report.shortfalls[v.name] = short
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
                item.annotations, item.adjudication, item.referrals = old.annotations, old.adjudication, old.referrals
            queue.items[item_id] = item
            if not kept(item.status, accepted_only=accepted_only, drop_rejected=drop_rejected):
                continue
            rounds, ck = item.final_content()  # a senior's revision applied
            report.checklists += layout.add(d.task, v.name, item.event, rounds, ck)
            meta.dialogues[f"{d.task.value}/{v.name}/{event}"] = BuiltDialogueMeta(
                task=d.task, video=v.name, event=str(event), unit=d.unit, kind=unit.kind, segments=unit.segments,
                ranges=unit.ranges, objects=unit.objects)
            report.dialogues += 1
            report.by_task[d.task.value] = report.by_task.get(d.task.value, 0) + 1
            exported_any = True
        if exported_any:
            used_videos.append(v)
            made = (ws.load(v.name, "caption", Captions), merge, rated, gen, cks)
            models = [a.meta.settings.get("model") for a in made if a is not None and a.meta is not None]
            report.not_a_benchmark = report.not_a_benchmark or scripted_note(models)
            meta.videos[v.name] = VideoMeta(
                category=v.category, duration_s=split.duration_s, scene_count=len(merge.segments),
                clip_count=len(split.clips), clips=[(c.start_s, c.end_s) for c in split.clips],
                segments=[(s.start_s, s.end_s) for s in merge.segments])
    for v in used_videos:
        src = Path(v.path)
        layout.add_video(src, f"{v.name}{src.suffix.lower()}", video_mode)
        report.videos.append(v.name)
    meta.not_a_benchmark = layout.not_a_benchmark = report.not_a_benchmark
    layout.metadata = meta.model_dump(mode="json")
    try:
        layout.export(out, empty="no dialogue to export" + (" (none is accepted in review yet)" if accepted_only
                                                            else ""))
    except NothingWritten:
        report.written = False
        report.videos = []
    save_queue(ws, queue)
    report.review = queue.counts()
    return report
