"""``--executor ray``: the model under test asked on a Ray cluster, the run directory kept here.

What stays in this process (the *driver*): planning, the run store (it is still the only
writer), the identity fingerprints, the judge (async calls, as in a local run) and scoring.
What goes to the cluster:

- **Frames** are decoded in Ray tasks through the same :class:`~mtvbench.media.cache.FrameCache`
  (its folder should be on storage every node sees, so each video is decoded once for every
  run and sweep; the cache is keyed by content, so a node-local folder is only slower). The
  frames go into Ray's object store once per video and every turn of the video reuses them.
  At most ``videos_in_flight`` videos per replica hold frames at a time.
- **Model calls** run on *replicas*: Ray actors that each create the backend once
  (``hf:``/``vllm:``: one model per replica with ``ray.num_gpus`` GPUs, tensor parallel inside
  it with ``tensor_parallel_size``; API backends: async actors whose calls are bounded by
  ``concurrency`` split over the replicas). Videos are dealt to the least busy replica, which
  runs a whole video: in golden/none context every pending round at once, in self context each
  dialogue's rounds in order with its own answers. Requests are built with the same
  :func:`~mtvbench.run.plan.build_request` as a local run, and the driver checks that each
  answer's prompt is the one it would have sent before it stores it.
- **Results stream back** (a Ray streaming generator per video) and are stored by
  ``runner.record`` as they arrive; scores equal a local run's.

**A replica or node that dies.** The turns of its videos that were not stored yet are sent to a
new replica (at most ``ray.max_retries`` times per video; in self context with the answers
stored so far). Nothing stored is asked again; a call that was in flight on the dead replica
is asked again (its answer never reached the store).

**Keys.** The judge runs here, so its key never leaves this process. The model's key (only
the variable the endpoint rules pick for the model's URL) is handed to each replica in memory,
as an argument of the actor, which puts it in its own process environment. It is never put in a
Ray ``runtime_env``: Ray's runtime-env agent writes every runtime env it creates, environment
variables included, to its log files on each node.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtvbench._version import __version__
from mtvbench.config import ContextMode, RaySettings, RunConfig
from mtvbench.data.schema import Dialogue, Round
from mtvbench.errors import MissingExtraError, MtvbenchError
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import FrameSettings, VideoError, VideoFrames
from mtvbench.models.backend import ModelBackend, abilities
from mtvbench.models.endpoints import gemini_endpoint, openai_endpoint, use_vertex
from mtvbench.models.registry import create_backend, parse_spec
from mtvbench.models.resilience import CircuitOpenError, breaker_of
from mtvbench.models.settings import BackendOptions
from mtvbench.prompts import InferenceStyle
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.executor import CallGate, NotSent, VideoJob
from mtvbench.run.plan import build_request, request_text
from mtvbench.util.files import describe_os_error

if TYPE_CHECKING:
    from mtvbench.run.runner import Runner

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
    restarted by Ray, nor are its calls retried: the driver knows what was stored and sends only
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


# ------------------------------------------------------------------------------ what travels
@dataclass
class DialogueWork:
    """Rounds of one dialogue a replica asks, in order, and the answers they build on (self context)."""

    dialogue: Dialogue
    rounds: list[Round]
    answers: dict[int, str]


@dataclass
class TurnDone:
    """One answer, streamed back to the driver."""

    dialogue_id: str
    index: int
    #: the text that was sent (plan.request_text), checked by the driver against its own
    prompt: str | list
    result: GenerationResult


@dataclass
class BreakerOpen:
    """The replica's endpoint breaker opened: nothing more is sent (stops the run, exit 3 or 2)."""

    message: str
    hint: str | None
    exit_code: int


@dataclass
class ReplicaSpec:
    """How a replica creates its backend (the key, if any, only in memory)."""

    spec: str
    options: dict[str, Any]
    env: dict[str, str]
    concurrency: int
    context: ContextMode
    style: InferenceStyle
    n_frames: int


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


class RemoteEngine:
    """What the driver holds for an ``hf:``/``vllm:`` model that only the replicas load."""

    needs_frames = True

    def __init__(self, spec: str):
        self.name = spec

    async def generate(self, request: Any) -> GenerationResult:  # pragma: no cover - never called
        raise RuntimeError(f"{self.name} runs on the Ray replicas, not in the driver")

    async def aclose(self) -> None:
        return None


