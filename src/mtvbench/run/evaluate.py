"""One evaluation end to end: load -> plan -> frames -> model -> judge -> scores.

Order matters for what a failure leaves behind: the dataset, the task selection, the
videos' content keys and both backends (API key, optional extras) are checked before the
run directory is touched, so an early error leaves no half-made directory. Then the run
directory (:class:`~mtvbench.run.rundir.RunDirectory`) is claimed (its lock: one writer per
directory), the store's format, the run identity and the dataset are checked, and only then
are ``config.yaml`` and ``benchmark.json`` written. What a run holds (the dispatcher, the
backends, the lock, the store session) is entered on one exit stack and released in the
reverse order on every way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from mtvbench.config import RunConfig
from mtvbench.data.layout import checklist_path, mtqa_path
from mtvbench.data.official import load_benchmark
from mtvbench.data.schema import Benchmark, NotABenchmark
from mtvbench.dispatch import Dispatcher, Progress
from mtvbench.dispatch.local import LocalDispatcher
from mtvbench.errors import InputError, MtvbenchError, RunDirError
from mtvbench.extras import require_backend
from mtvbench.judge.factory import create_judge
from mtvbench.judge.protocol import Judge
from mtvbench.media.cache import FrameCache, fingerprint
from mtvbench.media.frames import VideoError
from mtvbench.models.backend import ModelBackend, abilities, delete_left, track_resources
from mtvbench.models.resilience import CircuitOpenError
from mtvbench.protocol import EvalProtocol, get_protocol
from mtvbench.records import ProviderResource
from mtvbench.run.identity import RunKeys
from mtvbench.run.replay import stored_answers
from mtvbench.run.rescore import score_dir
from mtvbench.run.rundir import RunDirectory, RunSnapshot
from mtvbench.run.runner import Runner, RunSummary
from mtvbench.run.store import RunStore
from mtvbench.scoring.aggregate import Scores
from mtvbench.util.paths import cache_dir
from mtvbench.util.signals import run_main


class RunningLoopError(MtvbenchError, RuntimeError):
    """:func:`evaluate` was called where an event loop is running (use :func:`evaluate_async`)."""


def default_cache_dir() -> Path:
    return cache_dir("frames")


def check_tasks(bench: Benchmark, cfg: RunConfig) -> None:
    """Every selected task must be scorable: a task without dialogues or checklists would
    silently leave the paper's Overall undefined. Leaving it out is a choice (``--tasks``)."""
    problems = []
    for t in cfg.selected_tasks:
        dialogues = bench.by_task(t)
        checklist = checklist_path(bench.root, t)
        if not dialogues:
            problems.append(f"{t.abbr} ({t.value}): no dialogues ({mtqa_path(bench.root, t)} is missing or empty)")
        elif not checklist.exists():
            problems.append(f"{t.abbr} ({t.value}): checklist file missing: {checklist}")
        elif not any(d.scored_turns for d in dialogues):
            problems.append(f"{t.abbr} ({t.value}): no checklist entry of {checklist} is judged under --protocol "
                            f"{cfg.protocol_name}")
    if problems:
        usable = [t.abbr for t in cfg.selected_tasks if any(d.scored_turns for d in bench.by_task(t))]
        hint = ("to evaluate a subset on purpose, select it with --tasks"
                + (f" (e.g. --tasks {','.join(usable)}); the Overall is then reported as partial" if usable else ""))
        raise InputError(f"{bench.root}: {len(problems)} selected task(s) cannot be scored:\n" + "\n".join(problems),
                         hint=hint)


def _video_key(path: Path) -> str:
    try:
        return fingerprint(path)
    except VideoError:  # unreadable now: its turns fail when the frames are read, and are asked again later
        return "unreadable"


def dispatcher_for(cfg: RunConfig, cache_root: Path | None) -> Dispatcher:
    """Where the run's model calls run: this process (also for stored answers, ``answers_from``), or a Ray
    cluster (``executor: ray``; without the extra one error, before anything is written)."""
    if cfg.executor != "ray" or cfg.answers_from is not None:
        return LocalDispatcher(cfg.concurrency, cfg.videos_in_flight, cfg.decode_workers, cache_order=cfg.first_alone)
    from mtvbench.dispatch.ray import RayDispatcher

    return RayDispatcher(cfg.ray_address, cfg.ray, cfg.concurrency, videos_in_flight=cfg.videos_in_flight,
                         frame_settings=cfg.frame_settings(), cache_root=cache_root,
                         cache_order=cfg.first_alone)


