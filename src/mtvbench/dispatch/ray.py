"""The dispatcher on a Ray cluster: ``run --executor ray`` and ``build --executor ray``.

What stays in this process (the *driver*): everything that decides a result. The writer (planning,
the run store or the build's artifacts and call journal, the fingerprints, the judge) is the only
writer; the pipeline (:func:`~mtvbench.dispatch.run_videos`: which turn is asked when, the
self-context chain, the stop test) is the local run's. What goes to the cluster:

- **Model calls** run on *replicas*: Ray actors that each create the backend once (``hf:``/``vllm:``:
  one model per replica with ``ray.num_gpus`` GPUs, tensor parallel inside it with
  ``tensor_parallel_size``; API backends: async actors). Each replica has a call gate here
  (:class:`~mtvbench.dispatch.local.CallGate`: ``concurrency`` split over the replicas, a
  batching backend's ready turns sent as one batch), so a stopped run sends nothing more. A replica
  only answers: every result comes back to the driver, which records it the moment it arrives.
- **Frames** (run) are decoded in Ray tasks through the same :class:`~mtvbench.media.cache.FrameCache`
  (its folder should be on storage every node sees, so each video is decoded once for every run and
  sweep; the cache is keyed by content, so a node-local folder is only slower), on the node of the
  video's replica when it has room. They go into Ray's object store once per video; the replica
  resolves them once and every turn of the video reuses them. Videos are dealt to the least busy
  replica; at most ``videos_in_flight`` videos per replica hold frames at a time.
- **Per-video computations** (build: split, key frames) run as Ray tasks (``ray.task_cpus``), and an
  object that is expensive to make (build: the detector) lives in a :class:`Holder` actor, made once.

**A replica or node that dies.** Its slot gets a new replica and the calls that were in flight on it
are asked there again (their answers never reached the writer); nothing recorded is asked again. A
video whose replicas died more than ``ray.max_retries`` times leaves its remaining turns for the next
run (a build's call: an error result).

**Keys.** The judge runs in the driver, so its key never leaves this process. The model's key (only
the variable the endpoint rules pick for the model's URL) is handed to each replica in memory, as an
argument of the actor, which puts it in its own process environment. It is never put in a Ray
``runtime_env``: Ray's runtime-env agent writes every runtime env it creates, environment variables
included, to its log files on each node.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mtvbench._version import __version__
from mtvbench.dispatch import (
    NotAsked,
    NotSent,
    TurnWriter,
    VideoJob,
    VideoState,
    frame_cache_warning,
    run_videos,
)
from mtvbench.dispatch.local import CallGate
from mtvbench.errors import MissingExtraError, MtvbenchError
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import FrameSettings, VideoError, VideoFrames
from mtvbench.models.backend import BackendBase, abilities, generate_many, video_done
from mtvbench.models.endpoints import gemini_endpoint, openai_endpoint, use_vertex
from mtvbench.models.registry import create_backend, parse_spec
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult

if TYPE_CHECKING:
    from mtvbench.config import RaySettings
    from mtvbench.models.backend import ModelBackend

T = TypeVar("T")

#: backends that load a model (one per replica); the driver never loads them
LOCAL_ENGINES = ("hf", "vllm")


def require_ray() -> Any:
    """The ``ray`` module, or one error naming the extra."""
    try:
        import ray
    except ImportError as e:
        raise MissingExtraError("--executor ray", "ray", e.name) from e
    return ray


class RayExecutorError(MtvbenchError):
    """The cluster cannot be used as asked (not reachable, no room for a replica)."""


def connect(ray: Any, address: str | None) -> bool:
    """Join the cluster at ``address`` (``auto``, ``HOST:PORT``), or start a Ray instance on this
    machine when it is None; True when this call connected (and so disconnects at the end)."""
    if ray.is_initialized():
        return False
    try:
        if address:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        else:
            ray.init(log_to_driver=False, logging_level="ERROR", include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise RayExecutorError(f"cannot join the Ray cluster at {address or 'a new local instance'}: {e}",
                               hint="start it with `ray start --head` (and `ray start --address HEAD:PORT` on the "
                                    "other nodes), then pass --ray-address auto or HEAD:PORT") from e
    return True


def default_replicas(ray: Any, settings: RaySettings, most: int) -> int:
    """How many replicas run: ``settings.replicas``, else one per node, or with ``num_gpus`` as many
    as the cluster's GPUs hold; at most ``most`` (the videos to run). The replicas hold their CPUs
    for their whole life, so ``task_cpus`` must stay free beside them for the frame (construction:
    split/key-frame) tasks: a default count is lowered to leave that room, an explicit one that
    leaves none is refused (it would wait forever)."""
    have = ray.cluster_resources()
    cpus, gpus = float(have.get("CPU", 0)), float(have.get("GPU", 0))
    n = settings.replicas
    if n is None:
        if settings.num_gpus > 0:
            n = int(gpus // settings.num_gpus)
        else:
            n = sum(1 for node in ray.nodes() if node.get("Alive"))
        if settings.num_cpus > 0:
            n = min(n, int((cpus - settings.task_cpus) // settings.num_cpus))
        n = max(1, min(n, most))
    else:
        n = max(1, min(n, most))
    need_cpus, need_gpus = n * settings.num_cpus + settings.task_cpus, n * settings.num_gpus
    if need_cpus > cpus or need_gpus > gpus:
        raise RayExecutorError(
            f"{n} model replica(s) of {settings.num_cpus:g} CPU(s) and {settings.num_gpus:g} GPU(s), plus "
            f"{settings.task_cpus:g} CPU(s) for the frame tasks, do not fit in the cluster ({cpus:g} CPUs, "
            f"{gpus:g} GPUs)",
            hint="lower ray.replicas, ray.num_cpus, ray.task_cpus or ray.num_gpus (--ray-gpus), or add nodes")
    return n


def replica_class(ray: Any, settings: RaySettings) -> Any:
    """:class:`Replica` as a Ray actor with the resources of one replica. A replica is never
    restarted by Ray, nor are its calls retried: the driver knows what was recorded and sends only
    the rest to a new one."""
    return ray.remote(num_cpus=settings.num_cpus, num_gpus=settings.num_gpus, max_restarts=0, max_task_retries=0,
                      scheduling_strategy="SPREAD")(Replica)


def start_error(spec: str, e: BaseException) -> RayExecutorError:
    """A replica that could not be created (its backend failed on its node): the error's last line."""
    last = next((line.strip() for line in reversed(str(e).strip().splitlines()) if line.strip()), type(e).__name__)
    return RayExecutorError(f"a model replica of {spec} could not start on the cluster: {last}",
                            hint="its traceback is in the Ray logs of its node; every node needs the model's "
                                 "extras and its checkpoint at the same path")


