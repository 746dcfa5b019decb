"""The construction pipeline: stages in order, per video, resumable, fingerprinted.

``Builder.run(stages)`` runs the named stages for every registered video (stage by stage,
videos concurrently within a stage) and ``Builder.export`` writes the dataset. The stages are
entries of :data:`~mtvbench.construct.stages.STAGES` (one module each); the builder runs any
of them the same way. Each model role has its own backend spec (:class:`~.config.BuildConfig`).

**What is paid for is kept.** Every model reply is committed to the workspace's call
journal as it arrives (:mod:`.journal`); a stage that runs again re-reads its stored
replies instead of asking, so a killed build asks again at most the calls in flight.

**When a stage runs for a video.** A stage's artifact records its inputs
(:class:`~.records.ArtifactMeta`): the digests of the upstream artifacts (``Stage.upstream``),
the video file's fingerprint (first stages) and the stage's settings (:meth:`Builder.settings`:
the model, a digest of the prompt templates, ``Stage.version``, frame and rule settings).
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
A stage that made less than it was asked for says why in its report's ``shortfall``
(:meth:`~.records.Artifact.shortfall`: "no unit rated 5-6", "3 of 8 dialogues failed the rule
checks after 2 re-asks", "no checklist for 12 of 30 scored rounds"); the export collects these
into one line per video. A build runs what it can for every video and then reports; the CLI
exits 2 when a stage failed on bad input, 3 when anything is incomplete or blocked, when a
video exports no dialogue (or a dialogue without checklists) because replies broke the rules,
or when nothing at all is exported; 0 otherwise.

**Progress** goes to a :class:`~mtvbench.dispatch.Progress`, the same interface a run reports to
(``start``/``advance`` per stage over the videos, ``reply`` per model reply, asked or read from the
journal); the CLI shows it with the same rich display as ``mtvbench run``.

**Before anything is written** (:meth:`Builder.preflight`): the stages that have work to
do are determined from the workspace, and for them the optional dependencies are imported
(PySceneDetect/OpenCV: ``mtvbench[build]``; ultralytics: ``mtvbench[detect]``), the model
backends are created (a missing API key is one error line) and the detector is loaded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, ArtifactMeta, Shortfall, VideoRecord
from mtvbench.construct.calls import StageModel
from mtvbench.construct.config import BuildSettings
from mtvbench.construct.detector import Detector, DetectorError, detector_label, load_detector
from mtvbench.construct.export import ExportReport, export_dataset
from mtvbench.construct.journal import CallJournal
from mtvbench.construct.stages import STAGES, Role, stage_names
from mtvbench.construct.textsim import TextSimilarity, make_textsim
from mtvbench.construct.workspace import Inspection, Workspace, WorkspaceError
from mtvbench.dispatch import Dispatcher, Progress
from mtvbench.dispatch.local import LocalDispatcher
from mtvbench.errors import InputError, MtvbenchError, require
from mtvbench.ledger.keys import canonical_json
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import FrameSettings, VideoError
from mtvbench.models.backend import ModelBackend
from mtvbench.util.files import VideoMode

if TYPE_CHECKING:
    from mtvbench.dispatch.ray import RayDispatcher

A = TypeVar("A", bound=Artifact)
Status = Literal["done", "skipped", "incomplete", "blocked", "failed"]


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
    #: what the stage could not make for this video, and why (None: all it was asked for)
    shortfall: Shortfall | None = None


class BuildError(MtvbenchError):
    pass


#: exceptions that fail one stage for one video (bad input); anything else stops the build
PER_VIDEO_ERRORS = (BuildError, DetectorError, WorkspaceError, VideoError, InputError)


@dataclass
class _Decision:
    meta: ArtifactMeta | None = None  # the inputs the artifact will record
    blocked: str | None = None  # an upstream stage is not usable
    run: bool = True
    reason: str = ""
    found: Inspection | None = None  # the existing artifact


class Builder:
    """Runs stages for videos of a workspace (see the module docstring); it is the stages'
    :class:`~mtvbench.construct.stages.StageContext`."""

    def __init__(self, ws: Workspace, config: BuildSettings, *, backends: dict[str, ModelBackend] | None = None,
                 detector: Detector | None = None, on_report: Callable[[StageReport], None] | None = None,
                 progress: Progress | None = None):
        self.ws = ws
        self.config = config
        self._given = dict(backends or {})
        self._backends: dict[str, ModelBackend] = {}
        self._models: dict[str, StageModel] = {}
        self._detector = detector
        self._textsim: TextSimilarity | None = None
        self._journal: CallJournal | None = None
        self._dispatcher: Dispatcher | None = None
        self.reports: list[StageReport] = []
        self.on_report = on_report
        self.progress = progress or Progress()

    # ------------------------------------------------------------ where the work runs
    def dispatcher(self) -> Dispatcher:
        """Where per-video work and model calls run (:mod:`mtvbench.dispatch`): this process, or
        with ``executor: ray`` the Ray cluster (joined on first use)."""
        if self._dispatcher is None:
            c = self.config
            if c.executor == "ray":
                from mtvbench.dispatch.ray import RayDispatcher

                self._dispatcher = RayDispatcher(c.ray_address, c.ray, c.concurrency)
            else:
                self._dispatcher = LocalDispatcher(c.concurrency)
        return self._dispatcher

    def cluster(self) -> RayDispatcher | None:
        """The Ray dispatcher of ``executor: ray``; None for a local build."""
        return self.dispatcher() if self.config.executor == "ray" else None  # type: ignore[return-value]

    def cluster_summary(self) -> str:
        """What ran on the cluster (empty for a local build)."""
        cluster = self.cluster()
        if cluster is None:
            return ""
        nodes = {r["node"] for r in cluster.replicas}
        return (f"{len(cluster.replicas)} model replica(s) on {len(nodes)} node(s), {cluster.tasks} split/key-frame "
                f"task(s), {cluster.holder_calls} detection call(s)")

    async def offload(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A per-video computation off the event loop: a thread here, or a Ray task on the cluster."""
        return await self.dispatcher().offload(fn, *args)

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
            self._backends[spec] = self.dispatcher().backend(spec, self.config.backend)
        return self._backends[spec]

    def model(self, role: Role) -> StageModel:
        if role not in self._models:
            self._models[role] = StageModel(self.backend(role), concurrency=self.config.concurrency,
                                            journal=self.journal, on_reply=self.progress.reply)
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
        return detector_label(c.detector, c.detector_weights)

    def textsim(self) -> TextSimilarity:
        if self._textsim is None:
            self._textsim = make_textsim(self.config.text_embedder)
        return self._textsim

    def frames(self, n: int) -> FrameSettings:
        return FrameSettings(num_frames=n, max_side=self.config.frame_max_side)

    async def aclose(self) -> None:
        for b in self._backends.values():
            await b.aclose()
        if self._dispatcher is not None:
            await self._dispatcher.aclose()
        if self._journal is not None:
            self._journal.close()

    # ------------------------------------------------------------ what a stage is made from
    def upstream(self, stage: str) -> tuple[str, ...]:
        """The stages ``stage`` is made from (object stages left out when the build has none)."""
        return tuple(u for u in STAGES.get(stage).upstream if self.config.objects or not STAGES.get(u).object_stage)

    def settings(self, stage: str, recorded: dict[str, Any] | None = None) -> dict[str, Any]:
        """Everything besides the upstream artifacts that decides a stage's result (see module doc).

        A model or detector that was not given is the ``recorded`` one (what built the artifact), so a
        rerun without ``--model`` keeps finished work; with nothing recorded the detector is the build's default
        (YOLO11)."""
        c = self.config
        spec = STAGES.get(stage)
        s: dict[str, Any] = {"version": spec.version}
        if spec.role is not None:
            s.update(model=self.model_spec(spec.role), prompt=spec.prompts() if spec.prompts else "",
                     max_attempts=c.max_attempts)
        s.update(spec.settings(self))
        for key in ("model", "detector"):
            if key in s and s[key] is None:
                s[key] = (recorded or {}).get(key)
        if "detector" in s and s["detector"] is None:
            s["detector"] = detector_label(c.detector, c.detector_weights)
        return json.loads(canonical_json(s))

    def _decide(self, stage: str, v: VideoRecord, force: bool) -> _Decision:
        upstream: dict[str, str] = {}
        for u in self.upstream(stage):
            cur = self.ws.current(v, u)
            if not cur.ok:
                return _Decision(blocked=f"needs '{u}': {cur.problem}", run=False)
            upstream[u] = cur.meta.digest
        if STAGES.get(stage).from_video:
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
            changed = sorted(k for k in set(old.upstream) | set(upstream)
                             if old.upstream.get(k) != upstream.get(k))
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
        for s in self._active(stages):
            if s not in pending:
                continue
            spec = STAGES.get(s)
            needs = spec.needs_under(self.config)
            if needs is not None and not (s == "detect" and self._detector is not None):
                extra, modules = needs
                for module, _ in modules:
                    require(module, extra, f"the {s} stage")
            if spec.role is not None:
                self.model(spec.role)
            if spec.prepare is not None:
                spec.prepare(self)
        return pending

    def _active(self, stages: list[str]) -> list[str]:
        return [s for s in stages if self.config.objects or not STAGES.get(s).object_stage]

    # ------------------------------------------------------------ one stage, one video
    def artifact(self, video: VideoRecord, stage: str, kind: type[A]) -> A:
        """The artifact of an upstream stage (``_decide`` checked that it is current)."""
        got = self.ws.load(video.name, stage, kind)
        assert got is not None
        return got

    async def _make(self, stage: str, v: VideoRecord) -> Artifact:
        return await STAGES.get(stage).make(self, v)

    async def _stage(self, stage: str, v: VideoRecord, force: bool) -> StageReport:
        d = self._decide(stage, v, force)
        if d.blocked:
            return StageReport(stage=stage, video=v.name, status="blocked", message=d.blocked)
        if not d.run:
            return StageReport(stage=stage, video=v.name, status="skipped", message="already done")
        role = STAGES.get(stage).role
        if role is not None:
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
                             problems=[f"{f.item}: {'; '.join(f.problems)}" for f in errors],
                             shortfall=artifact.shortfall())
        if not artifact.complete and not errors:
            report.problems = [f"{f.item}: {'; '.join(f.problems)}" for f in failures]
        if role is not None:
            m = self.model(role)
            report.asked, report.replayed = m.asked[(v.name, stage)], m.replayed[(v.name, stage)]
        return report

    async def run_stage(self, stage: str, videos: list[VideoRecord], force: bool = False) -> list[StageReport]:
        async def guarded(v: VideoRecord) -> StageReport:
            try:
                return await self._stage(stage, v, force)
            except PER_VIDEO_ERRORS as e:
                return StageReport(stage=stage, video=v.name, status="failed", message=str(e))
            finally:
                self.progress.advance(stage)

        self.progress.start(stage, len(videos))

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
               video_mode: VideoMode = "copy") -> ExportReport:
        return export_dataset(self.ws, videos, out, accepted_only=accepted_only, video_mode=video_mode)


async def build_all(ws: Workspace, videos: list[VideoRecord], config: BuildSettings, *,
                    backends: dict[str, ModelBackend] | None = None, detector: Detector | None = None,
                    out: Path | None = None, accepted_only: bool = False,
                    on_report: Callable[[StageReport], None] | None = None) -> tuple[list[StageReport], ExportReport]:
    """Every stage for ``videos``, then export."""
    b = Builder(ws, config, backends=backends, detector=detector, on_report=on_report)
    try:
        b.preflight(list(stage_names()), videos)
        with ws.lock():
            reports = await b.run(list(stage_names()), videos)
            return reports, b.export(videos, out, accepted_only)
    finally:
        await b.aclose()