def evaluate(cfg: RunConfig, progress: Progress | None = None, wait: bool = False) -> tuple[Scores, RunSummary]:
    """Run (or resume) one evaluation into ``cfg.out``: :func:`evaluate_async` in an event loop of its
    own, where SIGTERM stops the run as SIGINT does (:func:`~mtvbench.util.signals.run_main`: closed as at
    its end, then :class:`~mtvbench.util.signals.Terminated`, a ``KeyboardInterrupt``). Inside a running
    event loop (a notebook, a service) ``await evaluate_async(cfg)`` instead.

    Args:
        cfg: the settings (:func:`mtvbench.run.settings.build_config` resolves presets and checks them).
        progress: receives progress counts and notes (default: none shown).
        wait: wait for another process that holds the run directory instead of refusing.

    Returns:
        The scores (``scores.json``) and the summary of this session's calls."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop here: the usual case
        return run_main(evaluate_async(cfg, progress, wait))
    raise RunningLoopError("evaluate() cannot run inside a running event loop (a notebook, a service)",
                           hint="use `await mtvbench.evaluate_async(cfg)` there")


async def evaluate_async(cfg: RunConfig, progress: Progress | None = None,
                         wait: bool = False) -> tuple[Scores, RunSummary]:
    """Run (or resume) one evaluation into ``cfg.out`` in the running event loop (:func:`evaluate`: in its own).
    Only what is missing or no longer valid is asked; everything is committed as it arrives, and the score
    files are written at the end (also when the circuit breaker stopped the run, or the run was cancelled:
    SIGINT, SIGTERM). What the model's backend makes on a provider's server (Gemini's context caches) is
    recorded in the store as it is made; at the start, what an earlier run left there is deleted (said), and
    at the end what could not be deleted is named with its expiry (a note, the summary, ``scores.json``).

    Args:
        cfg: the settings (:func:`mtvbench.run.settings.build_config` resolves presets and checks them).
        progress: receives progress counts and notes (default: none shown).
        wait: wait for another process that holds the run directory instead of refusing
            (:class:`~mtvbench.errors.BusyError`; the wait blocks the event loop).

    Returns:
        The scores (``scores.json``) and the summary of this session's calls.

    Raises:
        MtvbenchError: bad data, settings, run directory, a missing key or extra; an endpoint whose
            circuit breaker opened (after the scores so far were written)."""
    progress = progress or Progress()
    rundir, protocol, full, bench = _inputs(cfg)
    video_keys = {v: _video_key(p) for v, p in sorted(bench.videos.items())}
    cache = FrameCache(cfg.cache_dir if cfg.cache_dir is not None else default_cache_dir())
    # released in the reverse order on every way out (SIGTERM included): the lock, the backends, the dispatcher
    async with contextlib.AsyncExitStack() as held:
        dispatcher = dispatcher_for(cfg, cache.root)  # --executor ray without the extra fails here
        held.push_async_callback(dispatcher.aclose)
        backends = _Backends()
        held.push_async_callback(backends.aclose)
        backends.model = _model(cfg, dispatcher, bench, video_keys)
        backends.judge = create_judge(cfg.judge, cfg.judge_settings.backend_options(), cfg.judge_max_attempts,
                                      cfg.judge_settings.temperature, protocol)
        keys = RunKeys(cfg, video_keys, reads_golden=abilities(backends.model).reads_golden_answer)
        await dispatcher.start(len(bench.videos))  # model replicas up before the run directory exists
        held.enter_context(rundir.claim(wait, progress.note))
        snapshot = RunSnapshot.of(cfg, bench, keys)
        stopped, summary = await _session(cfg, rundir, full, bench, snapshot, keys, backends, cache, dispatcher,
                                          progress)
        scored = score_dir(rundir.path, lock=False)
        if stopped is not None:
            # an endpoint kept failing, or the run was cancelled (SIGINT, SIGTERM): what the run has is
            # scored (and marked INCOMPLETE), so scores.json never shows an earlier state; then the error
            # (or the cancellation) goes on
            raise stopped
    assert summary is not None
    return scored.scores, summary


class _Backends:
    """The model and the judge of a run, closed once: after the runner (before what is left on a provider's
    server is named), or on any other way out."""

    def __init__(self) -> None:
        self.model: ModelBackend | None = None
        self.judge: Judge | None = None

    async def aclose(self) -> None:
        model, judge, self.model, self.judge = self.model, self.judge, None, None
        for b in (model, judge):
            if b is not None:
                await b.aclose()


async def _session(cfg: RunConfig, rundir: RunDirectory, full: Benchmark, bench: Benchmark, snapshot: RunSnapshot,
                   keys: RunKeys, backends: _Backends, cache: FrameCache, dispatcher: Dispatcher,
                   progress: Progress) -> tuple[CircuitOpenError | asyncio.CancelledError | None, RunSummary | None]:
    """One store session of the run, under the lock: the store prepared (:meth:`RunDirectory.session`), what an
    earlier run left on a provider's server deleted, the runner run, then the backends closed and what is left
    named, then the session ended and the store closed. An endpoint whose circuit breaker opened and a
    cancellation (SIGINT, SIGTERM) are returned, for the caller to score what is stored first."""
    assert backends.model is not None and backends.judge is not None
    model, judge = backends.model, backends.judge
    try:
        async with contextlib.AsyncExitStack() as held:
            store = held.enter_context(rundir.session(cfg, full, snapshot, run_mark(cfg, full), progress.note))
            track_resources(model, store)
            await _delete_left(model, store, progress)
            runner = Runner(cfg, bench=bench, store=store, model=model, judge=judge, cache=cache, keys=keys,
                            progress=progress, dispatcher=dispatcher)
            held.push_async_callback(_after_runner, runner, store, backends, progress)
            return None, await runner.execute()
    except (CircuitOpenError, asyncio.CancelledError) as e:
        return e, None


async def _after_runner(runner: Runner, store: RunStore, backends: _Backends, progress: Progress) -> None:
    """The backends closed (a provider's resources deleted), then what could not be deleted named."""
    await backends.aclose()
    runner.summary.left_on_server = _name_left(store, progress)


async def _delete_left(model: ModelBackend, store: RunStore, progress: Progress) -> None:
    """Delete what an earlier run of this directory left on a provider's server (recorded in the store: its
    deletes failed, or it was killed with ``kill -9``), and say so; what has expired since is only marked."""
    now = time.time()
    left = store.resources_left()
    for r in left:
        if r.expires is not None and r.expires <= now:  # ended by its TTL on the server
            store.record_resource(r.model_copy(update={"deleted": r.expires}))
    live = [r for r in left if r.expires is None or r.expires > now]
    if not live:
        return
    await delete_left(model, live)
    still = {r.token for r in store.resources_left()}
    gone = [r for r in live if r.token not in still]
    if gone:
        progress.note("cleaned up", f"{len(gone)} left by an earlier run of this directory (it ended without "
                      "deleting them: killed, or their deletes failed) deleted now: "
                      + ", ".join(r.name or r.token for r in gone))
    for r in live:
        if r.token in still:
            progress.note("left on the server", f"left by an earlier run, still not deleted: {r.describe()}")


def _name_left(store: RunStore, progress: Progress) -> list[ProviderResource]:
    """What the run made on a provider's server and could not delete, each named with its expiry."""
    left = store.resources_left(now=time.time())
    for r in left:
        progress.note("left on the server", f"{r.describe()}; the next run in this directory deletes it")
    return left


def run_mark(cfg: RunConfig, bench: Benchmark) -> NotABenchmark | None:
    """Why the run's numbers are not MT-Video-Bench numbers, recorded in its ``config.yaml``: its data's mark
    (:attr:`Benchmark.not_a_benchmark`), else, with ``answers_from``, the mark the answers' run recorded
    (answers made from such data stay marked under another judge)."""
    if bench.not_a_benchmark is not None:
        return bench.not_a_benchmark
    return RunDirectory.open(cfg.answers_from).mark() if cfg.answers_from is not None else None


def _model(cfg: RunConfig, dispatcher: Dispatcher, bench: Benchmark, video_keys: dict[str, str]) -> ModelBackend:
    """The model under test: the dispatcher's, or another run's stored answers (``answers_from``: no call)."""
    if cfg.answers_from is None:
        return dispatcher.driver_model(cfg.backend_spec, cfg.model_settings.backend_options())
    assert isinstance(dispatcher, LocalDispatcher)  # dispatcher_for: stored answers are read here
    model = dispatcher.model = stored_answers(cfg, bench, video_keys)
    return model


def _inputs(cfg: RunConfig) -> tuple[RunDirectory, EvalProtocol, Benchmark, Benchmark]:
    """The run directory, the protocol, the dataset as the protocol reads it and the part of it this run
    asks; what is missing or unusable here (an extra, the data, a task) fails before anything is written."""
    if cfg.answers_from is None:  # stored answers (run.replay) need no backend
        require_backend(cfg.backend_spec, "model")
    require_backend(cfg.judge, "judge")
    rundir = RunDirectory(cfg.out)
    if rundir.path.exists() and not rundir.path.is_dir():
        raise RunDirError(f"{rundir.path}: --out is a file; it must be a run directory (new or existing)")
    protocol = get_protocol(cfg.protocol_name)
    full = protocol.apply_all(load_benchmark(cfg.data, tasks=cfg.selected_tasks))
    check_tasks(full, cfg)
    return rundir, protocol, full, full.limit(cfg.limit)