def driver_model(spec: str, options: BackendOptions) -> ModelBackend:
    """The backend object the driver's runner holds: the real one for API backends and baselines
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
    """A Ray actor: one backend (one model for local engines), asking whole videos."""

    def __init__(self, spec: ReplicaSpec):
        os.environ.update(spec.env)  # this actor's own process; the key's variable only
        self.spec = spec
        self.model = create_backend(spec.spec, BackendOptions.model_validate(spec.options))
        self.stopped = False
        self.gate = CallGate(self.model, spec.concurrency, lambda: self.stopped)

    def ready(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "version": __version__,
                "name": self.model.name}

    def stop(self) -> None:
        self.stopped = True

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """One call (the construction's stages ask item by item)."""
        return await self.gate.call(request)

    async def run_video(self, work: list[DialogueWork], frames: VideoFrames | None) -> AsyncIterator[Any]:
        """Every round of ``work``; each result is yielded the moment it exists."""
        out: asyncio.Queue[Any] = asyncio.Queue()
        done = object()

        async def dialogue(w: DialogueWork) -> None:
            try:
                if self.spec.context != "self":  # every round is independent of the model's other answers
                    await asyncio.gather(*(self._turn(w, r, frames, None, out) for r in w.rounds))
                    return
                answers = dict(w.answers)
                for r in w.rounds:
                    res = await self._turn(w, r, frames, answers, out)
                    if res is None or res.outcome == "error":
                        return  # the next rounds need this answer
                    answers[r.index] = res.text
            finally:
                await out.put(done)

        tasks = [asyncio.create_task(dialogue(w)) for w in work]
        left = len(tasks)
        while left:
            item = await out.get()
            if item is done:
                left -= 1
            else:
                yield item
        await asyncio.gather(*tasks)  # an unexpected error surfaces here

    async def _turn(self, w: DialogueWork, r: Round, frames: VideoFrames | None, answers: dict[int, str] | None,
                    out: asyncio.Queue[Any]) -> GenerationResult | None:
        if self.stopped:
            return None
        request = build_request(w.dialogue, r, self.spec.context, frames, answers, self.spec.style,
                                self.spec.n_frames)
        try:
            result = await self.gate.call(request)
        except NotSent:
            return None
        except CircuitOpenError as e:
            self.stopped = True
            await out.put(BreakerOpen(e.message, e.hint, e.exit_code))
            return None
        await out.put(TurnDone(w.dialogue.id, r.index, request_text(request), result))
        return result

    async def close(self) -> None:
        await self.model.aclose()


# ------------------------------------------------------------------------------ driver side
def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """What a dead replica, worker or node looks like to the driver."""
    ex = ray.exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "ActorUnavailableError", "WorkerCrashedError",
                                          "NodeDiedError", "ObjectLostError", "OwnerDiedError",
                                          "LocalRayletDiedError") if hasattr(ex, n))


class ReplicaPool:
    """The replicas; a dead one is replaced in its slot."""

    def __init__(self, ray: Any, cls: Any, spec: ReplicaSpec, n: int):
        self.ray, self.cls, self.spec = ray, cls, spec
        self.slots = [self._new() for _ in range(n)]
        self.load = [0] * n
        self.nodes: dict[int, str] = {}
        self.replaced = 0

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
        return list(infos)

    def pick(self) -> int:
        return min(range(len(self.slots)), key=lambda i: self.load[i])

    def replace(self, i: int, dead: Any) -> None:
        if self.slots[i] is not dead:
            return  # another video of that replica replaced it already
        self.ray.kill(dead, no_restart=True)
        self.slots[i] = self._new()
        self.nodes.pop(i, None)
        self.replaced += 1

    def stop_all(self) -> None:
        for a in self.slots:
            a.stop.remote()

    def close(self) -> None:
        """Close every replica's backend (30 s at most), then end them."""
        self.ray.wait([a.close.remote() for a in self.slots], num_returns=len(self.slots), timeout=30)
        for a in self.slots:
            self.ray.kill(a, no_restart=True)