def task_error(ray: Any, e: BaseException) -> BaseException:
    """The error a Ray task raised, as it was raised (a user error stays one)."""
    cause = getattr(e, "cause", None) if isinstance(e, ray.exceptions.RayTaskError) else None
    return cause if isinstance(cause, Exception) else e


def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """What a dead replica, worker or node looks like to the driver."""
    ex = ray.exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "ActorUnavailableError", "WorkerCrashedError",
                                          "NodeDiedError", "ObjectLostError", "OwnerDiedError",
                                          "LocalRayletDiedError") if hasattr(ex, n))


# ------------------------------------------------------------------------------ what travels
@dataclass
class ReplicaSpec:
    """How a replica creates its backend (the key, if any, only in memory)."""

    spec: str
    options: dict[str, Any]
    env: dict[str, str]
    #: the frames of this many videos stay resolved in the replica (``videos_in_flight``)
    frames_held: int = 1


@dataclass
class RemoteCall:
    """One call to a replica: the request, and the object ref of its video's frames (None: the request
    carries its own, or none). The ref is inside this record, so Ray hands it over unresolved."""

    request: GenerationRequest
    frames: Any = None


def replica_options(spec: str, options: BackendOptions) -> tuple[BackendOptions, dict[str, str]]:
    """The options a replica uses and the one key variable it gets: the URL and key the endpoint
    rules chose here (:mod:`mtvbench.models.endpoints`), so a replica sends exactly what a local
    run would, whatever its node's environment holds."""
    prefix, _ = parse_spec(spec)
    if prefix == "openai":
        ep = openai_endpoint(options)
    elif prefix == "gemini" and not (use_vertex() and not options.api_key_env):
        ep = gemini_endpoint(options)
    else:
        return options, {}
    moved = options.model_copy(update={"base_url": ep.url, "api_key_env": ep.key_env})
    return moved, ({ep.key_env: ep.key} if ep.key_env else {})


