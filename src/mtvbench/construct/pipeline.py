"""The construction pipeline: stages in order, per video, resumable through the workspace.

``Builder.run(stages)`` runs the named stages for every registered video (stage by stage,
videos concurrently within an LLM stage) and then ``export`` when asked. A stage whose
artifact is complete is skipped (``force`` redoes the named stages; downstream artifacts
are not invalidated automatically — re-run them with ``force`` too). Each model role has
its own backend spec (default: the one ``--model``):

- ``caption``: clip captions and object-crop captions (an MLLM),
- ``merge``: same-scene judgements (an LLM; text only),
- ``score``: task scoring (an MLLM),
- ``generate``: dialogue generation (an MLLM),
- ``checklist``: checklist generation (an LLM; text only).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mtvbench.construct.caption import caption_clips
from mtvbench.construct.checklist_stage import make_checklists
from mtvbench.construct.crossscene import CrossSceneSettings, retrieve_units
from mtvbench.construct.detect import Detector, DetectorError, detect_objects, load_detector
from mtvbench.construct.export import ExportReport, export_dataset
from mtvbench.construct.generate import generate_dialogues
from mtvbench.construct.keyframes import KeyFrameSettings, extract_keyframes
from mtvbench.construct.llm import StageModel
from mtvbench.construct.merge import merge_clips
from mtvbench.construct.objects import BankSettings, build_objects
from mtvbench.construct.records import (
    Captions,
    ChecklistResult,
    CrossSceneResult,
    Detections,
    GenerateResult,
    KeyFrames,
    MergeResult,
    ObjectsResult,
    ScoreResult,
    SplitResult,
    VideoRecord,
)
from mtvbench.construct.score import score_units
from mtvbench.construct.split import SplitSettings, split_video
from mtvbench.construct.textsim import TextSimilarity, make_textsim
from mtvbench.construct.workspace import Workspace, WorkspaceError
from mtvbench.errors import MtvbenchError
from mtvbench.media.frames import FrameSettings, VideoError
from mtvbench.models.base import BackendOptions, ModelBackend, create_backend

Role = Literal["caption", "merge", "score", "generate", "checklist"]
ROLES: tuple[Role, ...] = ("caption", "merge", "score", "generate", "checklist")
ALL_STAGES = ("split", "caption", "merge", "keyframes", "detect", "objects", "crossscene", "score", "generate",
              "checklists")
OBJECT_STAGES = ("keyframes", "detect", "objects")


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


class StageReport(BaseModel):
    stage: str
    video: str
    status: Literal["done", "skipped", "incomplete", "failed"]
    seconds: float = 0.0
    failures: int = 0
    message: str = ""


class BuildError(MtvbenchError):
    pass


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
        self.reports: list[StageReport] = []
        self.on_report = on_report

    # ------------------------------------------------------------ resources
    def backend(self, role: Role) -> ModelBackend:
        if role in self._given:
            return self._given[role]
        spec = self.config.models.get(role) or self.config.model
        if not spec:
            raise BuildError(f"no model for the '{role}' stage: pass --model SPEC (e.g. openai:gpt-4o)")
        if spec not in self._backends:
            self._backends[spec] = create_backend(spec, self.config.backend)
        return self._backends[spec]

    def model(self, role: Role) -> StageModel:
        if role not in self._models:
            self._models[role] = StageModel(self.backend(role), concurrency=self.config.concurrency)
        return self._models[role]

    def detector(self) -> Detector:
        if self._detector is None:
            self._detector = load_detector(self.config.detector, self.config.detector_weights)
        return self._detector

    def textsim(self) -> TextSimilarity:
        if self._textsim is None:
            self._textsim = make_textsim(self.config.text_embedder)
        return self._textsim

    def frames(self, n: int) -> FrameSettings:
        return FrameSettings(num_frames=n, max_side=self.config.frame_max_side)

    async def aclose(self) -> None:
        for b in self._backends.values():
            await b.aclose()

    # ------------------------------------------------------------ one stage, one video
    async def _stage(self, stage: str, v: VideoRecord, force: bool) -> StageReport:
        ws, c, name, path = self.ws, self.config, v.name, Path(v.path)
        kinds = {"split": SplitResult, "caption": Captions, "merge": MergeResult, "keyframes": KeyFrames,
                 "detect": Detections, "objects": ObjectsResult, "crossscene": CrossSceneResult,
                 "score": ScoreResult, "generate": GenerateResult, "checklists": ChecklistResult}
        kind = kinds[stage]
        if not force and ws.done(name, stage, kind):
            return StageReport(stage=stage, video=name, status="skipped", message="already done")
        previous = None if force else ws.load(name, stage, kind)
        t0 = time.perf_counter()
        art: object
        if stage == "split":
            art = await asyncio.to_thread(split_video, name, path, c.split)
        elif stage == "caption":
            art = await caption_clips(name, path, ws.require(name, "split", SplitResult), self.model("caption"),
                                      previous, c.caption_frames, self.frames(c.caption_frames))  # type: ignore[arg-type]
        elif stage == "merge":
            caps = ws.require(name, "caption", Captions)
            if not caps.complete:
                raise BuildError(f"{name}: some clips have no caption yet; re-run `build caption`")
            art = await merge_clips(name, ws.require(name, "split", SplitResult), caps, self.model("merge"),
                                    previous, c.merge_passes, c.merge_prefilter_below,  # type: ignore[arg-type]
                                    self.textsim())
        elif stage == "keyframes":
            art = await asyncio.to_thread(extract_keyframes, name, path, ws.video_dir(name) / "keyframes",
                                          c.keyframes)
        elif stage == "detect":
            kf = ws.require(name, "keyframes", KeyFrames)
            det = self.detector()
            art = await asyncio.to_thread(detect_objects, name, ws.video_dir(name), kf, det)
        elif stage == "objects":
            art = await build_objects(name, ws.video_dir(name), ws.require(name, "detect", Detections),
                                      ws.load(name, "merge", MergeResult), self.model("caption"),
                                      previous, c.bank, self.textsim())  # type: ignore[arg-type]
        elif stage == "crossscene":
            objects = ws.load(name, "objects", ObjectsResult) if c.objects else None
            if c.objects and objects is None:
                raise BuildError(f"{name}: run the object stages first (keyframes, detect, objects) or pass "
                                 "--no-objects")
            art = retrieve_units(name, ws.require(name, "merge", MergeResult), objects, c.crossscene, self.textsim())
        elif stage == "score":
            units = ws.require(name, "crossscene", CrossSceneResult).units
            art = await score_units(name, path, units, self.model("score"), previous,  # type: ignore[arg-type]
                                    c.min_score, c.score_frames, c.max_attempts, self.frames(c.score_frames))
        elif stage == "generate":
            units = ws.require(name, "crossscene", CrossSceneResult).units
            split = ws.require(name, "split", SplitResult)
            art = await generate_dialogues(name, path, units, ws.require(name, "score", ScoreResult),
                                           self.model("generate"), split.duration_s, previous,  # type: ignore[arg-type]
                                           c.generate_frames, c.max_attempts, c.retry_failed,
                                           self.frames(c.generate_frames))
        elif stage == "checklists":
            art = await make_checklists(name, ws.require(name, "generate", GenerateResult), self.backend("checklist"),
                                        previous, c.checklist_items, c.max_attempts,  # type: ignore[arg-type]
                                        c.concurrency, c.checklist_exact_split)
        else:  # pragma: no cover
            raise BuildError(f"unknown stage {stage}")
        ws.save(name, stage, art)  # type: ignore[arg-type]
        failures = len(getattr(art, "failures", []) or [])
        complete = bool(getattr(art, "complete", True))
        return StageReport(stage=stage, video=name, status="done" if complete else "incomplete",
                           seconds=time.perf_counter() - t0, failures=failures)

    async def run_stage(self, stage: str, videos: list[VideoRecord], force: bool = False) -> list[StageReport]:
        async def guarded(v: VideoRecord) -> StageReport:
            try:
                return await self._stage(stage, v, force)
            except (BuildError, DetectorError, WorkspaceError, VideoError) as e:
                return StageReport(stage=stage, video=v.name, status="failed", message=str(e))

        reports = list(await asyncio.gather(*(guarded(v) for v in videos)))
        for r in reports:
            self.reports.append(r)
            if self.on_report:
                self.on_report(r)
        return reports

    async def run(self, stages: list[str], videos: list[VideoRecord], force: bool = False) -> list[StageReport]:
        for stage in stages:
            if not self.config.objects and stage in OBJECT_STAGES:
                continue
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
        reports = await b.run(list(ALL_STAGES), videos)
    finally:
        await b.aclose()
    return reports, b.export(videos, out, accepted_only)
