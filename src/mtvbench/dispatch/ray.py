"""The dispatcher on a Ray cluster: ``run --executor ray`` and ``build --executor ray``.

What stays in this process (the *driver*): everything that decides a result. The runner or the builder
(planning, the run store or the build's artifacts and call journal, the fingerprints, the judge) is the
only code that stores anything, and the pipeline (:func:`~mtvbench.dispatch.run_videos`: which turn is
asked when, the self-context chain, the check whether the run stopped) is the local run's. What goes to the
cluster:

- **Model calls** run on *replicas*: Ray actors that each create the backend once (``hf:``/``vllm:``:
  one model per replica with ``ray.num_gpus`` GPUs, tensor parallel inside it with
  ``tensor_parallel_size``; API backends: async actors). Each replica has a call gate here
  (:class:`~mtvbench.dispatch.local.CallGate`: ``concurrency`` split over the replicas, a
  batching backend's ready turns sent as one batch), so a stopped run sends nothing more. A replica
  only answers: every result comes back to the driver, which records it the moment it arrives.
- **Frames** (run) are decoded in Ray tasks through the same :class:`~mtvbench.media.cache.FrameCache`
  (its folder should be on storage every node sees, so each video is decoded once for every run and
  sweep; the cache is keyed by content, so a node-local folder is only slower), on the node of the
  video's replica when it has a free CPU, else wherever one is free. They go into Ray's object store
  once per video; the replica resolves them once and every turn of the video reuses them. Videos are
  dealt to the least busy replica; at most ``videos_in_flight`` videos per replica keep frames at a time (4 when
  it is not set: the local executor's automatic number, :func:`~mtvbench.dispatch.video_slots`, is not used here).
- **Per-video computations** (build: split, key frames) run as Ray tasks (``ray.task_cpus``), and an
  object that is expensive to make (build: the detector) lives in a :class:`Holder` actor, made once
  and checked before anything is written (a factory that fails there fails as it would locally).

**Joining.** ``--ray-address`` is joined within ``ray.connect_timeout_s`` (an address where nothing
answers is one error naming it, exit 2, before anything is written; SIGINT/SIGTERM end the wait at
any time); without it a Ray instance is started on this machine for the run (:mod:`.raylocal`: no
key in its environment, no dashboard, its own ports, ended with the driver whatever ends it).

**Failures are classified as in one process.** A call's failure is classified in its replica by the same
code as in one process (:mod:`mtvbench.models.resilience`); what the replica's breaker counted comes back
with the answer and is counted on the driver's circuit breaker (the replicas' own never open), so the
exit codes and hints are the local run's (a key refused by every call: exit 2, "check its URL, key
and model name"). An error a replica raises is raised here as it was raised.

**Workers lost: finish or fail loudly, never hang.**

- A replica that dies: its slot gets a new replica, on the node the dead one held resources on
  (its CPUs come back there, so the other nodes keep theirs for the frame tasks); the calls in
  flight on it are asked there again (their answers never reached the runner); nothing recorded is
  asked again. A video whose replicas died (or whose frames were lost) more than ``ray.max_retries``
  times leaves its remaining turns for the next run (a build's call: an error result).
- A node that dies: while the living nodes cannot hold every replica plus ``ray.task_cpus`` for the
  frame tasks, the newest replicas are retired (checked every few seconds) and their videos move to
  the others; frames lost with the node are decoded again.
- A stall: when nothing comes back from the cluster (no answer, no frames, no replica up) for
  ``ray.stall_s`` while work waits, the waiting work is given up for this run and the run ends
  (exit 3, INCOMPLETE, resumable) with one warning that says what waited (calls per replica, videos
  waiting for frames, the cluster's free resources).

**Keys.** The judge runs in the driver, so its key never leaves this process. The model's key (only
the variable the endpoint rules pick for the model's URL; a local engine's Hugging Face token) is
handed to each replica in memory, as an argument of the actor, which puts it in its own process
environment. It is never put in a Ray ``runtime_env``: Ray's runtime-env agent writes every runtime
env it creates, environment variables included, to its log files on each node.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from mtvbench._version import __version__
from mtvbench.dispatch import (
    MIN_VIDEO_SLOTS,
    NotSent,
    TurnGivenUp,
    TurnRecorder,
    VideoJob,
    VideoState,
    cache_order,
    frame_cache_warning,
    run_videos,
)
from mtvbench.dispatch.local import CallGate
from mtvbench.dispatch.raylocal import LocalRay
from mtvbench.errors import MissingExtraError, MtvbenchError
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import FrameSettings, VideoError, VideoFrames
from mtvbench.models.backend import BackendBase, abilities, generate_many, video_done
from mtvbench.models.endpoints import gemini_endpoint, openai_endpoint, use_vertex
from mtvbench.models.registry import create_backend, parse_spec
from mtvbench.models.resilience import BreakerEvent, CircuitBreaker, breaker_events, breaker_of
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.util.signals import interruptible

if TYPE_CHECKING:
    from mtvbench.config import RaySettings
    from mtvbench.models.backend import ModelBackend

T = TypeVar("T")

#: backends that load a model (one per replica); the driver never loads them
LOCAL_ENGINES = ("hf", "vllm")
#: the Hugging Face token variables a local engine's replica gets (a gated checkpoint), in memory
HF_TOKEN_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
#: seconds between two looks of the watchdog at most (capacity, stall)
WATCH_EVERY_S = 2.0


def require_ray() -> Any:
    """The ``ray`` module, or one error naming the extra."""
    try:
        import ray
    except ImportError as e:
        raise MissingExtraError("--executor ray", "ray", e.name) from e
    return ray


class RayExecutorError(MtvbenchError):
    """The cluster cannot be used as asked (not reachable, no room for a replica)."""


class ClusterLostError(MtvbenchError):
    """The cluster lost the workers of a computation more often than ``ray.max_retries`` allows."""

    exit_code = 3


# ------------------------------------------------------------------------------ joining
JOIN_HINT = ("start it with `ray start --head` (and `ray start --address HEAD:PORT` on the other nodes), then pass "
             "--ray-address auto or HEAD:PORT; a cluster that is slow to answer: raise ray.connect_timeout_s")


@dataclass
class Connection:
    """This driver's connection to Ray, and the instance it started (None: it joined a cluster)."""

    ray: Any
    local: LocalRay | None = None

    def close(self) -> None:
        """Leave Ray, and end the instance started for the run, if any."""
        try:
            self.ray.shutdown()
        finally:
            if self.local is not None:
                self.local.stop()