class RemoteEngine(BackendBase):
    """What the driver holds for an ``hf:``/``vllm:`` model that only the replicas load."""

    def __init__(self, spec: str):
        self.name = spec

    async def generate(self, request: Any) -> GenerationResult:  # pragma: no cover - never called
        raise RuntimeError(f"{self.name} runs on the Ray replicas, not in the driver")


def driver_model(spec: str, options: BackendOptions) -> ModelBackend:
    """The backend object the driver's writer holds: the real one for API backends and baselines
    (cheap; a missing key is found before the run directory exists), a stand-in for local engines."""
    if parse_spec(spec)[0] in LOCAL_ENGINES:
        return RemoteEngine(spec)
    return create_backend(spec, options)


# ------------------------------------------------------------------------------ cluster side
def decode_frames(path: str, settings: dict[str, Any], cache_root: str | None
                  ) -> tuple[tuple[str, Any] | None, VideoFrames | None]:
    """A Ray task with two results: a small status (None, ``("video", message)`` for a video that
    cannot be read, ``("cache", (errno, strerror))`` for a frame cache that cannot be written), so
    the driver learns the outcome without fetching the frames, and the frames of the video, read
    through the frame cache (decoded once per content and settings)."""
    cache = FrameCache(Path(cache_root) if cache_root else None, memory_items=0)
    try:
        return None, cache.get(Path(path), FrameSettings.model_validate(settings))
    except VideoError as e:
        return ("video", e.message), None
    except OSError as e:
        if cache_root is None:
            raise
        return ("cache", (e.errno, e.strerror or str(e))), None


class Replica:
    """A Ray actor: one backend (one model for local engines), answering the calls the driver sends."""

    def __init__(self, spec: ReplicaSpec):
        os.environ.update(spec.env)  # this actor's own process; the key's variable only
        self.spec = spec
        self.model = create_backend(spec.spec, BackendOptions.model_validate(spec.options))
        self._frames: OrderedDict[str, asyncio.Future[VideoFrames]] = OrderedDict()

    def ready(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "version": __version__,
                "name": self.model.name, "batch_size": abilities(self.model).batch_size}

    async def generate(self, call: RemoteCall) -> GenerationResult:
        return await self.model.generate(await self._request(call))

    async def generate_batch(self, calls: list[RemoteCall]) -> list[GenerationResult]:
        return await generate_many(self.model, [await self._request(c) for c in calls])

    async def end_video(self, frames: list[Any]) -> None:
        """The video of the frames ref ``frames[0]`` is done here: the backend frees what it held for it, and
        its frames are let go."""
        ref = frames[0]
        await video_done(self.model, await self._resolve(ref))
        self._frames.pop(ref.hex(), None)

    async def _request(self, call: RemoteCall) -> GenerationRequest:
        if call.frames is not None:
            call.request.frames = await self._resolve(call.frames)
        return call.request

    async def _resolve(self, ref: Any) -> VideoFrames:
        """A video's frames, resolved once while the video is in flight (the same object for every turn,
        so their encoded parts are reused); the ``frames_held`` videos used last are kept."""
        key = ref.hex()
        fetch = self._frames.get(key)
        if fetch is None:
            fetch = self._frames[key] = asyncio.ensure_future(ref)
            while len(self._frames) > max(1, self.spec.frames_held):
                self._frames.popitem(last=False)
        self._frames.move_to_end(key)
        try:
            return await asyncio.shield(fetch)
        except Exception:
            self._frames.pop(key, None)  # not kept: the next turn fetches them again
            raise

    async def close(self) -> None:
        await self.model.aclose()


class Holder:
    """A Ray actor holding one object made once on its node (construction: the detector); ``call`` runs
    ``fn(obj, *args)`` there."""

    def __init__(self, factory: Callable[..., Any], *args: Any):
        self.obj = factory(*args)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(self.obj, *args)


# ------------------------------------------------------------------------------ driver side
class ReplicaLost(Exception):
    """The replica a call went to died (or its node did) before it answered."""

    def __init__(self, actor: Any):
        super().__init__("model replica lost")
        self.actor = actor


