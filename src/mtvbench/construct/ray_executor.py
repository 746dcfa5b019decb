"""``mtvbench build ... --executor ray``: the per-video work of a build on a Ray cluster.

The :class:`~mtvbench.construct.pipeline.Builder` keeps deciding, per stage and video, what runs
(the artifacts' records, resume, ``--force``), and it stays the one writer of the workspace's
artifacts and of its call journal. What runs on the cluster:

- **split** and **keyframes**: one Ray task per video (``ray.task_cpus`` each), reading the video
  and writing the key-frame images into the video's folder of the workspace;
- **detect**: a detector actor (``ray.detect_gpus`` GPUs) that loads YOLO11 (or the configured
  detector) once and runs every video's key frames, writing the crops into the workspace;
- **model calls** of every LLM stage: model replicas (the evaluation's :class:`Replica` actors:
  one model per replica for ``hf:``/``vllm:`` with ``ray.num_gpus`` GPUs, async API actors
  otherwise). A reply comes back to the driver, which commits it to ``WS/calls.sqlite`` before
  the stage uses it, exactly as a local build does.

**One writer of the journal.** The journal is SQLite in WAL mode; WAL needs shared memory between
its writers, which a network file system does not give, so several nodes writing it could corrupt
it. The replicas therefore only answer; the driver, which asked, stores each reply the moment it
arrives. A killed build asks again at most the calls that were in flight; a replica that dies is
replaced and the call it held is asked again (its reply was never stored).

**Shared storage.** The workspace (videos, their folders, the artifacts) must be at the same path
on the driver and on every node, e.g. an NFS or Lustre mount: the tasks read the videos and write
key frames and crops there. Frames for model calls are decoded on the driver and travel to the
replicas through Ray's object store.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mtvbench.config import RaySettings
from mtvbench.construct.detector import load_detector
from mtvbench.construct.stages.detect import Detections, detect_objects
from mtvbench.construct.stages.keyframes import KeyFrames
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.ray_executor import (
    ReplicaPool,
    ReplicaSpec,
    connect,
    default_replicas,
    lost_errors,
    replica_class,
    replica_options,
    require_ray,
    task_error,
)

T = TypeVar("T")


class DetectorReplica:
    """A Ray actor holding one detector (loaded once) for every video's key frames."""

    def __init__(self, detector: str | None, weights: str | None):
        self.detector = load_detector(detector, weights)

    def detect(self, video: str, video_dir: str, keyframes: KeyFrames) -> Detections:
        return detect_objects(video, Path(video_dir), keyframes, self.detector)


class RemoteBackend:
    """A :class:`~mtvbench.models.backend.ModelBackend` whose calls run on model replicas (least busy
    first); a call whose replica died is asked again on its replacement."""

    def __init__(self, ray: Any, pool: ReplicaPool, name: str, max_retries: int):
        self.ray, self.pool, self.name, self.max_retries = ray, pool, name, max_retries
        self.needs_frames = True

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        lost = lost_errors(self.ray)
        died = 0
        while True:
            slot = self.pool.pick()
            actor = self.pool.slots[slot]
            self.pool.load[slot] += 1
            try:
                return await actor.generate.remote(request)
            except lost:
                died += 1
                self.pool.replace(slot, actor)
                if died > self.max_retries:
                    return GenerationResult(outcome="error", error=f"{self.name}: the model replica died {died} times "
                                            f"(ray.max_retries={self.max_retries})")
            except self.ray.exceptions.RayTaskError as e:
                raise task_error(self.ray, e) from None
            finally:
                self.pool.load[slot] -= 1

    async def aclose(self) -> None:
        self.pool.close()


class RayBuild:
    """What a :class:`~mtvbench.construct.pipeline.Builder` hands to the cluster (see the module doc).
    Ray is joined (or started) on first use; :meth:`aclose` leaves it."""

    def __init__(self, address: str | None, settings: RaySettings, concurrency: int):
        self.ray = require_ray()
        self.address, self.settings, self.concurrency = address, settings, concurrency
        self._started: bool | None = None
        self._detectors: dict[tuple[str | None, str | None], Any] = {}
        #: what ran on the cluster: model replicas started (by node), per-video tasks, detector calls
        self.replica_nodes: list[str] = []
        self.tasks = 0
        self.detections = 0

    def _ray(self) -> Any:
        if self._started is None:
            self._started = connect(self.ray, self.address)
        return self.ray

    def backend(self, spec: str, options: BackendOptions) -> RemoteBackend:
        """Replicas of ``spec`` (the model's key, if any, handed over in memory: run.ray_executor)."""
        ray = self._ray()
        opts, env = replica_options(spec, options)
        n = default_replicas(ray, self.settings, 1 << 30)
        pool = ReplicaPool(ray, replica_class(ray, self.settings),
                           ReplicaSpec(spec=spec, options=opts.model_dump(mode="json"), env=env,
                                       concurrency=max(1, math.ceil(self.concurrency / n)), context="golden",
                                       style="paper", n_frames=0), n)
        infos = pool.start()
        self.replica_nodes += [info["node"] for info in infos]
        return RemoteBackend(ray, pool, infos[0]["name"], self.settings.max_retries)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` as a Ray task (a per-video stage that reads the video from shared storage)."""
        ray = self._ray()
        task = ray.remote(num_cpus=self.settings.task_cpus)(fn)
        self.tasks += 1
        try:
            return await task.remote(*args)
        except ray.exceptions.RayTaskError as e:
            raise task_error(ray, e) from None

    async def detect(self, detector: str | None, weights: str | None, video: str, video_dir: Path,
                     keyframes: KeyFrames) -> Detections:
        ray = self._ray()
        key = (detector, weights)
        if key not in self._detectors:
            cls = ray.remote(num_cpus=self.settings.task_cpus, num_gpus=self.settings.detect_gpus)(DetectorReplica)
            self._detectors[key] = cls.remote(detector, weights)
        self.detections += 1
        try:
            return await self._detectors[key].detect.remote(video, str(video_dir), keyframes)
        except ray.exceptions.RayTaskError as e:
            raise task_error(ray, e) from None

    def summary(self) -> str:
        return (f"{len(self.replica_nodes)} model replica(s) on {len(set(self.replica_nodes))} node(s), "
                f"{self.tasks} split/key-frame task(s), {self.detections} detection call(s)")

    async def aclose(self) -> None:
        """Stop the detectors and leave Ray (the backends are closed by the builder that owns them)."""
        for actor in self._detectors.values():
            self.ray.kill(actor, no_restart=True)
        if self._started:
            self.ray.shutdown()


__all__ = ["DetectorReplica", "RayBuild", "RemoteBackend"]