def connect(ray: Any, address: str | None, settings: RaySettings) -> Connection | None:
    """Join the cluster at ``address`` (``auto``, ``HOST:PORT``), or start a Ray instance on this machine
    for the run when it is None (:mod:`.raylocal`); None when Ray was joined already (by the caller)."""
    if ray.is_initialized():
        return None
    if address:
        join(ray, address, settings.connect_timeout_s)
        return Connection(ray)
    local = LocalRay(settings.local)
    try:
        join(ray, local.start(), settings.connect_timeout_s, "the Ray instance started for the run")
    except BaseException:
        local.stop()
        raise
    return Connection(ray, local)


def join(ray: Any, address: str, timeout_s: float, shown: str | None = None) -> None:
    """``ray.init(address)`` within ``timeout_s`` seconds: nothing listening there, or no answer as a Ray
    cluster, is one :class:`RayExecutorError` naming ``shown`` (the address). The wait is short steps of
    this thread, so SIGINT and SIGTERM end it at any time."""
    shown = shown or address
    end = time.monotonic() + timeout_s
    target = bootstrap_address(ray, address, shown)
    host, _, port = target.rpartition(":")
    if "://" not in target and host and port.isdigit():
        _wait_listening(host.strip("[]"), int(port), end, shown, timeout_s)
    box: dict[str, BaseException | None] = {}

    def init() -> None:
        try:
            ray.init(address=target, log_to_driver=False, logging_level="ERROR")
            box["done"] = None
        except BaseException as e:  # noqa: BLE001 - said in the driver's thread
            box["done"] = e

    worker = threading.Thread(target=init, name="mtvbench-ray-join", daemon=True)
    worker.start()
    while "done" not in box:
        left = end - time.monotonic()
        if left <= 0:
            raise RayExecutorError(f"cannot join the Ray cluster at {shown}: no answer as a Ray cluster within "
                                   f"{timeout_s:g} s (ray.connect_timeout_s)", hint=JOIN_HINT)
        worker.join(min(left, 0.2))
    if box["done"] is not None:
        e = box["done"]
        raise RayExecutorError(f"cannot join the Ray cluster at {shown}: {type(e).__name__}: {_last_line(e)}",
                               hint=JOIN_HINT) from None


def bootstrap_address(ray: Any, address: str, shown: str) -> str:
    """``HOST:PORT`` of the head for ``auto`` (the cluster ``ray start`` started on this machine,
    or ``RAY_ADDRESS``); any other address as it is."""
    if address != "auto":
        return address
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # pragma: no cover - another Ray layout: Ray resolves it
        return address
    try:
        return str(canonicalize_bootstrap_address_or_die(address))
    except (ConnectionError, ValueError, OSError) as e:
        raise RayExecutorError(f"cannot join the Ray cluster at {shown}: {_last_line(e)}", hint=JOIN_HINT) from None


def _wait_listening(host: str, port: int, end: float, shown: str, timeout_s: float) -> None:
    """Until something accepts a connection at ``host:port`` (a head starting up gets the whole
    deadline), else one error."""
    while True:
        try:
            socket.create_connection((host, port), timeout=max(0.1, min(2.0, end - time.monotonic()))).close()
            return
        except OSError as e:
            last = e.strerror or type(e).__name__
        left = end - time.monotonic()
        if left <= 0:
            raise RayExecutorError(f"cannot join the Ray cluster at {shown}: nothing answered at {host}:{port} within "
                                   f"{timeout_s:g} s (ray.connect_timeout_s; last: {last})", hint=JOIN_HINT)
        time.sleep(min(0.5, left))


def _last_line(e: BaseException) -> str:
    """The last non-empty line of an error's text (Ray's errors carry the remote traceback above it)."""
    return next((x.strip() for x in reversed(str(e).strip().splitlines()) if x.strip()), type(e).__name__)


# ------------------------------------------------------------------------------ sizing
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
    why = no_room(ray, settings, n)
    if why is not None:
        raise RayExecutorError(why, hint="lower ray.replicas, ray.num_cpus, ray.task_cpus or ray.num_gpus "
                                         "(--ray-gpus), or add nodes")
    return n


def no_room(ray: Any, settings: RaySettings, n: int) -> str | None:
    """Why the cluster's living nodes cannot hold ``n`` replicas and ``task_cpus`` beside them (None: they can)."""
    have = ray.cluster_resources()
    cpus, gpus = float(have.get("CPU", 0)), float(have.get("GPU", 0))
    if n * settings.num_cpus + settings.task_cpus <= cpus and n * settings.num_gpus <= gpus:
        return None
    return (f"{n} model replica(s) of {settings.num_cpus:g} CPU(s) and {settings.num_gpus:g} GPU(s), plus "
            f"{settings.task_cpus:g} CPU(s) for the frame tasks, do not fit in the cluster ({cpus:g} CPUs, "
            f"{gpus:g} GPUs)")


def replica_class(ray: Any, settings: RaySettings) -> Any:
    """:class:`Replica` as a Ray actor with the resources of one replica. A replica is never
    restarted by Ray, nor are its calls retried: the driver knows what was recorded and sends only
    the rest to a new one."""
    return ray.remote(num_cpus=settings.num_cpus, num_gpus=settings.num_gpus, max_restarts=0, max_task_retries=0,
                      scheduling_strategy="SPREAD")(Replica)


def start_error(spec: str, e: BaseException) -> RayExecutorError:
    """A replica that could not be created (its backend failed on its node): the error's last line."""
    return RayExecutorError(f"a model replica of {spec} could not start on the cluster: {_last_line(e)}",
                            hint="its traceback is in the Ray logs of its node; every node needs the model's "
                                 "extras and its checkpoint at the same path")


def task_error(ray: Any, e: BaseException) -> BaseException:
    """The error a Ray task raised, as it was raised (a user error stays one)."""
    cause = getattr(e, "cause", None) if isinstance(e, ray.exceptions.RayTaskError) else None
    return cause if isinstance(cause, Exception) else e