class ReplicaModel:
    """What a slot's call gate sends to: the slot's current replica (its ``batch_size`` that replica's)."""

    def __init__(self, pool: ReplicaPool, slot: int, batch_size: int):
        self.pool, self.slot, self.batch_size = pool, slot, batch_size
        self.name = pool.spec.spec

    async def generate(self, call: RemoteCall) -> GenerationResult:
        return await self._send("generate", call)

    async def generate_batch(self, calls: Sequence[RemoteCall]) -> list[GenerationResult]:
        return await self._send("generate_batch", list(calls))

    async def _send(self, method: str, arg: Any) -> Any:
        actor, ray = self.pool.slots[self.slot], self.pool.ray
        try:
            return await getattr(actor, method).remote(arg)
        except self.pool.lost as e:
            raise ReplicaLost(actor) from e
        except ray.exceptions.RayTaskError as e:
            raise task_error(ray, e) from None


class ReplicaPool:
    """The replicas of one model, one call gate each; a dead one is replaced in its slot."""

    def __init__(self, ray: Any, cls: Any, spec: ReplicaSpec, n: int, concurrency: int):
        self.ray, self.cls, self.spec = ray, cls, spec
        self.lost = lost_errors(ray)
        self.slots = [self._new() for _ in range(n)]
        self.load = [0] * n
        self.nodes: dict[int, str] = {}
        self.gates: list[CallGate[RemoteCall]] = []
        #: calls (or batches) in flight on each replica: ``concurrency`` split over them
        self.concurrency = max(1, math.ceil(concurrency / n))
        self.replaced = 0
        self._closed = False

    def _new(self) -> Any:
        return self.cls.remote(self.spec)

    def start(self) -> list[dict[str, Any]]:
        """Wait until every replica is up (its backend created, its model loaded); their node, pid,
        mtvbench version and backend name. A replica that cannot start is one :class:`RayExecutorError`."""
        try:
            infos = self.ray.get([a.ready.remote() for a in self.slots])
        except self.ray.exceptions.RayActorError as e:
            raise start_error(self.spec.spec, e) from None
        other = sorted({info["version"] for info in infos} - {__version__})
        if other:
            raise RayExecutorError(f"the cluster's nodes run mtvbench {', '.join(other)}, this driver {__version__}",
                                   hint="install the same mtvbench version on every node")
        self.nodes = {i: info["node"] for i, info in enumerate(infos)}
        self.gates = [CallGate(ReplicaModel(self, i, info["batch_size"]), self.concurrency)
                      for i, info in enumerate(infos)]
        return list(infos)

    def stop_when(self, stopped: Callable[[], bool]) -> None:
        """Nothing more is sent once ``stopped()`` is true."""
        for gate in self.gates:
            gate.stopped = stopped

    def pick(self) -> int:
        return min(range(len(self.slots)), key=lambda i: self.load[i])

    def replace(self, i: int, dead: Any) -> bool:
        """A new replica in slot ``i`` unless ``dead`` was replaced already; True when this call replaced it."""
        if self.slots[i] is not dead:
            return False
        self.ray.kill(dead, no_restart=True)
        self.slots[i] = self._new()
        self.nodes.pop(i, None)
        self.replaced += 1
        return True

    async def close(self) -> None:
        """Close every replica's backend (30 s at most), then end them."""
        if self._closed:
            return
        self._closed = True
        closing = asyncio.gather(*(a.close.remote() for a in self.slots), return_exceptions=True)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(closing, 30)
        for a in self.slots:
            self.ray.kill(a, no_restart=True)


class RemoteBackend(BackendBase):
    """A :class:`~mtvbench.models.backend.ModelBackend` whose calls run on a pool's replicas (least busy
    first; construction's model roles); a call whose replica died is asked again on its replacement."""

    def __init__(self, pool: ReplicaPool, name: str, max_retries: int):
        self.pool, self.name, self.max_retries = pool, name, max_retries

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        died = 0
        while True:
            slot = self.pool.pick()
            self.pool.load[slot] += 1
            try:
                return await self.pool.gates[slot].call(RemoteCall(request))
            except ReplicaLost as e:
                died += 1
                self.pool.replace(slot, e.actor)
                if died > self.max_retries:
                    return GenerationResult(outcome="error", error=f"{self.name}: the model replica died {died} times "
                                            f"(ray.max_retries={self.max_retries})")
            finally:
                self.pool.load[slot] -= 1

    async def aclose(self) -> None:
        return None  # its replicas end with the dispatcher that started them


