"""The cache-aware order (``run --cache-order``): a video's first turn alone, its other turns once it was
answered, first turns of the next videos ahead of the waiting turns; a backend ability by default, not
part of the run's identity; and the frame prefix those turns share byte for byte (Figure 15 puts the
frames first) in every context mode."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from pathlib import Path

import pytest

from mtvbench.dispatch import DialogueTurns, VideoJob, cache_order
from mtvbench.dispatch.local import LocalDispatcher
from mtvbench.models.backend import BackendBase
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.evaluate import evaluate
from tests.dispatch.test_dispatch import _Runner
from tests.support.datasets import write_video
from tests.support.openai_server import Faults, LoopbackServer, ServerState
from tests.support.run_helpers import cfg_for, model_requests


class _Recorder(BackendBase):
    """Records when each call starts and ends; a call of a video whose ``hold`` is set waits until that many
    calls of its video are in flight together (they were sent at once), or fails after 10 s."""

    name = "recorder"

    def __init__(self, prefix_cache: bool = True, hold: int = 0):
        self.prefix_cache, self.hold = prefix_cache, hold
        self.events: list[tuple[str, str]] = []
        self.in_flight: dict[str, int] = defaultdict(int)
        self.together: dict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        video = request.prompt.split()[0][0]  # dialogue "a1" -> video "a"
        self.events.append(("start", request.id))
        self.in_flight[video] += 1
        if self.in_flight[video] >= self.hold:
            self.together[video].set()
        if self.hold:
            await asyncio.wait_for(self.together[video].wait(), 10)
        for _ in range(50):  # a call takes a while: the other videos' coroutines reach the gate meanwhile
            await asyncio.sleep(0)
        self.in_flight[video] -= 1
        self.events.append(("end", request.id))
        return GenerationResult(text=request.prompt, raw_text=request.prompt)


def _jobs() -> list[VideoJob]:
    """Two videos: ``a`` with dialogues a1 (3 independent rounds) and a2 (a chain of 2), ``b`` with b1 (2 rounds)."""
    return [VideoJob("a", Path("a.mp4"), [DialogueTurns("a1", [1, 2, 3]),  # type: ignore[list-item]
                                          DialogueTurns("a2", [1, 2], chained=True)]),  # type: ignore[list-item]
            VideoJob("b", Path("b.mp4"), [DialogueTurns("b1", [1, 2])])]  # type: ignore[list-item]


def _run(model: _Recorder, concurrency: int, order: bool | None) -> _Runner:
    runner = _Runner(set(), set())
    dispatcher = LocalDispatcher(concurrency=concurrency, videos_in_flight=2, model=model, cache_order=order)
    asyncio.run(dispatcher.run(_jobs(), runner))  # type: ignore[arg-type]
    return runner


def test_a_videos_first_turn_goes_alone_and_the_next_videos_first_turn_jumps_the_queue() -> None:
    """One call slot, two videos in flight: a's first turn, then b's (it waited ahead of a's released turns), then
    the rest in order; no turn of a video starts before its first one ended."""
    model = _Recorder()
    runner = _run(model, concurrency=1, order=None)  # None: the backend's default (it declares a prefix cache)
    starts = [i for e, i in model.events if e == "start"]
    assert starts[0].startswith("a") and starts[1] == "b1:1"
    assert sorted(starts) == sorted(f"{d}:{r}" for d, r in runner.recorded) and len(starts) == 7
    for video in "ab":
        mine = [(e, i) for e, i in model.events if i.startswith(video)]
        assert mine[0][0] == "start" and mine[1] == ("end", mine[0][1]), mine


@pytest.mark.parametrize("order, prefix_cache", [(False, True), (None, False)])
def test_without_the_order_a_videos_turns_are_sent_at_once(order: bool | None, prefix_cache: bool) -> None:
    """Off (by the setting, or by default for a backend without a prefix cache): a's four ready turns
    (a1's three and a2's first) are in flight together (each call waits for the other three)."""
    model = _Recorder(prefix_cache=prefix_cache, hold=0)
    model.hold = 4
    model.together["b"].set()  # b has only two turns: they need not wait
    runner = _run(model, concurrency=8, order=order)
    assert len(runner.recorded) == 7 and runner.pending == 0


def test_the_default_is_the_backends_ability_and_the_setting_wins() -> None:
    from mtvbench.models.gemini import GeminiBackend
    from mtvbench.models.hf import HFBackend
    from mtvbench.models.openai_api import OpenAIBackend
    from mtvbench.models.vllm_engine import VLLMBackend

    declared = {cls.__name__: cls.prefix_cache for cls in (OpenAIBackend, GeminiBackend, VLLMBackend, HFBackend)}
    assert declared == {"OpenAIBackend": True, "GeminiBackend": True, "VLLMBackend": True, "HFBackend": False}
    on, off = _Recorder(prefix_cache=True), _Recorder(prefix_cache=False)
    assert (cache_order(None, on), cache_order(None, off)) == (True, False)
    assert (cache_order(False, on), cache_order(True, off)) == (False, True)

    class Plain:  # a backend of another package, not derived from BackendBase: off
        async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    assert cache_order(None, Plain()) is False


@pytest.fixture
def dataset(dataset: Path) -> Path:
    """The test dataset with two videos of different content (so with different frame prefixes)."""
    write_video(dataset / "videos" / "vid1.mp4", n_frames=40)
    return dataset


def _misses(state: ServerState) -> int:
    """Model replies whose frame prefix was not cached (the prefix-cache server: answered before it arrived)."""
    return sum(1 for judge, cached in state.cached if not judge and cached == 0)


@pytest.mark.parametrize("context, order", [("golden", None), ("self", None), ("golden", "off")])
def test_a_prefix_caching_server_computes_each_videos_frames_once(dataset: Path, tmp_path: Path, context: str,
                                                                  order: str | None) -> None:
    """Against a server that caches a prefix once a request with it was answered (each answer takes 0.3 s):
    with the default order (openai: on) only the first request of each of the two videos misses, at 16
    calls in flight; with the order off a video's turns are sent together and most of them miss."""

    def slow_answer(text: str, n: int) -> str:
        time.sleep(0.3)
        return f"Answer to: {text.rsplit('Current question: ', 1)[-1]} [frames={n}]"

    state = ServerState(prefix_cache=True, model_reply=slow_answer)
    with LoopbackServer(state) as srv:
        scores, _ = evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", context=context,
                                     concurrency=16, videos_in_flight=2, judge_runs=1, cache_order=order))
    assert scores.complete and len(model_requests(state)) >= 12
    if order is None:
        assert _misses(state) == 2
    else:  # 6 turns of each video sent together (golden context): every one misses
        assert _misses(state) > 2