def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """What a dead replica, worker or node (or an object lost with it) looks like to the driver."""
    ex = ray.exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "ActorUnavailableError", "WorkerCrashedError",
                                          "NodeDiedError", "ObjectLostError", "OwnerDiedError",
                                          "LocalRayletDiedError") if hasattr(ex, n))


def node_affinity(node: str, spill: bool) -> Any:
    """Prefer ``node``; elsewhere when it is gone, and with ``spill`` also when it has no room now."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=True, _spill_on_unavailable=spill)


# ------------------------------------------------------------------------------ what travels
@dataclass
class ReplicaSpec:
    """How a replica creates its backend (the key, if any, only in memory)."""

    spec: str
    options: dict[str, Any]
    env: dict[str, str]
    #: the frames of this many videos stay resolved in the replica (``videos_in_flight``)
    videos_in_flight: int = 1


@dataclass
class RemoteCall:
    """One call to a replica: the request, and the object ref of its video's frames (None: the request
    carries its own, or none). The ref is inside this record, so Ray hands it over unresolved."""

    request: GenerationRequest
    frames: Any = None


@dataclass
class Answered:
    """What a replica sends back: the result (or results) of a call, and what its breaker counted on
    the way (the driver counts the same on its one breaker)."""

    value: Any
    events: list[BreakerEvent] = field(default_factory=list)


class ReplicaSetup(NamedTuple):
    """What a replica is started with: the backend options it uses, and the environment variables it gets
    (in memory, as an argument of the actor: never through a Ray ``runtime_env``)."""

    options: BackendOptions
    env: dict[str, str]


def replica_options(spec: str, options: BackendOptions) -> ReplicaSetup:
    """The options a replica uses and the only key variable it gets: the URL and key the endpoint
    rules chose here (:mod:`mtvbench.models.endpoints`), so that a replica sends exactly what a local
    run would, whatever its node's environment holds. A local engine gets the Hugging Face token
    that is set here (for a gated checkpoint), if any."""
    prefix, _ = parse_spec(spec)
    if prefix in LOCAL_ENGINES:
        return ReplicaSetup(options, {k: v for k in HF_TOKEN_ENVS if (v := os.environ.get(k))})
    if prefix == "openai":
        ep = openai_endpoint(options)
    elif prefix == "gemini" and not (use_vertex() and not options.api_key_env):
        ep = gemini_endpoint(options)
    else:
        return ReplicaSetup(options, {})
    moved = options.model_copy(update={"base_url": ep.url, "api_key_env": ep.key_env})
    return ReplicaSetup(moved, {ep.key_env: ep.key} if ep.key_env else {})


class RemoteEngine(BackendBase):
    """What the driver holds for an ``hf:``/``vllm:`` model that only the replicas load."""

    def __init__(self, spec: str):
        self.name = spec

    async def generate(self, request: Any) -> GenerationResult:  # pragma: no cover - never called
        raise RuntimeError(f"{self.name} runs on the Ray replicas, not in the driver")


def driver_model(spec: str, options: BackendOptions) -> ModelBackend:
    """The backend object the driver's runner keeps: the real one for API backends and baselines
    (cheap; a missing key is found before the run directory exists), a stand-in for local engines."""
    if parse_spec(spec)[0] in LOCAL_ENGINES:
        return RemoteEngine(spec)
    return create_backend(spec, options)


# ------------------------------------------------------------------------------ cluster side
class FramesFailure(NamedTuple):
    """Why a frame task made no frames: ``kind`` ``"video"`` (the video cannot be read; ``detail`` is the
    message) or ``"cache"`` (the frame cache cannot be written; ``detail`` is ``(errno, strerror)``)."""

    kind: str
    detail: Any


def decode_frames(path: str, settings: dict[str, Any], cache_root: str | None,
                  rule: Callable[[int, float], Sequence[int]] | None = None
                  ) -> tuple[FramesFailure | None, VideoFrames | None]:
    """A Ray task with two results (Ray returns them as two object refs): a small status, None or a
    :class:`FramesFailure`, so that the driver learns the outcome without fetching the frames; and the frames
    of the video, read through the frame cache (decoded once per content and settings; with ``rule``, the
    runner's :meth:`~mtvbench.dispatch.TurnRecorder.frame_rule`, the frames it picks, as the local path decodes
    them)."""
    cache = FrameCache(Path(cache_root) if cache_root else None, memory_items=0)
    try:
        frame_settings = FrameSettings.model_validate(settings)
        if rule is not None:
            return None, cache.get_indices(Path(path), frame_settings, rule)
        return None, cache.get(Path(path), frame_settings)
    except VideoError as e:
        return FramesFailure("video", e.message), None
    except OSError as e:
        if cache_root is None:
            raise
        return FramesFailure("cache", (e.errno, e.strerror or str(e))), None


class Replica:
    """A Ray actor: one backend (one model for local engines), answering the calls the driver sends.
    Its backend's breaker never opens here: what it counts goes back with each answer (:class:`Answered`)
    and the driver's breaker decides, for every replica."""

    def __init__(self, spec: ReplicaSpec):
        os.environ.update(spec.env)  # this actor's own process; the key's variable only
        self.spec = spec
        self.model = create_backend(spec.spec, BackendOptions.model_validate(spec.options))
        breaker = breaker_of(self.model)
        if breaker is not None:
            breaker.threshold = sys.maxsize
        self._frames: OrderedDict[str, asyncio.Future[VideoFrames]] = OrderedDict()

    def ready(self) -> dict[str, Any]:
        """This replica's node, process, version and backend abilities, once its backend is created (the driver waits
        for it before sending calls)."""
        import ray

        breaker = breaker_of(self.model)
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "version": __version__,
                "name": self.model.name, "batch_size": abilities(self.model).batch_size,
                "url": breaker.url if breaker is not None else None, "breaker": breaker is not None,
                "prefix_cache": abilities(self.model).prefix_cache}

    async def generate(self, call: RemoteCall) -> Answered:
        """Answer one call; what the backend's breaker counted goes back with the result."""
        request = await self._request(call)
        with breaker_events() as events:
            result = await self.model.generate(request)
        return Answered(result, events)

    async def generate_batch(self, calls: list[RemoteCall]) -> Answered:
        """Answer a batch of calls at once (a batching backend); what its breaker counted goes back with the results."""
        requests = [await self._request(c) for c in calls]
        with breaker_events() as events:
            results = await generate_many(self.model, requests)
        return Answered(results, events)

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
        so their encoded parts are reused); the ``videos_in_flight`` videos used last are kept."""
        key = ref.hex()
        fetch = self._frames.get(key)
        if fetch is None:
            fetch = self._frames[key] = asyncio.ensure_future(ref)
            while len(self._frames) > max(1, self.spec.videos_in_flight):
                self._frames.popitem(last=False)
        self._frames.move_to_end(key)
        try:
            return await asyncio.shield(fetch)
        except Exception:
            self._frames.pop(key, None)  # not kept: the next turn fetches them again
            raise

    async def close(self) -> None:
        """Close the replica's backend."""
        await self.model.aclose()