class _RayLane:
    """One video of a run on the cluster: its replica slot, its frames decoded in a Ray task, its calls
    through the slot's gate, its replicas' deaths counted."""

    def __init__(self, d: RayDispatcher, state: VideoState, writer: TurnWriter, pool: ReplicaPool):
        self.d, self.state, self.writer, self.pool = d, state, writer, pool
        self.slot = pool.pick()
        pool.load[self.slot] += 1
        self.dead: list[Any] = []
        self.given_up: str | None = None

    async def frames(self, job: VideoJob) -> Any:
        """An object ref of the video's frames, decoded in a Ray task (on the replica's node when it
        has room); None when the model reads no frames."""
        if not abilities(self.d.model).needs_frames:
            return None
        opts: dict[str, Any] = {}
        node = self.pool.nodes.get(self.slot)
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=True)
        settings = self.d.frame_settings.model_dump(mode="json") if self.d.frame_settings else {}
        while True:
            root = self.d.cache_root
            status, frames = self.d.decode.options(**opts).remote(str(job.path), settings,
                                                                  None if root is None else str(root))
            failed = await status
            if failed is None:
                return frames
            kind, detail = failed
            if kind == "video":
                raise VideoError(detail)
            assert root is not None
            self.d.cache_root = None  # the frame cache cannot be written: frames in memory from now on
            self.writer.warn(frame_cache_warning(root, OSError(*detail)))

    def request_frames(self, frames: Any) -> None:
        return None  # they travel beside the request, as an object ref

    async def call(self, request: GenerationRequest, frames: Any) -> GenerationResult:
        while True:
            if self.given_up is not None:
                raise NotAsked
            try:
                return await self.pool.gates[self.slot].call(RemoteCall(request, frames))
            except ReplicaLost as e:
                if self.writer.stopped:
                    raise NotSent from None
                self._lost(e.actor)

    async def video_done(self, frames: Any) -> None:
        """Its replica frees what it held for the video (a replica that died held nothing any more)."""
        if frames is None:
            return
        actor = self.pool.slots[self.slot]
        try:
            await actor.end_video.remote([frames])
        except self.pool.lost:
            return
        except self.pool.ray.exceptions.RayTaskError as e:
            raise task_error(self.pool.ray, e) from None

    def _lost(self, actor: Any) -> None:
        """The video's replica died: a new one in its slot, unless the video ran out of tries."""
        if any(a is actor for a in self.dead):
            return  # another call of this video found out already
        self.dead.append(actor)
        self.pool.replace(self.slot, actor)
        self.d.retried_videos += 1
        tries, most = len(self.dead), self.d.settings.max_retries
        if tries > most:
            self.given_up = f"its model replica died {tries} times (ray.max_retries={most})"
            return
        self.writer.progress.note("ray", f"{self.state.job.video}: its model replica was lost; {self.state.left} "
                                         "turns not stored yet go to a new replica")

    def close(self) -> None:
        self.pool.load[self.slot] -= 1
        if self.given_up is not None:
            self.writer.video_failed(self.state.job.video, f"{self.given_up}; {self.state.not_asked} turns not asked "
                                                           "(run the same command again)")