def test_the_order_is_not_part_of_the_identity_and_a_resumed_run_keeps_its_answers(dataset: Path,
                                                                                   tmp_path: Path) -> None:
    """A run made with the order off, whose summary turns failed, resumes with it on: the identity is the
    same, and only the failed turns are asked again (every answer stored before is kept)."""
    failing = Faults(plan=lambda c: "server_error" if not c.judge and c.text.endswith("summary clip?") else None)
    state = ServerState(faults=failing)
    with LoopbackServer(state) as srv:
        off = cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", cache_order="off", concurrency=16,
                      videos_in_flight=2, judge_runs=1)
        on = off.model_copy(update={"cache_order": "on"})
        assert off.identity() == on.identity()
        first, _ = evaluate(off)
        asked_first = {r["text"] for r in model_requests(state)}
        n_first = len(state.requests)
        state.faults = Faults()
        second, _ = evaluate(on)
    assert not first.complete and second.complete
    again = [r["text"] for r in state.requests[n_first:] if not r["judge"]]
    assert len(again) == 2 and all(t.endswith("summary clip?") for t in again)  # golden: rounds 3 and 5
    assert set(again) <= asked_first


def _frame_prefix(raw: bytes) -> bytes:
    """The bytes of a chat request from its messages up to the end of its last frame part: what a provider's
    prefix cache can reuse when the frames come first."""
    start, end = raw.index(b'"messages"'), max(raw.rfind(b'"image_url"'), raw.rfind(b'"video_url"'))
    return raw[start: raw.index(b"}}", end) + 2]


@pytest.mark.parametrize("video_part", [False, True])
@pytest.mark.parametrize("context", ["golden", "self", "none"])
def test_the_frame_prefix_is_byte_identical_across_a_videos_turns(dataset: Path, tmp_path: Path, context: str,
                                                                  video_part: bool) -> None:
    """Figure 15's protocol (frames, then the text): every model request of a video carries the same system
    prompt and frame parts, in the same encoding, before anything that differs between its turns."""
    state = ServerState()
    with LoopbackServer(state) as srv:
        model = {"base_url": srv.url, "extra": {"retry_base_s": 0.01, "video_part": video_part}, "timeout_s": 20,
                 "system": "You watch videos."}
        scores, _ = evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", context=context,
                                     judge_runs=1, concurrency=8, videos_in_flight=2, model_settings=model))
    assert scores.complete
    by_video: dict[str, set[bytes]] = defaultdict(set)
    for r in model_requests(state):
        body = json.loads(r["raw"])
        assert body["messages"][0] == {"role": "system", "content": "You watch videos."}
        parts = body["messages"][-1]["content"]
        assert parts[-1]["type"] == "text" and all(p["type"] != "text" for p in parts[:-1])  # frames first
        prefix = _frame_prefix(r["raw"])
        assert r["text"].encode() not in prefix and (b"video_url" in prefix) == video_part
        by_video[_video_of(r["text"])].add(prefix)
    assert set(by_video) == {"vid0", "vid1"}
    assert all(len(prefixes) == 1 for prefixes in by_video.values())  # one prefix per video, byte for byte
    assert by_video["vid0"] != by_video["vid1"]


def _video_of(text: str) -> str:
    """The dataset of ``make_dataset``: the tasks at even positions are about vid0, the others vid1."""
    stems = ["object_reference", "memory_recall", "summary", "answer_refusal", "topic_shifting",
             "proactive_interaction"]
    task = next(s for s in stems if f"about the {s} clip?" in text.rsplit("Current question: ", 1)[-1])
    return f"vid{stems.index(task) % 2}"