class Holder:
    """A Ray actor holding one object made once on its node (construction: the detector); ``call`` runs
    ``fn(obj, *args)`` there. A user error of the factory (a detector that cannot be imported there) is
    kept and raised by ``ready`` and ``call``, so the driver reports it as a local run would."""

    def __init__(self, factory: Callable[..., Any], *args: Any):
        self.error: MtvbenchError | None = None
        try:
            self.obj = factory(*args)
        except MtvbenchError as e:
            self.error = e

    def ready(self) -> None:
        """Raise the factory's error, if making the object failed, so that the driver reports it before anything is
        written."""
        if self.error is not None:
            raise self.error

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(obj, *args)`` on the held object, on this actor's node."""
        self.ready()
        return fn(self.obj, *args)


# ------------------------------------------------------------------------------ driver side
class ReplicaLost(Exception):
    """The replica a call went to died (or its node did, or it was retired) before it answered."""

    def __init__(self, actor: Any):
        super().__init__("model replica lost")
        self.actor = actor


class FramesLost(Exception):
    """The frames a call needed were lost with their node (and could not be made again by Ray)."""


class _Abandoned(Exception):
    """The watchdog gave the video session's work up."""


class FramesNotMade(VideoError):
    """A video's frames were not made this run (the cluster stalled, or lost them too often)."""


class ReplicaModel:
    """What a slot's call gate sends to: the slot's current replica (its ``batch_size`` and ``prefix_cache``
    that replica's backend's)."""

    def __init__(self, pool: ReplicaPool, slot: int, batch_size: int, prefix_cache: bool = False):
        self.pool, self.slot, self.batch_size, self.prefix_cache = pool, slot, batch_size, prefix_cache
        self.name = pool.spec.spec

    async def generate(self, call: RemoteCall) -> GenerationResult:
        """Send one call to the slot's current replica."""
        return await self._send("generate", call)

    async def generate_batch(self, calls: Sequence[RemoteCall]) -> list[GenerationResult]:
        """Send a batch of calls to the slot's current replica."""
        return await self._send("generate_batch", list(calls))

    async def _send(self, method: str, arg: Any) -> Any:
        pool, ray = self.pool, self.pool.ray
        actor = pool.slots[self.slot]
        if actor is None:  # retired while the call waited for the gate
            raise ReplicaLost(None)
        try:
            answered = await getattr(actor, method).remote(arg)
        except ray.exceptions.RayTaskError as e:
            cause = task_error(ray, e)
            if isinstance(cause, pool.lost):
                raise FramesLost from None
            raise cause from None
        except pool.lost as e:
            raise ReplicaLost(actor) from e
        pool.answered(self.slot, actor, answered.events)
        return answered.value


