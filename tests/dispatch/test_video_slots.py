"""The video slots of a run (``videos_in_flight``): not set, enough videos are open to keep every call slot busy
on videos with few turns, under the cache-aware order (a video's first turn alone) too; set, it is the bound."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mtvbench.dispatch import MIN_VIDEO_SLOTS, DialogueTurns, VideoJob, video_slots
from mtvbench.dispatch.local import LocalDispatcher
from mtvbench.models.backend import BackendBase
from mtvbench.records import GenerationRequest, GenerationResult
from tests.dispatch.test_dispatch import _Runner


class _Filling(BackendBase):
    """A call waits until ``concurrency`` calls are in flight together (then every call goes on at once), for at
    most ``patience`` seconds: a run that never fills its call slots ends anyway, and :attr:`filled` says so."""

    name = "filling"
    prefix_cache = True  # the cache-aware order by default: a video's first turn goes alone

    def __init__(self, concurrency: int, patience: float = 3.0):
        self.concurrency, self.patience = concurrency, patience
        self.in_flight = self.peak = 0
        self.full = asyncio.Event()
        self.filled = False

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.concurrency:
            self.filled = True
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), self.patience)
        except TimeoutError:
            self.full.set()  # never filled: the rest of the run goes on without waiting
        await asyncio.sleep(0)
        self.in_flight -= 1
        return GenerationResult(text=request.prompt, raw_text=request.prompt)


def _jobs(videos: int, dialogues: int, rounds: int, chained: bool) -> list[VideoJob]:
    return [VideoJob(f"v{v}", Path(f"v{v}.mp4"),
                     [DialogueTurns(f"v{v}d{d}", list(range(1, rounds + 1)), chained=chained)  # type: ignore[arg-type]
                      for d in range(dialogues)]) for v in range(videos)]


@pytest.mark.parametrize("concurrency, dialogues, rounds, chained", [
    (8, 1, 2, False),   # golden context: two turns a video, both can be in flight together
    (16, 3, 2, True),   # self context: three chained dialogues a video, one call each in flight at a time
    (16, 3, 1, False),  # three one-turn dialogues a video: 4 videos hold 12 calls at the most
])
def test_every_call_slot_is_filled_on_videos_with_few_turns(concurrency: int, dialogues: int, rounds: int,
                                                           chained: bool) -> None:
    """With four video slots these runs can never have ``concurrency`` calls in flight (a video's first turn goes
    alone, then its other turns: at most 4 x the calls a video holds at once); not set, the slots follow the
    concurrency and every call slot fills, and every turn is recorded once."""
    jobs = _jobs(40, dialogues, rounds, chained)
    model = _Filling(concurrency)
    runner = _Runner(set(), set())
    dispatcher = LocalDispatcher(concurrency=concurrency, model=model)
    asyncio.run(dispatcher.run(jobs, runner))  # type: ignore[arg-type]
    assert model.filled and model.peak == concurrency
    assert dispatcher.video_slots == video_slots([j.at_once for j in jobs], concurrency) > MIN_VIDEO_SLOTS
    assert sorted(runner.recorded) == sorted((t.dialogue, r) for j in jobs for t in j.dialogues for r in t.rounds)


def test_a_set_number_of_video_slots_is_the_bound() -> None:
    """``videos_in_flight`` set: at most that many videos hold frames (are between their frames and their last
    answer), whatever the concurrency."""
    open_now: set[str] = set()
    most = 0

    class Runner(_Runner):
        async def frames(self, video: str, run: object) -> str:
            nonlocal most
            open_now.add(video)
            most = max(most, len(open_now))
            return await super().frames(video, run)

    class Model(_Filling):
        async def generate(self, request: GenerationRequest) -> GenerationResult:
            return GenerationResult(text=request.prompt, raw_text=request.prompt)

        async def end_video(self, frames: object) -> None:
            open_now.discard(str(frames).removeprefix("frames of "))

    jobs = _jobs(12, 1, 2, False)
    runner = Runner(set(), set())
    dispatcher = LocalDispatcher(concurrency=16, videos_in_flight=2, model=Model(16))
    asyncio.run(dispatcher.run(jobs, runner))  # type: ignore[arg-type]
    assert dispatcher.video_slots == 2 and most == 2 and len(runner.recorded) == 24


def test_the_number_of_video_slots() -> None:
    """Set: the setting. Not set: about 4 x concurrency / the calls a video can have in flight at once (chained
    dialogues count one each), the harmonic mean over the videos (a mix is bound by its videos with few calls),
    at least MIN_VIDEO_SLOTS and at most 2 x concurrency."""
    assert video_slots([10] * 50, 16, setting=3) == 3
    assert video_slots([10] * 100, 16) == 7 and video_slots([10] * 100, 64) == 26
    assert video_slots([40] * 100, 16) == MIN_VIDEO_SLOTS  # many turns a video: the fewest slots do
    assert video_slots([1] * 100, 16) == 32  # one call a video: at most 2 x concurrency
    assert video_slots([], 16) == MIN_VIDEO_SLOTS and video_slots([0, 0], 16) == MIN_VIDEO_SLOTS
    assert video_slots([2, 40], 16) == 17 > video_slots([21, 21], 16)  # 4 x 16 / 3.8, not / 21
    self_context = _jobs(1, 3, 6, True)[0]
    golden = _jobs(1, 3, 6, False)[0]
    assert (self_context.at_once, golden.at_once) == (3, 18)
