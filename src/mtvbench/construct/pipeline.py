"""The construction pipeline: stages in order, per video, resumable, fingerprinted.

``Builder.run(stages)`` runs the named stages for every registered video (stage by stage,
videos concurrently within a stage) and ``Builder.export`` writes the dataset. Each model
role has its own backend spec (default: the one ``--model``):

- ``caption``: clip captions and object-crop captions (an MLLM),
- ``merge``: same-scene judgements (an LLM; text only),
- ``score``: task scoring (an MLLM),
- ``generate``: dialogue generation (an MLLM),
- ``checklist``: checklist generation (an LLM; text only).

**What is paid for is kept.** Every model reply is committed to the workspace's call
journal as it arrives (:mod:`.journal`); a stage that runs again re-reads its stored
replies instead of asking, so a killed build asks again at most the calls in flight.

**When a stage runs for a video.** A stage's artifact records its inputs
(:class:`~.records.ArtifactMeta`): the digests of the upstream artifacts (:data:`UPSTREAM`),
the video file's fingerprint (first stages) and the stage's settings (:meth:`Builder.settings`:
the model, a digest of the prompt templates, :data:`STAGE_VERSION`, frame and rule settings).
The stage is *skipped* when its artifact is intact, complete and recorded the current
inputs; otherwise it runs, and the report says why (missing, corrupt, edited by hand,
incomplete, made from an earlier upstream artifact, settings changed, ``--force``).
A stage runs for a video only when every upstream artifact is *current*
(:meth:`Workspace.current`: complete and itself made from current inputs); otherwise it is
*blocked* for that video, with the reason. Because each artifact names the digests of
what it was made from, redoing a stage (``--force``, new settings, a corrupt or edited
artifact) makes every later stage whose input really changed run again, and export
never pairs new dialogues with old checklists.

**Outcomes** (:class:`StageReport`): ``done``, ``skipped`` (already current), ``incomplete``
(some model calls failed: listed, asked again on the next run), ``blocked`` (an upstream
stage is not usable), ``failed`` (bad input for this video: unreadable video, detector
error). Items whose replies broke the rules up to the re-ask bound are *given up*: listed,
not an incomplete stage, asked again only with ``retry_failed`` (``--retry-failed``).
A build runs what it can for every video and then reports; the CLI exits 2 when a stage
failed on bad input, 3 when anything is incomplete or blocked, 0 otherwise.

**Before anything is written** (:meth:`Builder.preflight`): the stages that have work to
do are determined from the workspace, and for them the optional dependencies are imported
(PySceneDetect/OpenCV: ``mtvbench[build]``; ultralytics: ``mtvbench[detect]``), the model
backends are created (a missing API key is one error line) and the detector is loaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from mtvbench.config import ExecutorName, RaySettings
from mtvbench.construct.caption import caption_clips
from mtvbench.construct.checklist_stage import make_checklists
from mtvbench.construct.crossscene import CrossSceneSettings, retrieve_units
from mtvbench.construct.detect import Detector, DetectorError, detect_objects, load_detector
from mtvbench.construct.export import ExportReport, export_dataset
from mtvbench.construct.generate import generate_dialogues, generation_prompt
from mtvbench.construct.journal import CallJournal
from mtvbench.construct.keyframes import KeyFrameSettings, extract_keyframes
from mtvbench.construct.llm import StageModel
from mtvbench.construct.merge import merge_clips
from mtvbench.construct.objects import BankSettings, build_objects
from mtvbench.construct.records import (
    Artifact,
    ArtifactMeta,
    Captions,
    CrossSceneResult,
    Detections,
    GenerateResult,
    KeyFrames,
    MergeResult,
    ObjectsResult,
    ScoreResult,
    SplitResult,
    Unit,
    VideoRecord,
    canonical_json,
)
from mtvbench.construct.score import score_prompt, score_units
from mtvbench.construct.split import SplitSettings, split_video
from mtvbench.construct.textsim import TextSimilarity, make_textsim
from mtvbench.construct.workspace import Inspection, Workspace, WorkspaceError

if TYPE_CHECKING:
    from mtvbench.construct.ray_executor import RayBuild
from mtvbench.data.schema import TASKS
from mtvbench.errors import InputError, MtvbenchError, require
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import FrameSettings, VideoError
from mtvbench.models.base import BackendOptions, ModelBackend, create_backend
from mtvbench.prompts.generation import (
    CLIP_CAPTION_PROMPT,
    MERGE_PROMPT,
    OBJECT_CAPTION_PROMPT,
    REASK_SUFFIX,
    render_checklist_prompt,
)

Role = Literal["caption", "merge", "score", "generate", "checklist"]
ROLES: tuple[Role, ...] = ("caption", "merge", "score", "generate", "checklist")
ALL_STAGES = ("split", "caption", "merge", "keyframes", "detect", "objects", "crossscene", "score", "generate",
              "checklists")
OBJECT_STAGES = ("keyframes", "detect", "objects")
#: the artifacts each stage is made from (crossscene reads objects only when object stages are on)
UPSTREAM: dict[str, tuple[str, ...]] = {
    "split": (), "caption": ("split",), "merge": ("split", "caption"), "keyframes": (), "detect": ("keyframes",),
    "objects": ("detect", "merge"), "crossscene": ("merge", "objects"), "score": ("crossscene",),
    "generate": ("split", "crossscene", "score"), "checklists": ("generate",),
}
#: stages that read the video file directly and record its fingerprint
FROM_VIDEO = ("split", "keyframes")
ROLE_OF: dict[str, Role] = {"caption": "caption", "merge": "merge", "objects": "caption", "score": "score",
                            "generate": "generate", "checklists": "checklist"}
#: bump a stage's number when its parsing, rules or output change: its artifacts are then redone
STAGE_VERSION: dict[str, int] = {stage: 2 for stage in ALL_STAGES}
#: optional modules a stage imports, and the extra that installs them
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "split": (("scenedetect", "build"), ("cv2", "build")),
    "keyframes": (("cv2", "build"),),
    "objects": (("cv2", "build"),),
}

Status = Literal["done", "skipped", "incomplete", "blocked", "failed"]


class BuildConfig(BaseModel):
    model: str | None = None
    models: dict[str, str] = Field(default_factory=dict)  # role -> spec, overriding ``model``
    backend: BackendOptions = Field(default_factory=BackendOptions)
    concurrency: int = 4
    split: SplitSettings = Field(default_factory=SplitSettings)
    keyframes: KeyFrameSettings = Field(default_factory=KeyFrameSettings)
    bank: BankSettings = Field(default_factory=BankSettings)
    crossscene: CrossSceneSettings = Field(default_factory=CrossSceneSettings)
    objects: bool = True  # False: skip keyframes/detect/objects (cross-scene units from themes only)
    detector: str | None = None  # None/"yolo" or "module:factory"
    detector_weights: str | None = None
    text_embedder: str | None = None
    merge_passes: int = 2
    merge_prefilter_below: float | None = None
    frame_max_side: int = 448
    caption_frames: int = 8
    score_frames: int = 16
    generate_frames: int = 32
    min_score: int = 5
    max_attempts: int = 3
    checklist_items: int = 5
    checklist_exact_split: bool = True
    retry_failed: bool = False
    #: ``ray``: per-video stages and model calls on a Ray cluster (:mod:`.ray_executor`); the
    #: workspace must then be on storage every node sees
    executor: ExecutorName = "local"
    ray_address: str | None = None
    ray: RaySettings = Field(default_factory=RaySettings)


class StageReport(BaseModel):
    stage: str
    video: str
    status: Status
    seconds: float = 0.0
    failures: int = 0  # items without a result (failed calls + given up)
    given_up: int = 0  # items whose replies broke the rules up to the re-ask bound
    asked: int = 0  # model calls sent
    replayed: int = 0  # replies read from the call journal instead
    message: str = ""
    #: one line per failed call of an incomplete stage
    problems: list[str] = Field(default_factory=list)
    artifact: str = ""


class BuildError(MtvbenchError):
    pass


#: exceptions that fail one stage for one video (bad input); anything else stops the build
PER_VIDEO_ERRORS = (BuildError, DetectorError, WorkspaceError, VideoError, InputError)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def _prompt_digest(stage: str) -> str:
    """A digest of the prompt templates a stage renders (a template change redoes the stage)."""
    probe = Unit(id="S0", kind="cross", segments=[0, 1], ranges=[(0.0, 1.0), (2.0, 3.0)], captions=["{a}", "{b}"],
                 objects=["obj001"], object_lines=["- obj001 (x): {c}"])
    if stage == "caption":
        return _digest(CLIP_CAPTION_PROMPT)
    if stage == "merge":
        return _digest(MERGE_PROMPT)
    if stage == "objects":
        return _digest(OBJECT_CAPTION_PROMPT)
    if stage == "score":
        return _digest(score_prompt(probe))
    if stage == "generate":
        return _digest(REASK_SUFFIX, *(generation_prompt(t, probe, w) for t in TASKS for w in (False, True)))
    if stage == "checklists":
        return _digest(render_checklist_prompt("{q}", "{a}", 5))
    return ""


@dataclass
class _Decision:
    meta: ArtifactMeta | None = None  # the inputs the artifact will record
    blocked: str | None = None  # an upstream stage is not usable
    run: bool = True
    reason: str = ""
    found: Inspection | None = None  # the existing artifact


class Builder:
    def __init__(self, ws: Workspace, config: BuildConfig, *, backends: dict[str, ModelBackend] | None = None,
                 detector: Detector | None = None, on_report: Callable[[StageReport], None] | None = None):
        self.ws = ws
        self.config = config
        self._given = dict(backends or {})
        self._backends: dict[str, ModelBackend] = {}
        self._models: dict[str, StageModel] = {}
        self._detector = detector
        self._textsim: TextSimilarity | None = None
        self._journal: CallJournal | None = None
        self.reports: list[StageReport] = []
        self.on_report = on_report
        self._cluster: RayBuild | None = None

    def cluster(self) -> RayBuild | None:
        """The Ray cluster of ``executor: ray`` (joined on first use); None for a local build."""
        if self.config.executor != "ray":
            return None
        if self._cluster is None:
            from mtvbench.construct.ray_executor import RayBuild

            self._cluster = RayBuild(self.config.ray_address, self.config.ray, self.config.concurrency)
        return self._cluster

    async def _offload(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A per-video stage off the event loop: a thread here, or a Ray task."""
        cluster = self.cluster()
        return await (cluster.run(fn, *args) if cluster is not None else asyncio.to_thread(fn, *args))

    # ------------------------------------------------------------ resources
    @property
    def journal(self) -> CallJournal:
        if self._journal is None:
            self._journal = CallJournal(self.ws.root)
        return self._journal

    def model_spec(self, role: Role) -> str | None:
        """The model of ``role``, or None when none was given."""
        if role in self._given:
            return self._given[role].name
        return self.config.models.get(role) or self.config.model or None

    def model_name(self, role: Role) -> str:
        spec = self.model_spec(role)
        if not spec:
            raise BuildError(f"no model for the '{role}' stage: pass --model SPEC (e.g. openai:gpt-4o)")
        return spec

    def backend(self, role: Role) -> ModelBackend:
        if role in self._given:
            return self._given[role]
        spec = self.model_name(role)
        if spec not in self._backends:
            cluster = self.cluster()
            self._backends[spec] = (create_backend if cluster is None else cluster.backend)(spec, self.config.backend)
        return self._backends[spec]

    def model(self, role: Role) -> StageModel:
        if role not in self._models:
            self._models[role] = StageModel(self.backend(role), concurrency=self.config.concurrency,
                                            journal=self.journal)
        return self._models[role]

    def detector(self) -> Detector:
        if self._detector is None:
            self._detector = load_detector(self.config.detector, self.config.detector_weights)
        return self._detector

    def detector_name(self) -> str | None:
        """The detector, or None when neither ``detector`` nor ``detector_weights`` was given."""
        if self._detector is not None:
            return self._detector.name
        c = self.config
        if c.detector in (None, "") and c.detector_weights is None:
            return None
        if c.detector in (None, "", "yolo"):
            return f"yolo:{c.detector_weights or 'yolo11n.pt'}"
        return c.detector

    def textsim(self) -> TextSimilarity:
        if self._textsim is None:
            self._textsim = make_textsim(self.config.text_embedder)
        return self._textsim

    def frames(self, n: int) -> FrameSettings:
        return FrameSettings(num_frames=n, max_side=self.config.frame_max_side)

    async def aclose(self) -> None:
        for b in self._backends.values():
            await b.aclose()
        if self._cluster is not None:
            await self._cluster.aclose()
        if self._journal is not None:
            self._journal.close()

    # ------------------------------------------------------------ what a stage is made from
    def upstream(self, stage: str) -> tuple[str, ...]:
        if stage == "crossscene" and not self.config.objects:
            return ("merge",)
        return UPSTREAM[stage]

    def settings(self, stage: str, recorded: dict[str, Any] | None = None) -> dict[str, Any]:
        """Everything besides the upstream artifacts that decides a stage's result (see module doc).

        A model or detector that was not given is the ``recorded`` one (what built the artifact), so a
        rerun without ``--model`` keeps finished work; with nothing recorded the detector is YOLO11."""
        c = self.config
        s: dict[str, Any] = {"version": STAGE_VERSION[stage]}
        role = ROLE_OF.get(stage)
        if role is not None:
            s.update(model=self.model_spec(role), prompt=_prompt_digest(stage), max_attempts=c.max_attempts)
        textsim = c.text_embedder or "lexical"
        per_stage: dict[str, dict[str, Any]] = {
            "split": {"split": c.split.model_dump(mode="json")},
            "caption": {"frames": self.frames(c.caption_frames).key()},
            "merge": {"passes": c.merge_passes, "prefilter_below": c.merge_prefilter_below,
                      "textsim": textsim if c.merge_prefilter_below is not None else None},
            "keyframes": {"keyframes": c.keyframes.model_dump(mode="json")},
            "detect": {"detector": self.detector_name()},
            "objects": {"bank": c.bank.model_dump(mode="json"), "textsim": textsim},
            "crossscene": {"crossscene": c.crossscene.model_dump(mode="json"), "textsim": textsim,
                           "objects": c.objects},
            "score": {"frames": self.frames(c.score_frames).key(), "min_score": c.min_score},
            "generate": {"frames": self.frames(c.generate_frames).key()},
            "checklists": {"items": c.checklist_items, "exact_split": c.checklist_exact_split},
        }
        s.update(per_stage[stage])
        for key in ("model", "detector"):
            if key in s and s[key] is None:
                s[key] = (recorded or {}).get(key)
        if stage == "detect" and s["detector"] is None:
            s["detector"] = f"yolo:{c.detector_weights or 'yolo11n.pt'}"
        return json.loads(canonical_json(s))

    def _decide(self, stage: str, v: VideoRecord, force: bool) -> _Decision:
        upstream: dict[str, str] = {}
        for u in self.upstream(stage):
            cur = self.ws.current(v, u)
            if not cur.ok:
                return _Decision(blocked=f"needs '{u}': {cur.problem}", run=False)
            upstream[u] = cur.meta.digest
        if stage in FROM_VIDEO:
            upstream["video"] = fingerprint(Path(v.path))
        found = self.ws.inspect(v.name, stage)
        recorded = found.meta.settings if found.ok else None
        meta = ArtifactMeta(stage=stage, upstream=upstream, settings=self.settings(stage, recorded))
        if force:
            return _Decision(meta=meta, reason="forced", found=found)
        if not found.ok:
            return _Decision(meta=meta, reason="" if found.kind == "missing" else f"redone: {found.problem}",
                             found=found)
        old = found.meta
        art = found.artifact
        assert art is not None
        if old.upstream != upstream:
            changed = sorted(k for k in set(old.upstream) | set(upstream) if old.upstream.get(k) != upstream.get(k))
            return _Decision(meta=meta, reason="redone: made from an earlier " + ", ".join(changed), found=found)
        if old.settings != meta.settings:
            changed = sorted(k for k in set(old.settings) | set(meta.settings)
                             if old.settings.get(k) != meta.settings.get(k))
            return _Decision(meta=meta, reason="redone: settings changed (" + ", ".join(changed) + ")", found=found)
        if not art.complete:
            return _Decision(meta=meta, reason="resumed: asking what is missing", found=found)
        if self.config.retry_failed and any(f.kind == "rejected" for f in getattr(art, "failures", [])):
            return _Decision(meta=meta, reason="asking the given-up items again", found=found)
        return _Decision(meta=meta, run=False, found=found)

    def pending(self, stages: list[str], videos: list[VideoRecord], force: bool = False) -> set[str]:
        """The stages (of ``stages``) that will have work for some video (an over-estimate, never less)."""
        stages = self._active(stages)
        if force:
            return set(stages)
        out: set[str] = set()
        for v in videos:
            redo: set[str] = set()
            for s in stages:
                if any(u in redo for u in self.upstream(s)):
                    redo.add(s)
                    continue
                try:
                    d = self._decide(s, v, False)
                except (VideoError, WorkspaceError):
                    redo.add(s)  # it fails when it runs, with the message
                    continue
                if d.run:
                    redo.add(s)
            out |= redo
        return out

    def preflight(self, stages: list[str], videos: list[VideoRecord], force: bool = False) -> set[str]:
        """Check, before anything is written, what the stages with work need (see module doc)."""
        pending = self.pending(stages, videos, force)
        self.cluster()  # --executor ray without the extra is found here
        for s in self._active(stages):
            if s not in pending:
                continue
            for module, extra in NEEDS.get(s, ()):
                require(module, extra, f"the {s} stage")
            if s == "detect":
                if self._detector is None and self.config.detector in (None, "", "yolo"):
                    require("ultralytics", "detect", "the detect stage (YOLO11)")
                if self.cluster() is None:  # with Ray the detector is loaded on the cluster
                    self.detector()
            if s in ROLE_OF:
                self.model(ROLE_OF[s])
            if s in ("merge", "objects", "crossscene") and self.config.text_embedder:
                self.textsim()
        return pending

    def _active(self, stages: list[str]) -> list[str]:
        return [s for s in stages if self.config.objects or s not in OBJECT_STAGES]

    # ------------------------------------------------------------ one stage, one video
    async def _make(self, stage: str, v: VideoRecord) -> Artifact:
        ws, c, name, path = self.ws, self.config, v.name, Path(v.path)

        def art(s: str, kind: type[Any]) -> Any:
            got = ws.load(name, s, kind)
            assert got is not None  # _decide checked that it is current
            return got

        if stage == "split":
            return await self._offload(split_video, name, path, c.split)
        if stage == "caption":
            return await caption_clips(name, path, art("split", SplitResult), self.model("caption"),
                                       c.caption_frames, self.frames(c.caption_frames), c.max_attempts)
        if stage == "merge":
            return await merge_clips(name, art("split", SplitResult), art("caption", Captions), self.model("merge"),
                                     c.merge_passes, c.merge_prefilter_below,
                                     self.textsim() if c.merge_prefilter_below is not None else None, c.max_attempts)
        if stage == "keyframes":
            return await self._offload(extract_keyframes, name, path, ws.video_dir(name) / "keyframes", c.keyframes)
        if stage == "detect":
            cluster = self.cluster()
            if cluster is not None and self._detector is None:
                return await cluster.detect(c.detector, c.detector_weights, name, ws.video_dir(name),
                                            art("keyframes", KeyFrames))
            det = self.detector()
            return await asyncio.to_thread(detect_objects, name, ws.video_dir(name), art("keyframes", KeyFrames), det)
        if stage == "objects":
            return await build_objects(name, ws.video_dir(name), art("detect", Detections), art("merge", MergeResult),
                                       self.model("caption"), c.bank, self.textsim(), c.max_attempts)
        if stage == "crossscene":
            objects = art("objects", ObjectsResult) if c.objects else None
            return retrieve_units(name, art("merge", MergeResult), objects, c.crossscene, self.textsim())
        if stage == "score":
            return await score_units(name, path, art("crossscene", CrossSceneResult).units, self.model("score"),
                                     c.min_score, c.score_frames, c.max_attempts, self.frames(c.score_frames))
        if stage == "generate":
            split = art("split", SplitResult)
            return await generate_dialogues(name, path, art("crossscene", CrossSceneResult).units,
                                            art("score", ScoreResult), self.model("generate"), split.duration_s,
                                            c.generate_frames, c.max_attempts, self.frames(c.generate_frames))
        if stage == "checklists":
            return await make_checklists(name, art("generate", GenerateResult), self.model("checklist"),
                                         c.checklist_items, c.max_attempts, c.checklist_exact_split)
        raise BuildError(f"unknown stage {stage}")  # pragma: no cover

    async def _stage(self, stage: str, v: VideoRecord, force: bool) -> StageReport:
        d = self._decide(stage, v, force)
        if d.blocked:
            return StageReport(stage=stage, video=v.name, status="blocked", message=d.blocked)
        if not d.run:
            return StageReport(stage=stage, video=v.name, status="skipped", message="already done")
        if stage in ROLE_OF:
            previous = d.found.artifact if d.found is not None else None
            if force:
                self.journal.supersede(v.name, stage)
            elif self.config.retry_failed and previous is not None:
                gave_up = [f.item for f in getattr(previous, "failures", []) if f.kind == "rejected"]
                if gave_up:
                    self.journal.supersede(v.name, stage, gave_up)
        t0 = time.perf_counter()
        artifact = await self._make(stage, v)
        assert d.meta is not None
        path = self.ws.save(v.name, stage, artifact, d.meta)
        failures = list(getattr(artifact, "failures", []) or [])
        errors = [f for f in failures if f.kind == "error"]
        report = StageReport(stage=stage, video=v.name, status="done" if artifact.complete else "incomplete",
                             seconds=time.perf_counter() - t0, failures=len(failures),
                             given_up=len(failures) - len(errors), message=d.reason, artifact=str(path),
                             problems=[f"{f.item}: {'; '.join(f.problems)}" for f in errors])
        if not artifact.complete and not errors:
            report.problems = [f"{f.item}: {'; '.join(f.problems)}" for f in failures]
        if stage in ROLE_OF:
            m = self.model(ROLE_OF[stage])
            report.asked, report.replayed = m.asked[(v.name, stage)], m.replayed[(v.name, stage)]
        return report

    async def run_stage(self, stage: str, videos: list[VideoRecord], force: bool = False) -> list[StageReport]:
        async def guarded(v: VideoRecord) -> StageReport:
            try:
                return await self._stage(stage, v, force)
            except PER_VIDEO_ERRORS as e:
                return StageReport(stage=stage, video=v.name, status="failed", message=str(e))

        results = await asyncio.gather(*(guarded(v) for v in videos), return_exceptions=True)
        reports = [r for r in results if isinstance(r, StageReport)]
        for r in reports:
            self.reports.append(r)
            if self.on_report:
                self.on_report(r)
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return reports

    async def run(self, stages: list[str], videos: list[VideoRecord], force: bool = False) -> list[StageReport]:
        for stage in self._active(stages):
            await self.run_stage(stage, videos, force)
        return self.reports

    def export(self, videos: list[VideoRecord], out: Path | None = None, accepted_only: bool = False,
               video_mode: Literal["copy", "link", "symlink"] = "copy") -> ExportReport:
        return export_dataset(self.ws, videos, out, accepted_only=accepted_only, video_mode=video_mode)


async def build_all(ws: Workspace, videos: list[VideoRecord], config: BuildConfig, *,
                    backends: dict[str, ModelBackend] | None = None, detector: Detector | None = None,
                    out: Path | None = None, accepted_only: bool = False,
                    on_report: Callable[[StageReport], None] | None = None) -> tuple[list[StageReport], ExportReport]:
    """Every stage for ``videos``, then export."""
    b = Builder(ws, config, backends=backends, detector=detector, on_report=on_report)
    try:
        b.preflight(list(ALL_STAGES), videos)
        with ws.lock():
            reports = await b.run(list(ALL_STAGES), videos)
            return reports, b.export(videos, out, accepted_only)
    finally:
        await b.aclose()