class ReplicaPool:
    """The replicas of one model, one call gate each; a dead one is replaced in its slot, one the
    cluster no longer holds is retired (module docstring). ``breaker``: the driver's breaker that
    counts what the replicas' breakers counted (None: the backend has none)."""

    def __init__(self, ray: Any, cls: Any, spec: ReplicaSpec, n: int, concurrency: int, settings: RaySettings):
        self.ray, self.cls, self.spec, self.settings = ray, cls, spec, settings
        self.lost = lost_errors(ray)
        self.slots: list[Any | None] = [self._new() for _ in range(n)]
        self.load = [0] * n
        self.nodes: dict[int, str] = {}
        self.gates: list[CallGate[RemoteCall]] = []
        self.breaker: CircuitBreaker | None = None
        #: calls (or batches) in flight on each replica: ``concurrency`` split over them
        self.concurrency = max(1, math.ceil(concurrency / n))
        self.replaced = 0
        #: when each slot's replica was started, and whether it answered since
        self.started = [time.monotonic()] * n
        self.up = [False] * n
        #: slots retired (why), and the replicas retired on purpose (not deaths)
        self.retired: dict[int, str] = {}
        self._retired_actors: list[Any] = []
        #: the last time anything came back from the replicas (an answer, a replica up)
        self.progress_at = time.monotonic()
        self.note: Callable[[str], None] = lambda message: None
        self._closed = False

    def _new(self, node: str | None = None) -> Any:
        if node is None:
            return self.cls.remote(self.spec)
        return self.cls.options(scheduling_strategy=node_affinity(node, spill=False)).remote(self.spec)

    def start(self) -> list[dict[str, Any]]:
        """Wait until every replica is up (its backend created, its model loaded; ``ray.stall_s`` at most);
        their node, pid, mtvbench version and backend name. A replica that cannot start is one
        :class:`RayExecutorError`."""
        infos = self._ready()
        other = sorted({info["version"] for info in infos} - {__version__})
        if other:
            raise RayExecutorError(f"the cluster's nodes run mtvbench {', '.join(other)}, this driver {__version__}",
                                   hint="install the same mtvbench version on every node")
        self.nodes = {i: info["node"] for i, info in enumerate(infos)}
        self.gates = [CallGate(ReplicaModel(self, i, info["batch_size"], info["prefix_cache"]), self.concurrency)
                      for i, info in enumerate(infos)]
        self.up = [True] * len(infos)
        self.progress()
        return list(infos)

    def _ready(self) -> list[dict[str, Any]]:
        """The ready info of every replica; one that died starting (its process or node, not its backend) is
        started again, ``ray.max_retries`` times at most."""
        ray, end, deaths = self.ray, time.monotonic() + self.settings.stall_s, 0
        infos: list[dict[str, Any]] = [{} for _ in self.slots]
        pending = {a.ready.remote(): i for i, a in enumerate(self.slots)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=min(0.5, max(0.0, end - time.monotonic())))
            if not done and time.monotonic() < end:  # short waits: SIGINT is seen between them
                continue
            if not done:
                raise RayExecutorError(f"the model replicas of {self.spec.spec} were not up within "
                                       f"{self.settings.stall_s:g} s (ray.stall_s): {free_resources(ray)}",
                                       hint="lower ray.replicas or the resources of a replica, or raise "
                                            "ray.stall_s for a model that loads slowly")
            i = pending.pop(done[0])
            try:
                infos[i] = ray.get(done[0])
            except ray.exceptions.RayActorError as e:
                if getattr(e, "actor_init_failed", False) or deaths >= self.settings.max_retries:
                    raise start_error(self.spec.spec, e) from None
                deaths += 1
                ray.kill(self.slots[i], no_restart=True)
                self.slots[i] = self._new()
                pending[self.slots[i].ready.remote()] = i
        return infos

    def stop_when(self, stopped: Callable[[], bool]) -> None:
        """Nothing more is sent once ``stopped()`` is true."""
        for gate in self.gates:
            gate.stopped = stopped

    def progress(self) -> None:
        """Note that something came back from the cluster now (what the stall watchdog reads)."""
        self.progress_at = time.monotonic()

    def answered(self, slot: int, actor: Any, events: list[BreakerEvent]) -> None:
        """A call came back from ``actor``: count what its breaker counted, note the progress."""
        if self.breaker is not None:
            for event in events:
                event.apply(self.breaker)
        if self.slots[slot] is actor:
            self.up[slot] = True
        self.progress()

    def live(self) -> list[int]:
        """The slots that have a replica."""
        return [i for i, a in enumerate(self.slots) if a is not None]

    def pick(self) -> int | None:
        """The least busy living slot (None: every one was retired)."""
        live = self.live()
        return min(live, key=lambda i: self.load[i]) if live else None

    def none_left(self) -> str:
        """The message when no replica is left, with why each slot was retired."""
        return "no model replica is left on the cluster (" + "; ".join(self.retired.values()) + ")"

    def retired_on_purpose(self, actor: Any) -> bool:
        """Whether ``actor`` was retired by the pool (its loss is not a death to count)."""
        return any(a is actor for a in self._retired_actors)

    def replace(self, i: int, dead: Any) -> bool:
        """A new replica in slot ``i`` unless ``dead`` was replaced already (True when this call replaced
        it): on ``dead``'s node, whose resources come back; the slot is retired instead when the cluster
        no longer holds its replicas with room for the frame tasks (another slot is left)."""
        if self.slots[i] is not dead:
            return False
        self.ray.kill(dead, no_restart=True)
        node = self.nodes.pop(i, None)
        why = no_room(self.ray, self.settings, len(self.live()))
        if why is not None and len(self.live()) > 1:
            self._retire(i, why)
            return True
        self.slots[i] = self._new(node)
        self.started[i], self.up[i] = time.monotonic(), False
        self.replaced += 1
        return True

    def fit(self) -> None:
        """Retire the newest replicas while the living nodes cannot hold them with room for the frame tasks
        (a node was lost); the last one stays."""
        live = self.live()
        while len(live) > 1:
            why = no_room(self.ray, self.settings, len(live))
            if why is None:
                return
            newest = max(live, key=lambda j: self.started[j])
            self._retire(newest, why)
            live.remove(newest)

    def _retire(self, i: int, why: str) -> None:
        actor, self.slots[i] = self.slots[i], None
        self.nodes.pop(i, None)
        self.retired[i] = why
        if actor is not None:
            self._retired_actors.append(actor)
            self.ray.kill(actor, no_restart=True)
        self.note(f"model replica {i + 1} retired (its videos go to the others): {why}")

    def waiting(self) -> list[str]:
        """What each slot is doing, for a stall report."""
        now, out = time.monotonic(), []
        for i, actor in enumerate(self.slots):
            if actor is None:
                out.append(f"replica {i + 1} retired")
                continue
            state = (f"on node {self.nodes[i][:12]}" if i in self.nodes else
                     "up" if self.up[i] else f"started {now - self.started[i]:.0f} s ago, not up yet")
            busy = self.gates[i].in_flight if i < len(self.gates) else 0
            out.append(f"replica {i + 1} ({state}): {busy} call(s) in flight")
        return out

    async def close(self) -> None:
        """Close the backend of every replica that is up (30 s at most), then end them all."""
        if self._closed:
            return
        self._closed = True
        up = [a for i, a in enumerate(self.slots) if a is not None and self.up[i]]
        closing = asyncio.gather(*(a.close.remote() for a in up), return_exceptions=True)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(closing, 30)
        for a in self.slots:
            if a is not None:
                self.ray.kill(a, no_restart=True)


def free_resources(ray: Any) -> str:
    """The cluster's free and total CPUs and GPUs, in words."""
    free, total = ray.available_resources(), ray.cluster_resources()
    parts = [f"{float(free.get(k, 0)):g} of {float(total.get(k, 0)):g} {k}s free" for k in ("CPU", "GPU")
             if total.get(k)]
    return "the cluster has " + (", ".join(parts) or "no CPUs or GPUs")


