"""The evaluation loop: frames once per video, bounded async inference, judging as answers
arrive, every result committed to the run store the moment it exists.

Work is grouped by video so that each video is decoded (or read from the frame cache) once
and its encoded payload is reused by every turn of every dialogue of that video; at most
``videos_in_flight`` videos hold frames in memory at a time. Within a video the rounds run
in *waves*: in golden/none context one wave holds every pending round (all independent); in
self context wave *i* holds the *i*-th pending round of each dialogue, so a dialogue's
rounds stay in order while dialogues still run side by side (and batch, for local backends).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from mtvbench.config import RunConfig
from mtvbench.data.schema import Benchmark, Dialogue, Round
from mtvbench.errors import MtvbenchError
from mtvbench.judge.checklist import Judge
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import VideoError, VideoFrames
from mtvbench.models.base import (
    GenerationRequest,
    GenerationResult,
    ModelBackend,
    generate_many,
)
from mtvbench.models.resilience import CircuitBreaker, CircuitOpenError, breaker_of
from mtvbench.run.plan import build_request, rounds_to_call
from mtvbench.run.store import RunStore


@dataclass
class RunSummary:
    calls: int = 0
    call_errors: int = 0
    judge_calls: int = 0
    judge_errors: int = 0
    failed_videos: dict[str, str] = field(default_factory=dict)
    pending_turns: int = 0
    #: final outcomes that are not answers: content-filter blocks, and empty replies (e.g. every
    #: token spent thinking); stored, scored as wrong answers, never asked again
    blocked: int = 0
    empty: int = 0


class Progress:
    """What the runner reports; the CLI plugs a rich progress display in here."""

    def start(self, name: str, total: int) -> None: ...

    def advance(self, name: str, n: int = 1) -> None: ...


@dataclass
class _Pending:
    dialogue: Dialogue
    rounds: list[Round]


class Runner:
    def __init__(self, cfg: RunConfig, bench: Benchmark, store: RunStore, model: ModelBackend, judge: Judge,
                 cache: FrameCache, progress: Progress | None = None):
        self.cfg = cfg
        self.bench = bench
        self.store = store
        self.model = model
        self.judge = judge
        self.cache = cache
        self.progress = progress or Progress()
        self.summary = RunSummary()
        self.call_sem = asyncio.Semaphore(cfg.concurrency)
        self.judge_sem = asyncio.Semaphore(cfg.judge_concurrency or cfg.concurrency)
        self.video_sem = asyncio.Semaphore(cfg.videos_in_flight)
        self.judge_tasks: set[asyncio.Task[None]] = set()
        self.answers: dict[str, str] = {}
        #: a backend that calls a server counts its failures itself (models.resilience); a local one here
        self.breaker = breaker_of(model) or CircuitBreaker(model.name, None, cfg.model_settings.breaker_threshold)
        self._count_failures = breaker_of(model) is None
        self._abort: MtvbenchError | None = None

    # planning ---------------------------------------------------------------------------
    def _plan(self) -> tuple[dict[str, list[_Pending]], list[tuple[Dialogue, Round, list[int]]]]:
        done = self.store.final_responses()
        self.answers = {tid: rec["text"] for tid, rec in done.items()}
        verdicts = self.store.final_verdicts()
        by_video: dict[str, list[_Pending]] = defaultdict(list)
        judge_todo: list[tuple[Dialogue, Round, list[int]]] = []
        for d in self.bench.dialogues:
            todo = [r for r in rounds_to_call(d, self.cfg.context) if d.turn_id(r.index) not in done]
            if todo:
                by_video[d.video].append(_Pending(d, todo))
            for r in d.scored_turns:
                tid = d.turn_id(r.index)
                if tid in done:
                    runs = [i for i in range(self.cfg.judge_runs) if i not in verdicts.get(tid, {})]
                    if runs:
                        judge_todo.append((d, r, runs))
        return by_video, judge_todo

    # judging ----------------------------------------------------------------------------
    def _spawn_judging(self, dialogue: Dialogue, rnd: Round, runs: Sequence[int]) -> None:
        tid = dialogue.turn_id(rnd.index)
        answer = self.answers[tid]
        assert rnd.checklist
        items = rnd.checklist
        for run in runs:
            async def one(run: int = run) -> None:
                try:
                    async with self.judge_sem:
                        v = await self.judge.judge(answer, items, run)
                except CircuitOpenError as e:  # not sent, not stored: asked on the next run
                    self._abort = self._abort or e
                    return
                self.store.put_verdict(tid, v)
                self.summary.judge_calls += 1
                if v.status == "error":
                    self.summary.judge_errors += 1
                self.progress.advance("judging")

            task = asyncio.create_task(one())
            self.judge_tasks.add(task)
            task.add_done_callback(self.judge_tasks.discard)

    # inference --------------------------------------------------------------------------
    def _record(self, dialogue: Dialogue, rnd: Round, prompt: str, res: GenerationResult) -> bool:
        tid = dialogue.turn_id(rnd.index)
        self.store.put_response(tid, prompt, res)
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
                self._abort = self._abort or self.breaker.error()
            return False
        self.summary.blocked += res.outcome == "blocked"
        self.summary.empty += res.outcome == "empty"
        self.answers[tid] = res.text
        if rnd.scored:
            self._spawn_judging(dialogue, rnd, range(self.cfg.judge_runs))
        return True

    def _request(self, p: _Pending, rnd: Round, frames: VideoFrames | None) -> GenerationRequest:
        own = None
        if self.cfg.context == "self":
            own = {r.index: self.answers[p.dialogue.turn_id(r.index)] for r in p.dialogue.rounds
                   if r.index < rnd.index}
        return build_request(p.dialogue, rnd, self.cfg.context, frames, own)

    async def _call_wave(self, wave: list[tuple[_Pending, Round]], frames: VideoFrames | None) -> list[bool]:
        requests = [self._request(p, r, frames) for p, r in wave]
        batch_size = getattr(self.model, "batch_size", 0)
        if batch_size and hasattr(self.model, "generate_batch"):
            ok: list[bool] = []
            for i in range(0, len(requests), batch_size):
                chunk = list(zip(wave, requests))[i : i + batch_size]
                async with self.call_sem:
                    results = await generate_many(self.model, [req for _, req in chunk])
                ok += [self._record(p.dialogue, r, req.prompt, res) for ((p, r), req), res in zip(chunk, results)]
            return ok

        async def one(item: tuple[_Pending, Round], req: GenerationRequest) -> bool:
            async with self.call_sem:
                if self._abort:  # not sent, not stored: asked on the next run
                    return False
                try:
                    res = await self.model.generate(req)
                except CircuitOpenError as e:  # the endpoint's breaker is open: not sent, not stored
                    self._abort = self._abort or e
                    return False
            return self._record(item[0].dialogue, item[1], req.prompt, res)  # stored as it arrives

        return list(await asyncio.gather(*(one(item, req) for item, req in zip(wave, requests))))

    async def _video(self, video: str, pending: list[_Pending]) -> None:
        async with self.video_sem:
            if self._abort:
                return
            frames: VideoFrames | None = None
            if getattr(self.model, "needs_frames", True):
                try:
                    frames = await asyncio.to_thread(self.cache.get, self.bench.videos[video],
                                                     self.cfg.frame_settings())
                except VideoError as e:
                    self.summary.failed_videos[video] = str(e)
                    self.summary.pending_turns += sum(len(p.rounds) for p in pending)
                    self.progress.advance("frames")
                    self.progress.advance("inference", sum(len(p.rounds) for p in pending))
                    return
            self.progress.advance("frames")
            queues = [list(p.rounds) for p in pending]
            alive = list(range(len(pending)))
            while alive and not self._abort:
                if self.cfg.context == "self":
                    wave_idx = alive
                    wave = [(pending[i], queues[i].pop(0)) for i in wave_idx]
                else:
                    wave_idx = [i for i in alive for _ in queues[i]]
                    wave = [(pending[i], r) for i in alive for r in queues[i]]
                    for i in alive:
                        queues[i] = []
                ok = await self._call_wave(wave, frames)
                failed = {i for i, good in zip(wave_idx, ok) if not good}
                for i in failed:  # a failed round stops its dialogue (self context needs it)
                    self.summary.pending_turns += len(queues[i])
                    self.progress.advance("inference", len(queues[i]))
                    queues[i] = []
                alive = [i for i in alive if queues[i]]

    async def execute(self) -> RunSummary:
        by_video, judge_todo = self._plan()
        n_calls = sum(len(p.rounds) for ps in by_video.values() for p in ps)
        n_judge = sum(len(runs) for *_, runs in judge_todo)
        n_judge += sum(self.cfg.judge_runs for ps in by_video.values() for p in ps for r in p.rounds if r.scored)
        self.progress.start("frames", len(by_video))
        self.progress.start("inference", n_calls)
        self.progress.start("judging", n_judge)
        for d, r, runs in judge_todo:
            self._spawn_judging(d, r, runs)
        try:
            await asyncio.gather(*(self._video(v, ps) for v, ps in sorted(by_video.items())))
            while self.judge_tasks:
                await asyncio.gather(*list(self.judge_tasks))
        finally:
            for t in list(self.judge_tasks):
                t.cancel()
        if self._abort:
            raise self._abort
        return self.summary

