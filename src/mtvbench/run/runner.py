"""The evaluation loop: plan what to ask, store every result the moment it exists, and judge answers as
they arrive.

The runner decides *what* is asked. Only stored results whose fingerprint is the expected one
(:mod:`mtvbench.run.identity`) count as done; every other turn is asked again and the reasons are reported.
It is also the only code that writes to the run store. *How* the model under test is asked (frames decoded
ahead, a bounded number of calls in flight, batches, other processes or machines) is the dispatcher's job
(:mod:`mtvbench.dispatch`). The runner is the dispatcher's :class:`~mtvbench.dispatch.TurnRecorder`: the
dispatcher calls :meth:`Runner.request` to build a turn's request and :meth:`Runner.record` with each
result, which stores it, updates the circuit breaker, queues the judge runs of a scored turn and says
whether a self-context dialogue goes on.

The judge runs in this process: ``judge_concurrency`` workers take the queued judge runs
(:class:`JudgeRun`) in order, each sending its next request as soon as its last verdict is stored (no task
per judge run waits for a slot, and no wake-up of another task lies between a verdict and the next
request). While the turns run, the objects made before (modules, the dataset, the plan) are kept out of the
garbage collector's full passes (:func:`~mtvbench.util.heap.long_lived`), which would otherwise stop the
event loop, and every call in flight with it, for up to hundreds of milliseconds.

A result that cannot be stored (disk full) stops the run cleanly (:meth:`Runner.stop`): no new call is
started, the calls in flight finish, and the error is raised at the end. A frame cache that cannot be
written is replaced by an in-memory one with a warning.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from mtvbench.config import RunConfig
from mtvbench.data.schema import Benchmark, Dialogue, Round
from mtvbench.dispatch import (
    MIN_VIDEO_SLOTS,
    DialogueTurns,
    Dispatcher,
    Progress,
    VideoJob,
    frame_cache_warning,
)
from mtvbench.dispatch.local import LocalDispatcher
from mtvbench.errors import MtvbenchError
from mtvbench.judge.protocol import Judge
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import VideoFrames
from mtvbench.models.backend import ModelBackend
from mtvbench.models.resilience import CircuitBreaker, CircuitOpenError, breaker_of
from mtvbench.records import GenerationRequest, GenerationResult, ProviderResource
from mtvbench.run.identity import (
    DEPENDS_ON_EARLIER,
    RESPONSE_REASONS,
    VERDICT_REASONS,
    ResultKey,
    RunKeys,
    current_results,
    reason,
)
from mtvbench.run.plan import ClipUnion, build_request, rounds_to_call, turn_frame_indices
from mtvbench.run.store import FINAL_JUDGE, FINAL_OUTCOMES, RunStore
from mtvbench.util.heap import long_lived


@dataclass
class RunSummary:
    """What a run did, for the summary the command line prints and ``scores.json``: the calls made and how
    many failed, the videos that could not be read, the turns left pending, the stored results that no
    longer match, and the warnings shown."""

    calls: int = 0
    call_errors: int = 0
    judge_calls: int = 0
    judge_errors: int = 0
    failed_videos: dict[str, str] = field(default_factory=dict)
    pending_turns: int = 0
    judge_unparsed: int = 0
    #: the last judge failure, in the server's own words (secrets redacted)
    last_judge_error: str | None = None
    #: stored responses / verdicts no longer valid for the current data, by reason
    invalidated: dict[str, int] = field(default_factory=dict)
    invalidated_verdicts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: final outcomes that are not answers: content-filter blocks, and empty replies (e.g. every
    #: token spent thinking); stored, scored as wrong answers, never asked again
    blocked: int = 0
    empty: int = 0
    #: what the model's backend made on a provider's server and could not delete (each with its expiry)
    left_on_server: list[ProviderResource] = field(default_factory=list)


@dataclass(frozen=True)
class JudgeRun:
    """One judge run waiting for a judge worker: the turn it judges, that turn's round (its checklist), the
    answer judged, the fingerprint its verdict is stored under, and which of the ``judge_runs`` runs it is."""

    turn_id: str
    round: Round
    answer: str
    key: ResultKey
    run: int


@dataclass(frozen=True)
class JudgingToDo:
    """The judge runs a scored round still needs at the start of a run (its answer is stored, some of its
    ``judge_runs`` have no final verdict for it)."""

    dialogue: Dialogue
    round: Round
    runs: list[int]


class StoredVerdict(NamedTuple):
    """Which final verdict is stored: the turn, the fingerprint of what was judged, and the judge run."""

    turn_id: str
    fingerprint: str
    run: int


@dataclass
class Plan:
    """What a run asks, worked out from the store before the first call: the turns of each video that need a
    model call, and the judge runs that stored answers still need."""

    turns: dict[str, list[DialogueTurns]]
    judging: list[JudgingToDo]


def script_answer(res: GenerationResult, keep_thinking: bool, strip: bool) -> GenerationResult:
    """The answer one of the authors' inference scripts would write from the raw reply ``res.raw_text``.

    With ``keep_thinking`` (infer_internvl.py without Think) it is the whole reply. Otherwise it is the text
    after the first ``</think>``, stripped, and the text before it becomes the reasoning; a reply without
    ``</think>`` is kept as it is (infer_qwen25vl.py) or stripped (``strip``: infer_internvl.py in Think mode).
    An answer left empty is stored with the outcome ``empty``."""
    raw = res.raw_text
    if keep_thinking:
        text, reasoning = raw, None
    elif "</think>" in raw:
        thought, _, after = raw.partition("</think>")
        text, reasoning = after.strip(), res.reasoning or thought.replace("<think>", "").strip() or None
    else:
        text, reasoning = (raw.strip() if strip else raw), res.reasoning
    outcome, error = ("ok", None) if text else ("empty", res.error or "no text after </think>")
    return res.model_copy(update={"text": text, "reasoning": reasoning, "outcome": outcome, "error": error})


def invalidation_lines(summary: RunSummary) -> list[str]:
    """``invalidated: 3 responses (question edited: 2, ...)``-style lines, empty when nothing was."""
    lines = []
    for what, counts in (("responses", summary.invalidated), ("judge verdicts", summary.invalidated_verdicts)):
        if counts:
            why = ", ".join(f"{r}: {n}" for r, n in sorted(counts.items(), key=lambda x: -x[1]))
            lines.append(f"{sum(counts.values())} stored {what} no longer match the data or settings ({why}); "
                         "they are asked again (the old ones stay in the store, never scored)")
    return lines


class Runner:
    """One evaluation run over a benchmark: it plans what is asked from what the store holds, hands the turns
    to the dispatcher, stores each answer and verdict as it arrives, and judges the answers as they come.
    :meth:`execute` does it all and returns the :class:`RunSummary`."""

    def __init__(self, cfg: RunConfig, bench: Benchmark, store: RunStore, model: ModelBackend, judge: Judge,
                 cache: FrameCache, keys: RunKeys, progress: Progress | None = None,
                 dispatcher: Dispatcher | None = None):
        self.cfg = cfg
        #: the turns of each video this run asks (set by :meth:`execute`; ``--sampling clip`` decodes their union)
        self._turns: dict[str, list[DialogueTurns]] = {}
        self.keys = keys
        self.bench = bench
        self.store = store
        self.model = model
        self.judge = judge
        self.cache = cache
        self.progress = progress or Progress()
        self.summary = RunSummary()
        self.dispatcher = dispatcher or LocalDispatcher(cfg.concurrency, cfg.videos_in_flight, cfg.decode_workers,
                                                        model=model, cache_order=cfg.first_alone)
        #: judge runs waiting for a worker, in the order they were queued
        self.judge_queue: deque[JudgeRun] = deque()
        self.judge_workers = cfg.judge_concurrency or cfg.concurrency
        #: workers still taking judge runs (one that found the queue empty is not, even before its task ends)
        self.judge_active = 0
        self.judge_tasks: set[asyncio.Task[None]] = set()
        self.answers: dict[str, str] = {}
        #: a backend that calls a server counts its failures itself (models.resilience); a local one, or one
        #: whose calls run in other processes (a Ray replica's), here
        self.breaker = breaker_of(model) or CircuitBreaker(model.name, None, cfg.model_settings.breaker_threshold)
        self._count_failures = breaker_of(model) is None or self.dispatcher.remote_calls
        #: why the run stopped (see :meth:`stop`); None while it goes on
        self._stopped_by: MtvbenchError | None = None
        #: every final verdict stored before this run
        self._judged: set[StoredVerdict] = set()

    @property
    def stopped(self) -> bool:
        """Whether the run stopped (:meth:`stop`): no new model call or judge run is started."""
        return self._stopped_by is not None

    def stop(self, error: BaseException) -> None:
        """Stop the run because of ``error``: no new model call or judge run is started, the calls already in
        flight finish (their results are stored as they arrive, as long as the store can take them), and
        :meth:`execute` raises the error once they are done.

        Every early stop of a run goes through here. It is called when a result cannot be stored (disk full, a
        read-only file), when an endpoint keeps failing and its circuit breaker opens
        (:class:`~mtvbench.models.resilience.CircuitOpenError`), and by a dispatcher with an error of its own
        work. The caller sees one error at the end: the first that was reported, except that any other error
        wins over an open breaker, whichever came first (a store that cannot be written, for example, has to
        be fixed before any run can go on, while an endpoint may recover). Nothing is lost: what was not sent
        or not stored is asked on the next run. An error that is not an :class:`~mtvbench.errors.MtvbenchError`
        is a bug, not a reason to stop: it is raised again at once."""
        if not isinstance(error, MtvbenchError):
            raise error
        first = self._stopped_by
        if first is None or (isinstance(first, CircuitOpenError) and not isinstance(error, CircuitOpenError)):
            self._stopped_by = error

    # planning ---------------------------------------------------------------------------
    def _plan(self) -> Plan:
        """The turns to ask and the judge runs to do, from what the store holds (only results whose fingerprint
        is the expected one count as done); counts the stored results that no longer match, by reason."""
        ctx, dialogues = self.cfg.context, self.bench.dialogues
        rows, vrows = self.store.response_rows(), self.store.verdict_rows()
        cur = current_results(dialogues, ctx, self.keys.turn_keys(dialogues), self.keys.judge_keys(dialogues),
                              rows, vrows, FINAL_OUTCOMES, FINAL_JUDGE)
        final_verdicts = cur.final_verdicts(FINAL_JUDGE)
        self.answers = {tid: rec["text"] for tid, rec in cur.responses.items()}
        self._judged = {StoredVerdict(v["turn_id"], v["fingerprint"], v["run"]) for v in vrows
                        if v["verdict"].status in FINAL_JUDGE}
        stale_r: Counter[str] = Counter()
        stale_v: Counter[str] = Counter()
        by_video: dict[str, list[DialogueTurns]] = defaultdict(list)
        judge_todo: list[JudgingToDo] = []
        for d in dialogues:
            todo = [r for r in rounds_to_call(d, ctx) if d.turn_id(r.index) not in cur.responses]
            if todo:
                by_video[d.video].append(DialogueTurns(d, todo, chained=ctx == "self"))
            for i, r in enumerate(todo):
                old = cur.stale_responses.get(d.turn_id(r.index))
                if old is None:
                    continue
                if ctx == "self" and i > 0:
                    stale_r[DEPENDS_ON_EARLIER] += 1
                else:
                    stale_r[reason(old["parts"], self._key(d, r).parts, RESPONSE_REASONS)] += 1
            for r in d.scored_turns:
                tid = d.turn_id(r.index)
                answer = self._answer(d, r)
                if answer is None:
                    continue
                runs = [i for i in range(self.cfg.judge_runs) if i not in final_verdicts.get(tid, {})]
                if runs:
                    judge_todo.append(JudgingToDo(d, r, runs))
                for run in runs:
                    old_v = cur.stale_verdicts.get((tid, run))
                    if old_v is not None:
                        stale_v[reason(old_v["parts"], self.keys.verdict(r, answer).parts, VERDICT_REASONS)] += 1
        self.summary.invalidated, self.summary.invalidated_verdicts = dict(stale_r), dict(stale_v)
        return Plan(by_video, judge_todo)

    def _own(self, d: Dialogue, r: Round) -> dict[int, str] | None:
        """In self context the model's answers to every earlier round (its prompt holds them)."""
        if self.cfg.context != "self":
            return None
        return {x.index: self.answers[d.turn_id(x.index)] for x in d.earlier(r)}

    def _answer(self, d: Dialogue, r: Round) -> str | None:
        """The text judged against ``r``'s checklist: the protocol's placeholder, or the answer of the round it
        names (``r`` itself under the paper's rule); None while that answer is not there."""
        source = r.answer_index
        return r.placeholder_answer if source is None else self.answers.get(d.turn_id(source))

    def _key(self, d: Dialogue, r: Round) -> ResultKey:
        return self.keys.response(d, r, self._own(d, r))

    # storing ----------------------------------------------------------------------------
    def _store(self, put: Callable[[], None]) -> bool:
        """Commit one result to the run store (``put``: :meth:`RunStore.put_response` or
        :meth:`RunStore.put_verdict` with its arguments) before anything reports it. False when it could not be
        stored: the run stops (:meth:`stop`) and the result is asked again by the next run."""
        try:
            put()
        except MtvbenchError as e:
            self.stop(e)
            return False
        return True

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.judge_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:  # retrieved here, raised by execute()
            exc = task.exception()
            if isinstance(exc, MtvbenchError):
                self.stop(exc)

    # judging ----------------------------------------------------------------------------
    def _spawn_judging(self, dialogue: Dialogue, rnd: Round, runs: Sequence[int]) -> None:
        """Queue the judge runs of ``rnd`` that its answer has no stored verdict for, and start judge workers
        for them."""
        tid = dialogue.turn_id(rnd.index)
        answer = self._answer(dialogue, rnd)
        assert rnd.checklist and answer is not None
        key = self.keys.verdict(rnd, answer)
        # an answer asked again that came out the same keeps the verdicts it already has
        todo = [i for i in runs if StoredVerdict(tid, key.fingerprint, i) not in self._judged]
        if len(todo) < len(runs):
            self.progress.advance("judging", len(runs) - len(todo))
        self._queue_judge_runs([JudgeRun(tid, rnd, answer, key, run) for run in todo])

    def _queue_judge_runs(self, runs: Sequence[JudgeRun]) -> None:
        """Queue judge runs, and start a worker for each run that the workers already running will not take
        (at most ``judge_workers`` in all)."""
        self.judge_queue.extend(runs)
        for _ in range(min(len(runs), self.judge_workers - self.judge_active)):
            self.judge_active += 1
            task = asyncio.create_task(self._judge_worker())
            self.judge_tasks.add(task)
            task.add_done_callback(self._task_done)

    async def _judge_worker(self) -> None:
        """Judge queued runs one after another until none is left (or the run stopped: the runs left in the
        queue are not sent and are asked on the next run)."""
        try:
            while self.judge_queue and not self.stopped:
                await self._judge_run(self.judge_queue.popleft())
        finally:  # in the step that found the queue empty: a run queued after it starts a new worker
            self.judge_active -= 1

    async def _judge_run(self, job: JudgeRun) -> None:
        """Send one judge run and store its verdict, then count it."""
        try:
            v = await self.judge.judge(job.answer, job.round, job.run)
        except CircuitOpenError as e:  # the judge endpoint's breaker is open: not sent, not stored
            self.stop(e)
            return
        if not self._store(lambda: self.store.put_verdict(job.turn_id, v, job.key)):
            return
        self.summary.judge_calls += 1
        if v.status == "error":
            self.summary.judge_errors += 1
            self.summary.last_judge_error = v.error
        elif v.status == "unparsed":
            self.summary.judge_unparsed += 1
            self.summary.last_judge_error = v.error
        self.progress.advance("judging")

    # inference (the dispatcher's TurnRecorder) -----------------------------------------
    def request(self, dialogue: Dialogue, rnd: Round, frames: VideoFrames | None) -> GenerationRequest:
        """Build the request of one turn: the run's inference prompt with the history of the run's context
        (in self context the model's own earlier answers, which were recorded before) and the turn's
        frames."""
        own = self._own(dialogue, rnd)
        if frames is not None and self.cfg.sampling == "clip":
            frames = self._turn_frames(dialogue, rnd, frames, own)
        request = build_request(dialogue, rnd, self.cfg.context, frames, own, self.cfg.inference, self.cfg.frames,
                                self.cfg.frame_timestamps == "on")
        request.keep_thinking = self.cfg.keeps_thinking
        return request

    def _turn_frames(self, dialogue: Dialogue, rnd: Round, frames: VideoFrames,
                     own: dict[int, str] | None) -> VideoFrames:
        """``--sampling clip``: this turn's frames out of the video's union (a frame the union lacks, named by one
        of the model's own earlier answers in self context, is decoded now, once, into the same cache entry)."""
        cfg = self.cfg
        wanted = turn_frame_indices(dialogue, rnd, cfg.context, frames.total_frames, frames.duration_s, cfg.frames,
                                    cfg.clip_share, own)
        decoded = set(frames.indices)
        if any(i not in decoded for i in wanted):
            frames = self.cache.get_indices(frames.video, cfg.frame_settings(), lambda _t, _d: wanted)
        return frames.select(wanted)

    def frame_rule(self, video: str) -> ClipUnion | None:
        """Under ``--sampling clip`` the frames every call of ``video`` this run needs (from the text each sends;
        in self context the model's answers known now), for one decode; None: the frame settings' own frames."""
        cfg = self.cfg
        if cfg.sampling != "clip":
            return None
        turns = []
        for t in self._turns.get(video, []):
            d = t.dialogue
            for r in t.rounds:
                own = {x.index: self.answers[d.turn_id(x.index)] for x in d.earlier(r)
                       if d.turn_id(x.index) in self.answers} if cfg.context == "self" else None
                turns.append((d, r, own if own is not None and len(own) == len(d.earlier(r)) else None))
        return ClipUnion(tuple(turns), cfg.context, cfg.frames, cfg.clip_share)

    def record(self, dialogue: Dialogue, rnd: Round, request: GenerationRequest, res: GenerationResult) -> bool:
        """Store one model result as it arrives, under the fingerprint of what produced it, then count it on
        the progress and the circuit breaker and queue the judge runs that judge this answer. Returns False
        when the dialogue cannot go on: the call failed, or its result could not be stored."""
        tid = dialogue.turn_id(rnd.index)
        if self.cfg.frame_rule != "uniform" and res.outcome in ("ok", "empty") and res.raw_text:
            res = script_answer(res, request.keep_thinking, strip=self.cfg.inference == "internvl-script")
        if request.frames is not None:  # which frames the turn was sent (every sampling), beside what the backend says
            res = res.model_copy(update={"inputs": {**(res.inputs or {}), "frame_indices": request.frames.indices,
                                                    "frame_times": [round(t, 3) for t in request.frames.timestamps]}})
        key = self._key(dialogue, rnd)
        if not self._store(lambda: self.store.put_response(tid, request.prompt, res, key)):
            return False
        self.summary.calls += 1
        self.progress.advance("inference")
        if self._count_failures:
            if res.outcome == "error":
                self.breaker.failure(res.error)
            else:
                self.breaker.success()
        if res.outcome == "error":
            self.summary.call_errors += 1
            if self.breaker.is_open:
                self.stop(self.breaker.error())
            return False
        self.summary.blocked += res.outcome == "blocked"
        self.summary.empty += res.outcome == "empty"
        self.answers[tid] = res.text
        for judged in dialogue.scored_turns:  # this round's checklist, or another round's that judges this answer
            if judged.answer_index == rnd.index:
                self._spawn_judging(dialogue, judged, range(self.cfg.judge_runs))
        return True

    async def frames(self, video: str, run: Callable[..., Awaitable[VideoFrames]]) -> VideoFrames:
        """The frames of ``video``, from the frame cache or decoded (``run(fn, *args)`` runs the decode off
        the event loop). A frame cache that cannot be written is replaced by one in memory, with a warning."""
        path, settings, cache = self.bench.videos[video], self.cfg.frame_settings(), self.cache
        # under --sampling clip the union of the video's turns' frames, decoded once
        rule = self.frame_rule(video)
        extra = (rule,) if rule is not None else ()
        try:
            return await run(cache.get_indices if extra else cache.get, path, settings, *extra)
        except OSError as e:  # the frame cache cannot be written (disk full, permissions)
            if cache.root is None:
                raise
            if self.cache is cache:  # the first video to find out says so, once
                self.cache = FrameCache(None, memory_items=self.cfg.videos_in_flight or MIN_VIDEO_SLOTS)
                self.warn(frame_cache_warning(cache.root, e))
            return await run(self.cache.get_indices if extra else self.cache.get, path, settings, *extra)

    def warn(self, message: str) -> None:
        """A warning shown now and repeated in the summary."""
        self.summary.warnings.append(message)
        self.progress.note("warning", message)

    def video_failed(self, video: str, why: str) -> None:
        """The video cannot be read (or its replicas kept dying): its remaining turns are left pending this
        run."""
        self.summary.failed_videos[video] = why

    def turns_pending(self, n: int) -> None:
        """``n`` rounds are left pending this run (an earlier round of their dialogue failed in self context,
        their video cannot be read, ...); the next run asks them."""
        self.summary.pending_turns += n
        self.progress.advance("inference", n)

    async def _ask_and_judge(self, jobs: list[VideoJob], judge_todo: list[JudgingToDo]) -> None:
        """Every job through the dispatcher and every judge run through the workers, until both are done."""
        for todo in judge_todo:
            self._spawn_judging(todo.dialogue, todo.round, todo.runs)
        try:
            await self.dispatcher.run(jobs, self)
            while self.judge_tasks:
                await asyncio.gather(*list(self.judge_tasks))
        finally:
            for t in list(self.judge_tasks):
                t.cancel()

    async def execute(self) -> RunSummary:
        """Run everything the plan holds: the model's turns through the dispatcher and the judge runs through
        the judge workers. Returns the summary; raises the error that stopped the run (:meth:`stop`) once the
        calls in flight are done and their results stored."""
        plan = self._plan()
        by_video, judge_todo = plan.turns, plan.judging
        self._turns = by_video
        for line in invalidation_lines(self.summary):
            self.progress.note("invalidated", line)
        jobs = [VideoJob(v, self.bench.videos[v], ts) for v, ts in sorted(by_video.items())]
        n_judge = sum(len(todo.runs) for todo in judge_todo)
        n_judge += sum(self.cfg.judge_runs for j in jobs for t in j.dialogues for r in t.rounds
                       for judged in t.dialogue.scored_turns if judged.answer_index == r.index)
        self.progress.start("frames", len(jobs))
        self.progress.start("inference", sum(j.turns for j in jobs))
        self.progress.start("judging", n_judge)
        with long_lived():
            await self._ask_and_judge(jobs, judge_todo)
        if self._stopped_by is not None:
            raise self._stopped_by
        return self.summary