class RemoteBackend(BackendBase):
    """A :class:`~mtvbench.models.backend.ModelBackend` whose calls run on a pool's replicas (least busy
    first; construction's model roles); a call whose replica died is asked again on its replacement.
    Its breaker counts what the replicas' breakers counted, and opens as a local backend's does."""

    def __init__(self, pool: ReplicaPool, name: str, max_retries: int):
        self.pool, self.name, self.max_retries = pool, name, max_retries
        self.breaker = pool.breaker

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """One call of a construction role, sent to the least busy replica; a replica that dies is replaced and the
        call sent again, up to ``ray.max_retries`` deaths."""
        died = 0
        while True:
            if self.breaker is not None:
                self.breaker.check()  # open: nothing more is sent (CircuitOpenError), as locally
            slot = self.pool.pick()
            if slot is None:
                return GenerationResult(outcome="error", error=f"{self.name}: {self.pool.none_left()}")
            self.pool.load[slot] += 1
            try:
                return await self.pool.gates[slot].call(RemoteCall(request))
            except ReplicaLost as e:
                if e.actor is not None and not self.pool.retired_on_purpose(e.actor):
                    died += 1
                    self.pool.replace(slot, e.actor)
                if died > self.max_retries:
                    return GenerationResult(outcome="error", error=f"{self.name}: the model replica died {died} times "
                                            f"(ray.max_retries={self.max_retries})")
            finally:
                self.pool.load[slot] -= 1

    async def aclose(self) -> None:
        """Nothing to close here: the replicas end with the dispatcher that started them."""
        return None  # its replicas end with the dispatcher that started them


