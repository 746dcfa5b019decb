"""The pipelined local executor: dialogues in self context do not wait for each other, a batching
backend gets ready turns across videos, and a stopped run sends nothing more."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mtvbench.dispatch import NotSent
from mtvbench.dispatch.local import CallGate
from mtvbench.models.registry import register_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.evaluate import evaluate
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.run_helpers import cfg_for

SLOW = "Question 1 about the object_reference clip?"


def test_self_context_dialogues_go_on_while_another_waits(dataset: Path, tmp_path: Path) -> None:
    """object_reference and summary share vid0; the first round of object_reference takes 1.5 s. In
    self context each dialogue is its own chain: summary's later rounds are asked meanwhile (a
    wave-by-wave loop would hold them until the slow round returned). Today's order: under the
    cache-aware order every turn of vid0 waits for its first one (tests/dispatch/test_cache_order.py)."""

    def reply(text: str, n: int) -> str:
        if text.endswith(SLOW):
            time.sleep(1.5)
        return f"My answer to: {text[-40:]}"

    with LoopbackServer(ServerState(model_reply=reply)) as srv:
        scores, summary = evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", context="self",
                                           judge_runs=1, cache_order="off"))
    model = [r for r in srv.state.requests if not r["judge"]]
    slow = next(r for r in model if r["text"].endswith(SLOW))
    summary_rounds = [r for r in model if "about the summary clip?" in r["text"].rsplit("Current question: ", 1)[-1]]
    assert len(summary_rounds) == 5 and summary.calls == 30  # every round of every dialogue, in self context
    # every summary round was asked before the slow one came back
    assert all(r["t"] < slow["t"] + 1.4 for r in summary_rounds), [r["t"] - slow["t"] for r in summary_rounds]
    assert scores.complete


class _Recorder:
    """A local batching backend: records the size of every batch it gets."""

    name = "batchrec"
    needs_frames = False
    batch_size = 8
    batches: list[int] = []

    async def generate(self, request: GenerationRequest) -> GenerationResult:  # pragma: no cover - batches only
        return (await self.generate_batch([request]))[0]

    async def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        type(self).batches.append(len(requests))
        await asyncio.sleep(0.05)
        return [GenerationResult(text=r.golden_answer or "", raw_text=r.golden_answer or "") for r in requests]

    async def aclose(self) -> None:
        return None


@register_backend("batchrec")
def _batchrec(name: str, options: BackendOptions) -> _Recorder:
    return _Recorder()


def test_batches_gather_ready_turns_across_videos(dataset: Path, tmp_path: Path) -> None:
    _Recorder.batches = []
    with LoopbackServer() as srv:  # the judge only
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", model="batchrec:x", judge_runs=1,
                         concurrency=1))
    # 12 scored turns over 2 videos (6 per video): one full batch of 8 mixes both videos' turns
    assert sorted(_Recorder.batches, reverse=True) == [8, 4], _Recorder.batches


def test_a_stopped_run_sends_nothing_more() -> None:
    sent: list[str] = []

    class Model:
        name = "m"

        async def generate(self, request: GenerationRequest) -> GenerationResult:
            sent.append(request.id)
            await asyncio.sleep(0.05)
            return GenerationResult(text="a", raw_text="a")

        async def aclose(self) -> None:
            return None

    stop = threading.Event()

    async def go() -> list[object]:
        gate = CallGate(Model(), 2, stop.is_set)

        async def one(i: int) -> object:
            try:
                res = await gate.call(GenerationRequest(id=str(i), prompt="p"))
            except NotSent:
                return "not sent"
            stop.set()  # the first answer stops the run: the calls still waiting for a slot are not sent
            return res.text

        return list(await asyncio.gather(*(one(i) for i in range(6))))

    out = asyncio.run(go())
    assert sent == ["0", "1"] and out == ["a", "a", "not sent", "not sent", "not sent", "not sent"]