class RayDispatcher:
    """The :class:`~mtvbench.dispatch.Dispatcher` on a Ray cluster (see the module docstring).
    Ray is joined (or started) on first use; :meth:`aclose` leaves it when this dispatcher joined it."""

    name = "ray"
    remote_calls = True

    def __init__(self, address: str | None, settings: RaySettings, concurrency: int, *, videos_in_flight: int = 1,
                 frame_settings: FrameSettings | None = None, cache_root: Path | None = None):
        self.ray = require_ray()
        self.address, self.settings, self.concurrency = address, settings, concurrency
        self.videos_in_flight = videos_in_flight
        self.frame_settings, self.cache_root = frame_settings, cache_root
        self.model: ModelBackend | None = None
        self._spec: tuple[str, BackendOptions] | None = None
        self._joined: bool | None = None
        self.pool: ReplicaPool | None = None
        self._pools: list[ReplicaPool] = []
        self._holders: dict[tuple[Any, ...], Any] = {}
        self.decode: Any = None
        #: what ran on the cluster: replicas started (their ready info), per-video tasks, held-object calls,
        #: videos sent to a new replica after theirs died
        self.replicas: list[dict[str, Any]] = []
        self.tasks = 0
        self.held_calls = 0
        self.retried_videos = 0

    def _ray(self) -> Any:
        if self._joined is None:
            self._joined = connect(self.ray, self.address)
        return self.ray

    def _pool(self, spec: str, options: BackendOptions, most: int) -> ReplicaPool:
        ray = self._ray()
        opts, env = replica_options(spec, options)
        n = default_replicas(ray, self.settings, most)
        pool = ReplicaPool(ray, replica_class(ray, self.settings),
                           ReplicaSpec(spec=spec, options=opts.model_dump(mode="json"), env=env,
                                       frames_held=self.videos_in_flight), n, self.concurrency)
        self._pools.append(pool)
        self.replicas += pool.start()
        return pool

    # evaluation --------------------------------------------------------------------------
    def driver_model(self, spec: str, options: BackendOptions) -> ModelBackend:
        self._spec = (spec, options)
        self.model = driver_model(spec, options)
        return self.model

    async def start(self, videos: int) -> None:
        """Join the cluster and start the model's replicas (models loaded) for at most ``videos`` videos;
        ``evaluate`` calls it before the run directory exists, so a replica that cannot start leaves
        nothing behind."""
        if self.pool is not None:
            return
        if self._spec is None:
            raise RuntimeError("RayDispatcher.start needs the model: call driver_model() first")
        self.pool = self._pool(*self._spec, max(1, videos))

    async def run(self, jobs: Sequence[VideoJob], writer: TurnWriter) -> None:
        if not jobs:
            return
        await self.start(len(jobs))
        pool = self.pool
        assert pool is not None
        nodes = len({r["node"] for r in self.replicas})
        writer.progress.note("ray", f"{len(self.replicas)} model replica(s) of {pool.spec.spec} on {nodes} node(s)")
        self.decode = self.ray.remote(num_cpus=self.settings.task_cpus, num_returns=2)(decode_frames)
        pool.stop_when(lambda: writer.stopped)

        def open_lane(state: VideoState) -> _RayLane:
            return _RayLane(self, state, writer, pool)

        await run_videos(jobs, writer, self.videos_in_flight * len(pool.slots), open_lane)

    # construction ------------------------------------------------------------------------
    def backend(self, spec: str, options: BackendOptions) -> RemoteBackend:
        """Replicas of ``spec``, started now (the model's key, if any, handed over in memory)."""
        pool = self._pool(spec, options, 1 << 30)
        return RemoteBackend(pool, self.replicas[-1]["name"], self.settings.max_retries)

    async def offload(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` as a Ray task (a per-video computation that reads the video from shared storage)."""
        ray = self._ray()
        task = ray.remote(num_cpus=self.settings.task_cpus)(fn)
        self.tasks += 1
        try:
            return await task.remote(*args)
        except ray.exceptions.RayTaskError as e:
            raise task_error(ray, e) from None

    def holder(self, factory: Callable[..., Any], *args: Any, num_gpus: float = 0) -> Any:
        """A :class:`Holder` actor of ``factory(*args)`` (made once per factory and arguments)."""
        key = (factory, *args)
        if key not in self._holders:
            ray = self._ray()
            cls = ray.remote(num_cpus=self.settings.task_cpus, num_gpus=num_gpus)(Holder)
            self._holders[key] = cls.remote(factory, *args)
        return self._holders[key]

    async def call_held(self, holder: Any, fn: Callable[..., T], *args: Any) -> T:
        """``fn(obj, *args)`` on the holder's object, where it lives."""
        self.held_calls += 1
        try:
            return await holder.call.remote(fn, *args)
        except self.ray.exceptions.RayTaskError as e:
            raise task_error(self.ray, e) from None

    # ending -------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """End the replicas and held objects, and leave Ray when this dispatcher joined it."""
        for pool in self._pools:
            await pool.close()
        self._pools, self.pool = [], None
        for actor in self._holders.values():
            self.ray.kill(actor, no_restart=True)
        self._holders = {}
        if self._joined:
            self.ray.shutdown()
            self._joined = None


__all__ = ["Holder", "LOCAL_ENGINES", "RayDispatcher", "RayExecutorError", "RemoteBackend", "RemoteCall",
           "RemoteEngine", "Replica", "ReplicaLost", "ReplicaModel", "ReplicaPool", "ReplicaSpec", "connect",
           "decode_frames", "default_replicas", "driver_model", "lost_errors", "replica_class", "replica_options",
           "require_ray", "start_error", "task_error"]