class _RaySession:
    """The video session of one video of a run on the cluster: its replica slot, its frames decoded in a Ray
    task, its calls through the slot's call gate, its replicas' deaths (and lost frames) counted, and its
    waiting work given up by the watchdog when the cluster stalls."""

    def __init__(self, d: RayDispatcher, state: VideoState, recorder: TurnRecorder, pool: ReplicaPool):
        self.d, self.state, self.recorder, self.pool = d, state, recorder, pool
        self.slot = pool.pick()
        if self.slot is not None:
            pool.load[self.slot] += 1
        self.dead: list[Any] = []
        self.tries = 0
        self.given_up: str | None = d.stalled or (None if self.slot is not None else self.pool.none_left())
        self.reported = False
        self.frames_ref: Any = None
        self.waiting_frames = False
        self.calls = 0
        self._redecode: asyncio.Future[Any] | None = None
        self._sent_to: list[Any] = []
        self._abandoned: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        d.sessions.add(self)

    async def _or_abandoned(self, aw: Awaitable[T]) -> T:
        """``aw``, unless the watchdog gives this session up first (:class:`_Abandoned`)."""
        task = asyncio.ensure_future(aw)
        try:
            await asyncio.wait([task, self._abandoned], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
        raise _Abandoned

    def abandon(self, why: str) -> None:
        """The watchdog gives this video's waiting work up for this run."""
        self.given_up = self.given_up or why
        if not self._abandoned.done():
            self._abandoned.set_result(None)

    # frames ---------------------------------------------------------------------------
    async def frames(self, job: VideoJob) -> Any:
        """An object ref of the video's frames, decoded in a Ray task (on the replica's node when it
        has room); None when the model reads no frames. Under ``--sampling clip`` the frames themselves:
        the runner picks each turn's out of them and they go inside its request."""
        if self.given_up is not None:
            self.reported = True
            raise FramesNotMade(self.given_up)
        if not abilities(self.d.model).needs_frames:
            return None
        try:
            self.frames_ref = await self._decode(job)
            if self.recorder.frame_rule(job.video) is None:
                return self.frames_ref
            while True:  # --sampling clip: fetched here, decoded again if they were lost on the way
                try:
                    return await self._or_abandoned(self.frames_ref)
                except _Abandoned:
                    raise FramesNotMade(self.given_up or "given up") from None
                except self.pool.lost as e:
                    if not self._count(f"its frames were lost ({type(e).__name__})"):
                        raise FramesNotMade(self.given_up or "its frames were lost") from None
                    self.frames_ref = await self._decode(job)
        except FramesNotMade:
            self.reported = True
            raise
        return self.frames_ref

    async def _decode(self, job: VideoJob) -> Any:
        settings = self.d.frame_settings.model_dump(mode="json") if self.d.frame_settings else {}
        while True:
            if self.given_up is not None:
                raise FramesNotMade(self.given_up)
            node = self.pool.nodes.get(self.slot) if self.slot is not None else None
            opts = {} if node is None else {"scheduling_strategy": node_affinity(node, spill=True)}
            root = self.d.cache_root
            status, frames = self.d.decode.options(**opts).remote(str(job.path), settings,
                                                                  None if root is None else str(root),
                                                                  self.recorder.frame_rule(job.video))
            self.waiting_frames = True
            try:
                failed = await self._or_abandoned(status)
            except _Abandoned:
                raise FramesNotMade(self.given_up or "given up") from None
            except self.pool.ray.exceptions.RayTaskError as e:
                raise task_error(self.pool.ray, e) from None
            except self.pool.lost as e:  # its worker or node died after Ray's own retries
                self._count(f"the task decoding its frames was lost ({type(e).__name__})")
                continue
            finally:
                self.waiting_frames = False
            self.pool.progress()
            if failed is None:
                return frames
            if failed.kind == "video":
                raise VideoError(failed.detail)
            assert root is not None
            self.d.cache_root = None  # the frame cache cannot be written: frames in memory from now on
            self.recorder.warn(frame_cache_warning(root, OSError(*failed.detail)))

    async def _frames_lost(self, ref: Any) -> None:
        """The frames ``ref`` were lost with their node: decoded again, once for every call that found out."""
        if ref is self.frames_ref and self._redecode is None:
            if not self._count("its frames were lost with their node"):
                return
            self._redecode = asyncio.ensure_future(self._decode(self.state.job))
        if self._redecode is None:
            return
        try:
            self.frames_ref = await self._redecode
        except VideoError as e:
            self.given_up = self.given_up or e.message
        finally:
            self._redecode = None

    def request_frames(self, frames: Any) -> VideoFrames | None:
        # they travel beside the request, as an object ref; under --sampling clip each turn's go inside it
        return frames if isinstance(frames, VideoFrames) else None

    # calls ------------------------------------------------------------------------------
    async def call(self, request: GenerationRequest, frames: Any, first: bool = False) -> GenerationResult:
        self.calls += 1
        try:
            while True:
                if self.given_up is not None:
                    raise TurnGivenUp
                if self.slot is None or self.pool.slots[self.slot] is None:
                    self._move()
                    continue
                call = RemoteCall(request, None if frames is None or isinstance(frames, VideoFrames)
                                  else self.frames_ref)
                try:
                    result = await self._or_abandoned(self.pool.gates[self.slot].call(call, first))
                except _Abandoned:
                    raise TurnGivenUp from None
                except ReplicaLost as e:
                    if self.recorder.stopped:
                        raise NotSent from None
                    self._lost(e.actor)
                    continue
                except FramesLost:
                    if self.recorder.stopped:
                        raise NotSent from None
                    await self._frames_lost(call.frames)
                    continue
                actor = self.pool.slots[self.slot]
                if not any(a is actor for a in self._sent_to):
                    self._sent_to.append(actor)
                return result
        finally:
            self.calls -= 1

    def _count(self, why: str) -> bool:
        """One more try of this video; False (and the video given up) past ``ray.max_retries``."""
        self.tries += 1
        most = self.d.settings.max_retries
        if self.tries > most:
            self.given_up = self.given_up or f"{why}, {self.tries} times (ray.max_retries={most})"
            return False
        return True

    def _lost(self, actor: Any) -> None:
        """The replica of a call is gone: a new one in the slot (a death counts as a try of the video),
        or the video moves to another slot (its slot was retired)."""
        if actor is not None and not self.pool.retired_on_purpose(actor) and not any(a is actor for a in self.dead):
            self.dead.append(actor)
            assert self.slot is not None
            self.pool.replace(self.slot, actor)
            self.d.retried_videos += 1
            if self._count("its model replica died"):
                self.recorder.progress.note("ray", f"{self.state.job.video}: its model replica was lost; "
                                                 f"{self.state.left} turns not stored yet go to a new replica")
        if self.slot is None or self.pool.slots[self.slot] is None:
            self._move()

    def _move(self) -> None:
        """To the least busy living slot (none left: the video is given up)."""
        new = self.pool.pick()
        if new is None:
            self.given_up = self.given_up or self.pool.none_left()
            return
        if self.slot is not None:
            self.pool.load[self.slot] -= 1
        self.slot = new
        self.pool.load[new] += 1

    async def video_done(self, frames: Any) -> None:
        """Its replica frees what it kept for the video (a replica that died keeps nothing any more)."""
        actor = self.pool.slots[self.slot] if self.slot is not None else None
        if frames is None or actor is None or not any(a is actor for a in self._sent_to):
            return
        try:
            await self._or_abandoned(actor.end_video.remote([self.frames_ref]))
        except (_Abandoned, *self.pool.lost):
            return
        except self.pool.ray.exceptions.RayTaskError as e:
            cause = task_error(self.pool.ray, e)
            if not isinstance(cause, self.pool.lost):
                raise cause from None

    def close(self) -> None:
        if self.slot is not None:
            self.pool.load[self.slot] -= 1
        self.d.sessions.discard(self)
        if self.given_up is not None and not self.reported and self.state.pending:
            self.recorder.video_failed(self.state.job.video, f"{self.given_up}; {self.state.pending} turns left "
                                                             "pending (run the same command again)")


class RayDispatcher:
    """The :class:`~mtvbench.dispatch.Dispatcher` on a Ray cluster (see the module docstring).
    Ray is joined (or started) on first use; :meth:`aclose` leaves it when this dispatcher joined it."""

    name = "ray"
    #: False: the replicas' failures are counted on the driver model's own breaker (:class:`Answered`), as a
    #: local backend counts them; the runner counts only for a backend without a breaker (``hf:``, ``vllm:``)
    remote_calls = False

    def __init__(self, address: str | None, settings: RaySettings, concurrency: int, *,
                 videos_in_flight: int | None = None,
                 frame_settings: FrameSettings | None = None, cache_root: Path | None = None,
                 cache_order: bool | None = None):
        self.ray = require_ray()
        self.address, self.settings, self.concurrency = address, settings, concurrency
        #: video slots per replica (None: :data:`~mtvbench.dispatch.MIN_VIDEO_SLOTS`)
        self.videos_in_flight = videos_in_flight or MIN_VIDEO_SLOTS
        #: the cache-aware order (None: the replicas' backend's default, :func:`~mtvbench.dispatch.cache_order`)
        self.cache_order = cache_order
        self.frame_settings, self.cache_root = frame_settings, cache_root
        self.model: ModelBackend | None = None
        self._spec: tuple[str, BackendOptions] | None = None
        self._joined: bool | None = None
        self._connection: Connection | None = None
        self.pool: ReplicaPool | None = None
        self._pools: list[ReplicaPool] = []
        self._holders: dict[tuple[Any, ...], Any] = {}
        self.decode: Any = None
        #: the videos in flight, and why the run's waiting work was given up (the watchdog found a stall)
        self.sessions: set[_RaySession] = set()
        self.stalled: str | None = None
        #: what ran on the cluster: replicas started (their ready info), per-video tasks, calls on holder actors,
        #: videos sent to a new replica after theirs died
        self.replicas: list[dict[str, Any]] = []
        self.tasks = 0
        self.holder_calls = 0
        self.retried_videos = 0

    def _ray(self) -> Any:
        if self._joined is None:
            with interruptible():
                self._connection = connect(self.ray, self.address, self.settings)
            self._joined = self._connection is not None
        return self.ray

    def _pool(self, spec: str, options: BackendOptions, most: int, breaker: CircuitBreaker | None = None
              ) -> ReplicaPool:
        ray = self._ray()
        opts, env = replica_options(spec, options)
        n = default_replicas(ray, self.settings, most)
        pool = ReplicaPool(ray, replica_class(ray, self.settings),
                           ReplicaSpec(spec=spec, options=opts.model_dump(mode="json"), env=env,
                                       videos_in_flight=self.videos_in_flight), n, self.concurrency, self.settings)
        self._pools.append(pool)
        with interruptible():
            infos = pool.start()
        self.replicas += infos
        pool.breaker = breaker
        if breaker is None and infos[0]["breaker"]:  # a backend of construction: its own breaker, here
            pool.breaker = CircuitBreaker(infos[0]["name"], infos[0]["url"], opts.breaker_threshold)
        return pool

    # evaluation --------------------------------------------------------------------------
    def driver_model(self, spec: str, options: BackendOptions) -> ModelBackend:
        """The backend object the runner keeps in the driver (:func:`driver_model`); the replicas are started by
        :meth:`start`."""
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
        self.pool = self._pool(*self._spec, max(1, videos), breaker=breaker_of(self.model))

    async def run(self, jobs: Sequence[VideoJob], recorder: TurnRecorder) -> None:
        """Run every job with its turns sent to the replicas and its frames decoded in Ray tasks; each result goes to
        ``recorder.record`` in the driver as it arrives (see the module docstring)."""
        if not jobs:
            return
        await self.start(len(jobs))
        pool = self.pool
        assert pool is not None
        nodes = len({r["node"] for r in self.replicas})
        recorder.progress.note("ray", f"{len(self.replicas)} model replica(s) of {pool.spec.spec} on {nodes} node(s)")
        self.decode = self.ray.remote(num_cpus=self.settings.task_cpus, num_returns=2)(decode_frames)
        pool.stop_when(lambda: recorder.stopped)
        pool.note = partial(recorder.progress.note, "ray")
        pool.progress()

        def open_session(state: VideoState) -> _RaySession:
            return _RaySession(self, state, recorder, pool)

        await run_videos(jobs, recorder, self.videos_in_flight * len(pool.slots), open_session,
                         watchdog=partial(self._watch, recorder, pool),
                         first_alone=cache_order(self.cache_order, pool.gates[0].model))

    async def _watch(self, recorder: TurnRecorder, pool: ReplicaPool) -> None:
        """Beside the videos: retire the replicas the cluster no longer holds (:meth:`ReplicaPool.fit`),
        and give the waiting work up when nothing came back for ``ray.stall_s``."""
        every = min(WATCH_EVERY_S, self.settings.stall_s / 4)
        while True:
            await asyncio.sleep(every)
            pool.fit()
            idle = time.monotonic() - pool.progress_at
            if self.sessions and idle > self.settings.stall_s:
                self.stalled = self._stall_report(pool, idle)
                recorder.warn(self.stalled)
                for session in list(self.sessions):
                    session.abandon(f"given up after {idle:.0f} s without progress on the cluster (ray.stall_s)")
                return

    def _stall_report(self, pool: ReplicaPool, idle: float) -> str:
        waiting = pool.waiting()
        frames = sorted(session.state.job.video for session in self.sessions if session.waiting_frames)
        if frames:
            waiting.append(f"{len(frames)} video(s) waiting for their frames ({', '.join(frames[:5])})")
        calls = sum(session.calls for session in self.sessions)
        return (f"nothing came back from the Ray cluster for {idle:.0f} s (ray.stall_s={self.settings.stall_s:g}) "
                f"while {calls} turn(s) of {len(self.sessions)} video(s) waited: " + "; ".join(waiting)
                + f"; {free_resources(self.ray)}. The waiting work is given up for this run: run the same command "
                  "again")

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
        except lost_errors(ray) as e:  # after Ray's own retries of the task
            raise ClusterLostError(f"the cluster lost the worker of {getattr(fn, '__name__', 'a task')} "
                                   f"({type(e).__name__}): {_last_line(e)}",
                                   hint="run the same command again: what is done is kept") from None

    def holder(self, factory: Callable[..., Any], *args: Any, num_gpus: float = 0, what: str = "the detector") -> Any:
        """A :class:`Holder` actor of ``factory(*args)`` (made once per factory and arguments), up: a user
        error of the factory is raised here as it was raised (as a local build raises it), another failure
        to start it is one :class:`RayExecutorError`."""
        key = (factory, *args)
        if key not in self._holders:
            ray = self._ray()
            cls = ray.remote(num_cpus=self.settings.task_cpus, num_gpus=num_gpus)(Holder)
            actor = cls.remote(factory, *args)
            try:
                with interruptible():
                    ray.get(actor.ready.remote(), timeout=self.settings.stall_s)
            except ray.exceptions.RayTaskError as e:
                ray.kill(actor, no_restart=True)
                raise task_error(ray, e) from None
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as e:
                ray.kill(actor, no_restart=True)
                timed_out = isinstance(e, ray.exceptions.GetTimeoutError)
                why = (f"not up within {self.settings.stall_s:g} s (ray.stall_s): {free_resources(ray)}" if timed_out
                       else _last_line(e))
                raise RayExecutorError(f"{what} could not start on the cluster: {why}",
                                       hint="its traceback is in the Ray logs of its node; every node needs the "
                                            "extras and modules it imports") from None
            self._holders[key] = actor
        return self._holders[key]

    async def call_holder(self, holder: Any, fn: Callable[..., T], *args: Any) -> T:
        """``fn(obj, *args)`` on the holder's object, where it lives."""
        self.holder_calls += 1
        try:
            return await holder.call.remote(fn, *args)
        except self.ray.exceptions.RayTaskError as e:
            raise task_error(self.ray, e) from None
        except lost_errors(self.ray) as e:
            raise ClusterLostError(f"the cluster lost the actor holding {getattr(fn, '__name__', 'an object')}'s "
                                   f"object ({type(e).__name__})",
                                   hint="run the same command again: what is done is kept") from None

    # ending -------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """End the replicas and holder actors, and leave Ray (and end the instance started for the run)
        when this dispatcher joined it."""
        try:
            for pool in self._pools:
                await pool.close()
            for actor in self._holders.values():
                self.ray.kill(actor, no_restart=True)
        finally:
            self._pools, self.pool, self._holders = [], None, {}
            connection, self._connection, self._joined = self._connection, None, None
            if connection is not None:
                connection.close()


__all__ = ["Answered", "ClusterLostError", "Connection", "FramesFailure", "FramesLost", "FramesNotMade",
           "HF_TOKEN_ENVS", "Holder", "LOCAL_ENGINES", "RayDispatcher", "RayExecutorError", "RemoteBackend",
           "RemoteCall", "RemoteEngine", "Replica", "ReplicaLost", "ReplicaModel", "ReplicaPool", "ReplicaSetup",
           "ReplicaSpec", "bootstrap_address", "connect", "decode_frames", "default_replicas", "driver_model",
           "free_resources", "join", "lost_errors", "no_room", "node_affinity", "replica_class", "replica_options",
           "require_ray", "start_error", "task_error"]