class RayExecutor:
    """The :class:`~mtvbench.run.executor.Executor` of ``--executor ray`` (see the module doc)."""

    name = "ray"

    def __init__(self, cfg: RunConfig):
        self.cfg = cfg
        self.ray = require_ray()
        self.pool: ReplicaPool | None = None
        #: replicas started, by node; retries after a replica died
        self.replicas: list[dict[str, Any]] = []
        self.retried_videos = 0
        self._cache_root: Path | None = None
        self._started = False

    @staticmethod
    def driver_model(spec: str, options: BackendOptions) -> ModelBackend:
        return driver_model(spec, options)

    def _pool(self, videos: int) -> ReplicaPool:
        cfg = self.cfg
        options, env = replica_options(cfg.backend_spec, cfg.model_settings.backend_options())
        n = default_replicas(self.ray, cfg.ray, videos)
        spec = ReplicaSpec(spec=cfg.backend_spec, options=options.model_dump(mode="json"), env=env,
                           concurrency=max(1, math.ceil(cfg.concurrency / n)), context=cfg.context,
                           style=cfg.inference, n_frames=cfg.frames)
        return ReplicaPool(self.ray, replica_class(self.ray, cfg.ray), spec, n)

    # running ---------------------------------------------------------------------------------
    def start(self, videos: int) -> None:
        """Join the cluster and start the replicas (models loaded) for at most ``videos`` videos;
        ``evaluate`` calls it before the run directory exists, so a replica that cannot start
        leaves nothing behind. :meth:`close` ends them."""
        if self.pool is not None:
            return
        self._started = connect(self.ray, self.cfg.ray_address)
        self.pool = self._pool(max(1, videos))
        self.replicas = self.pool.start()

    def close(self) -> None:
        """End the replicas, and leave Ray when :meth:`start` joined it."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self._started:
            self.ray.shutdown()
            self._started = False

    async def run(self, runner: Runner, jobs: Sequence[VideoJob]) -> None:
        if not jobs:
            return
        self.start(len(jobs))
        assert self.pool is not None
        nodes = len({r["node"] for r in self.replicas})
        runner.progress.note("ray", f"{len(self.replicas)} model replica(s) of {self.cfg.backend_spec} on {nodes} "
                                    "node(s)")
        self._decode = self.ray.remote(num_cpus=self.cfg.ray.task_cpus, num_returns=2)(decode_frames)
        self._cache_root = runner.cache.root
        held = asyncio.Semaphore(self.cfg.videos_in_flight * len(self.pool.slots))  # per replica
        await asyncio.gather(*(self._video(runner, job, held) for job in jobs))

    async def _video(self, runner: Runner, job: VideoJob, held: asyncio.Semaphore) -> None:
        try:
            async with held:
                if runner.stopped:
                    return
                await self._video_held(runner, job)
        except Exception as e:  # noqa: BLE001 - the runner decides: a user error stops the run, once
            runner.fail(e)

    async def _frames(self, runner: Runner, job: VideoJob, node: str | None) -> Any:
        """An object ref of the video's frames, decoded in a Ray task (on the replica's node when it
        has room); None when the model reads no frames, False when the video cannot be read."""
        if not abilities(runner.model).needs_frames:
            return None
        settings = self.cfg.frame_settings().model_dump(mode="json")
        opts: dict[str, Any] = {}
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=True)
        while True:
            root = self._cache_root
            status, frames = self._decode.options(**opts).remote(str(job.path), settings,
                                                                 None if root is None else str(root))
            failed = await status
            if failed is None:
                return frames
            kind, detail = failed
            if kind == "video":
                runner.video_failed(job, detail)
                return False
            assert root is not None
            self._cache_root = None  # the frame cache cannot be written: frames in memory from now on
            msg = (f"{describe_os_error(root, OSError(*detail), 'frame cache not writable')}; continuing with "
                   "frames in memory (decoded again by the next run)")
            runner.summary.warnings.append(msg)
            runner.progress.note("warning", msg)

    async def _video_held(self, runner: Runner, job: VideoJob) -> None:
        assert self.pool is not None
        pool, lost = self.pool, lost_errors(self.ray)
        slot = pool.pick()
        pool.load[slot] += 1
        try:
            frames = await self._frames(runner, job, pool.nodes.get(slot))
            if frames is False:
                return
            runner.progress.advance("frames")
            #: dialogue id -> (dialogue, rounds not stored yet)
            pending = {d.dialogue.id: (d.dialogue, list(d.rounds)) for d in job.dialogues}
            tries = 0
            while pending and not runner.stopped:
                actor = pool.slots[slot]
                try:
                    await self._stream(runner, actor, frames, pending)
                    return
                except lost:
                    if runner.stopped:
                        return
                    tries += 1
                    pool.replace(slot, actor)
                    self.retried_videos += 1
                    if tries > self.cfg.ray.max_retries:
                        left = sum(len(rs) for _, rs in pending.values())
                        runner.summary.failed_videos[job.video] = (
                            f"its model replica died {tries} times (ray.max_retries={self.cfg.ray.max_retries}); "
                            f"{left} turns not asked (run the same command again)")
                        runner.turns_not_reached(left)
                        return
                    runner.progress.note("ray", f"{job.video}: its model replica was lost; "
                                                f"{sum(len(rs) for _, rs in pending.values())} turns not stored yet "
                                                "go to a new replica")
        finally:
            pool.load[slot] -= 1

    def _work(self, runner: Runner, pending: dict[str, tuple[Dialogue, list[Round]]]) -> list[DialogueWork]:
        own = self.cfg.context == "self"
        work = []
        for d, rounds in pending.values():
            if not rounds:
                continue
            answers = {x.index: runner.answers[d.turn_id(x.index)] for x in d.earlier(rounds[0])} if own else {}
            work.append(DialogueWork(d, list(rounds), answers))
        return work

    async def _stream(self, runner: Runner, actor: Any, frames: Any,
                      pending: dict[str, tuple[Dialogue, list[Round]]]) -> None:
        """Ask the pending rounds on ``actor`` and record each answer as it arrives."""
        work = self._work(runner, pending)
        if not work:
            pending.clear()
            return
        gen = actor.run_video.options(num_returns="streaming").remote(work, frames)
        async for ref in gen:
            item = await ref
            if isinstance(item, BreakerOpen):
                runner.abort(CircuitOpenError(item.message, hint=item.hint, exit_code=item.exit_code))
                self.pool.stop_all()  # type: ignore[union-attr]
                continue
            self._record(runner, item, pending)
        pending.clear()  # what is left was not sent: the run stopped, or an earlier round failed (self context)

    def _record(self, runner: Runner, item: TurnDone, pending: dict[str, tuple[Dialogue, list[Round]]]) -> None:
        if item.dialogue_id not in pending:
            return  # its dialogue stopped here (an earlier answer could not be stored)
        d, rounds = pending[item.dialogue_id]
        i = next((k for k, r in enumerate(rounds) if r.index == item.index), None)
        if i is None:
            return
        rnd = rounds.pop(i)
        request = runner.request(d, rnd, None)
        if request_text(request) != item.prompt:  # never stored: it would be bound to a prompt that was not sent
            raise RayExecutorError(f"{d.turn_id(rnd.index)}: the prompt a model replica sent differs from the one "
                                   "this run would send; nothing of it was stored",
                                   hint="install the same mtvbench version on every node of the cluster")
        stored = runner.record(d, rnd, request, item.result)
        breaker = breaker_of(runner.model)  # an API model's calls are counted here too, across replicas
        if breaker is not None:
            if item.result.outcome == "error":
                breaker.failure(item.result.error)
            else:
                breaker.success()
            if breaker.is_open:
                runner.abort(breaker.error())
        if runner.stopped:
            self.pool.stop_all()  # type: ignore[union-attr]
        if not stored and self.cfg.context == "self":
            del pending[item.dialogue_id]
            if rounds:
                runner.turns_not_reached(len(rounds))  # the next rounds need this answer


__all__ = ["DialogueWork", "RayExecutor", "RayExecutorError", "RemoteEngine", "Replica", "ReplicaPool", "ReplicaSpec",
           "connect", "decode_frames", "default_replicas", "driver_model", "lost_errors", "replica_class",
           "replica_options", "require_ray", "start_error", "task_error"]
