"""The dispatcher core: one chain rule (a round not recorded as an answer stops its dialogue, whatever the
reason), one pipeline every dispatcher runs videos through, and the moved names still importable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mtvbench.dispatch import DialogueTurns, VideoJob, run_dialogue
from mtvbench.dispatch.local import CallGate, LocalDispatcher
from mtvbench.media.frames import VideoError
from mtvbench.models.backend import BackendBase
from mtvbench.records import GenerationRequest, GenerationResult


def _ask(recorded: dict[int, bool], asked: list[int]) -> Callable[[int], Awaitable[bool]]:
    async def ask(r: int) -> bool:
        asked.append(r)
        await asyncio.sleep(0)
        return recorded.get(r, True)

    return ask


@pytest.mark.parametrize("chained, asked_rounds, pending", [(True, [1, 2], [1]), (False, [1, 2, 3], [])])
def test_one_chain_rule(chained: bool, asked_rounds: list[int], pending: list[int]) -> None:
    """Round 2 is not recorded as an answer (an error, or a result that could not be stored): in a chain
    round 3 is left pending and counted; independent rounds are all asked."""
    asked: list[int] = []
    counted: list[int] = []
    turns = DialogueTurns(dialogue=None, rounds=[1, 2, 3], chained=chained)  # type: ignore[arg-type, list-item]
    asyncio.run(run_dialogue(turns, _ask({2: False}, asked), counted.append))  # type: ignore[arg-type]
    assert sorted(asked) == asked_rounds and counted == pending


class _Runner:
    """A stand-in runner that records everything a dispatcher tells it (the TurnRecorder interface)."""

    def __init__(self, unreadable: set[str], fail_record: set[tuple[str, int]]):
        self.unreadable, self.fail_record = unreadable, fail_record
        self.progress = self
        self.recorded: list[tuple[str, int]] = []
        self.failed: dict[str, str] = {}
        self.pending = 0
        self.frames_done = 0

    @property
    def stopped(self) -> bool:
        return False

    def advance(self, name: str, n: int = 1) -> None:
        self.frames_done += n if name == "frames" else 0

    def note(self, label: str, message: str) -> None: ...

    def request(self, dialogue: Any, rnd: int, frames: Any) -> GenerationRequest:
        return GenerationRequest(id=f"{dialogue}:{rnd}", prompt=f"{dialogue} round {rnd}")

    async def frames(self, video: str, run: Any) -> Any:
        if video in self.unreadable:
            raise VideoError(f"{video}: not a video")
        return f"frames of {video}"

    def record(self, dialogue: Any, rnd: int, request: GenerationRequest, result: GenerationResult) -> bool:
        self.recorded.append((dialogue, rnd))
        return (dialogue, rnd) not in self.fail_record

    def turns_pending(self, n: int) -> None:
        self.pending += n

    def video_failed(self, video: str, why: str) -> None:
        self.failed[video] = why

    def warn(self, message: str) -> None: ...

    def stop(self, error: BaseException) -> None:
        raise error


class _Model(BackendBase):
    name = "echo"

    def __init__(self) -> None:
        self.ended: list[Any] = []

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(text=request.prompt, raw_text=request.prompt)

    async def end_video(self, frames: Any) -> None:
        self.ended.append(frames)


def test_the_pipeline_reports_every_turn_it_does_not_ask() -> None:
    jobs = [VideoJob("v1", Path("v1.mp4"), [DialogueTurns("a", [1, 2, 3], chained=True),  # type: ignore[arg-type]
                                            DialogueTurns("b", [1, 2], chained=False)]),  # type: ignore[arg-type]
            VideoJob("v2", Path("v2.mp4"), [DialogueTurns("c", [1, 2], chained=True)])]  # type: ignore[arg-type]
    recorder, model = _Runner(unreadable={"v2"}, fail_record={("a", 1)}), _Model()
    asyncio.run(LocalDispatcher(concurrency=2, videos_in_flight=1, model=model).run(jobs, recorder))  # type: ignore[arg-type]
    # a's round 1 was not recorded as an answer: rounds 2 and 3 left pending; v2 unreadable: its 2 turns left pending
    assert sorted(recorder.recorded) == [("a", 1), ("b", 1), ("b", 2)]
    assert recorder.pending == 2 + 2 and recorder.failed == {"v2": "v2: not a video"} and recorder.frames_done == 2
    assert model.ended == ["frames of v1"]  # the backend was told once v1's turns were done (v2 had no frames)


def test_a_watchdog_error_ends_the_run() -> None:
    """What a stall detector does: its error ends ``run_videos`` while calls are still waiting."""
    from mtvbench.dispatch import run_videos
    from mtvbench.dispatch.local import _LocalSession

    class Slow(_Model):
        async def generate(self, request: GenerationRequest) -> GenerationResult:
            await asyncio.sleep(30)
            raise AssertionError("never answered")

    class Stalled(Exception):
        pass

    async def watchdog() -> None:
        await asyncio.sleep(0.05)
        raise Stalled("no progress")

    async def go() -> None:
        recorder = _Runner(set(), set())
        session = _LocalSession(recorder, CallGate(Slow(), 1), None, Slow())  # type: ignore[arg-type]
        jobs = [VideoJob("v", Path("v.mp4"), [DialogueTurns("a", [1, 2])])]  # type: ignore[list-item]
        await asyncio.wait_for(run_videos(jobs, recorder, 1, lambda state: session, watchdog), 10)  # type: ignore[arg-type]

    with pytest.raises(Stalled, match="no progress"):
        asyncio.run(go())


def test_both_dispatchers_implement_the_whole_lifecycle() -> None:
    import inspect

    from mtvbench.dispatch import Dispatcher
    from mtvbench.dispatch.ray import RayDispatcher

    members = [n for n in ("driver_model", "start", "run", "backend", "offload", "aclose") if hasattr(Dispatcher, n)]
    assert len(members) == 6
    for cls in (LocalDispatcher, RayDispatcher):
        assert {"name", "remote_calls"} <= set(vars(cls))
        for n in members:
            want, got = inspect.signature(getattr(Dispatcher, n)), inspect.signature(getattr(cls, n))
            assert list(got.parameters) == list(want.parameters), (cls.__name__, n)
            assert inspect.iscoroutinefunction(getattr(cls, n)) == inspect.iscoroutinefunction(getattr(Dispatcher, n))
