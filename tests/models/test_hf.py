"""hf: backend end to end with a tiny randomly initialised model built here (no downloads)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.extras import require

require("hf", "torch", "transformers")

from typer.testing import CliRunner  # noqa: E402

from mtvbench.media.frames import FrameSettings, sample_frames  # noqa: E402
from mtvbench.models.hf import HFBackend  # noqa: E402
from mtvbench.models.hf_families import detect_family  # noqa: E402
from mtvbench.models.local import GenParams, RawOutput, build_messages  # noqa: E402
from mtvbench.models.registry import create_backend, register_backend  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.models.tiny import IMAGE_TOKEN, TOKENS_PER_IMAGE, build_tiny_llava  # noqa: E402
from mtvbench.records import GenerationConfig, GenerationRequest  # noqa: E402
from mtvbench.run.evaluate import evaluate  # noqa: E402
from mtvbench.run.settings import build_config  # noqa: E402
from mtvbench.run.store import RunStore  # noqa: E402
from tests.support.datasets import write_video  # noqa: E402

pytestmark = pytest.mark.torch

#: what the recording backend saw: one entry per forward pass
SEEN: list[dict[str, Any]] = []


@register_backend("hf-recorded")
def _recorded(name: str, options: BackendOptions) -> HFBackend:
    """The real hf backend, with its engine's input preparation observed (texts, image tokens, pixels)."""
    backend = HFBackend(name, options)
    engine = backend.engine
    prepare = engine.prepare

    def observed(requests: Sequence[GenerationRequest]) -> Any:
        batch = prepare(requests)
        image_id = engine.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
        SEEN.append({
            "ids": [r.id for r in requests],
            "texts": engine.tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=False),
            "image_tokens": [int((row == image_id).sum()) for row in batch["input_ids"]],
            "pixel_values": tuple(batch["pixel_values"].shape),
        })
        return batch

    engine.prepare = observed  # type: ignore[method-assign]
    return backend


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny") / "llava")


def test_tiny_model_run_end_to_end(tiny_model: Path, dataset: Path, tmp_path: Path) -> None:
    SEEN.clear()
    cfg = build_config({
        "data": dataset, "model": f"hf-recorded:{tiny_model}", "judge": "offline", "out": tmp_path / "run",
        "frames": 4, "judge_runs": 1, "cache_dir": tmp_path / "cache", "bootstrap": 0,
        "model_settings": {"max_tokens": 6, "system": "SYSTEM-PROMPT-X", "extra": {"batch_size": 4}},
    })
    scores, summary = evaluate(cfg)
    assert summary.calls == 12 and summary.call_errors == 0
    # batching: golden context makes the 6 turns of a video ready at once -> passes of at most 4; the call
    # gate also gathers ready turns across the videos in flight, so the passes are 4+2+4+2 or 4+4+4
    sizes = sorted(len(s["ids"]) for s in SEEN)
    assert sum(sizes) == 12 and max(sizes) == 4 and sizes in ([2, 2, 4, 4], [4, 4, 4])
    for s in SEEN:
        # frames reach the processor: 4 frames per turn, 4 image tokens each, pixel values for all of them
        assert s["image_tokens"] == [4 * TOKENS_PER_IMAGE] * len(s["ids"])
        assert s["pixel_values"] == (4 * len(s["ids"]), 3, 28, 28)
        for text in s["texts"]:
            assert "SYSTEM-PROMPT-X" in text  # system turn through the chat template
            assert text.index(IMAGE_TOKEN) < text.index("Current question:")  # frames before the prompt
            assert text.rstrip().endswith("assistant")  # generation prompt
    texts = [t for s in SEEN for t in s["texts"]]
    q5 = next(t for t in texts if "Current question: Question 5 about the topic_shifting clip?" in t)
    # golden history of rounds 1-4 is in the templated input
    for k in range(1, 5):
        assert f"User: Question {k} about the topic_shifting clip?" in q5
        assert f"Assistant: The red square moves right in round {k} and the blue circle stays." in q5
    store = RunStore(tmp_path / "run", create=False)
    try:
        answers = store.responses()
    finally:
        store.close()
    assert len(answers) == 12
    assert all(a["outcome"] in ("ok", "empty") for a in answers.values())
    assert all(0 < a["usage"]["completion_tokens"] <= 6 and a["usage"]["prompt_tokens"] > 16
               for a in answers.values())
    s = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert s["counts"]["scored_turns"] == 12 and scores.overall == s["overall"]  # judged and scored


def test_cli_run_on_bundled_sample(tiny_model: Path, tmp_path: Path) -> None:
    from mtvbench.cli import app
    from mtvbench.data.sample import materialize

    data = materialize(tmp_path / "sample")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"model_settings": {"max_tokens": 4, "extra": {"batch_size": 8}}}))
    result = CliRunner().invoke(app, [
        "run", "--data", str(data), "--model", f"hf:{tiny_model}", "--judge", "offline", "--out",
        str(tmp_path / "run"), "--frames", "3", "--judge-runs", "1", "--limit", "1", "--config", str(cfg),
        "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert lines and all("answer" in x for x in lines)
    s = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert s["counts"]["scored_turns"] == len(lines)


def test_generation_params_and_greedy_determinism(tiny_model: Path, tmp_path: Path) -> None:
    frames = sample_frames(write_video(tmp_path / "v.mp4"), FrameSettings(num_frames=2, max_side=64))
    backend = create_backend(f"hf:{tiny_model}", BackendOptions(max_tokens=5, extra={"batch_size": 2}))
    reqs = [GenerationRequest(id=str(i), prompt="Current question: what moves?", frames=frames) for i in range(3)]
    a = asyncio.run(backend.generate_batch(reqs))
    b = asyncio.run(backend.generate(reqs[0]))
    asyncio.run(backend.aclose())
    assert len(a) == 3 and a[0].raw_text == a[1].raw_text == a[2].raw_text == b.raw_text  # greedy, padding-safe
    assert all(r.usage.completion_tokens <= 5 for r in a)
    p = GenParams.of(reqs[0], BackendOptions(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05))
    assert p.hf_kwargs() == {"max_new_tokens": 1024, "do_sample": True, "temperature": 0.7, "top_p": 0.8,
                             "top_k": 20, "repetition_penalty": 1.05}
    greedy = GenParams.of(reqs[0], BackendOptions(temperature=0.6, do_sample=False))
    assert greedy.hf_kwargs()["do_sample"] is False and greedy.hf_kwargs()["temperature"] is None


class _ScriptedEngine:
    """An engine that answers from a script: exercises the backend's grouping and think handling."""

    batch_size = 8

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], GenParams]] = []

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        self.calls.append(([r.id for r in requests], params))
        if any(r.id == "boom" for r in requests):
            raise RuntimeError("CUDA out of memory")
        return [RawOutput(text=f"<think>look at {r.id}</think>\nanswer {r.id}" if r.id != "blank" else "",
                          prompt_tokens=10, completion_tokens=3) for r in requests]

    def close(self) -> None:
        return None


def test_batches_group_by_params_split_thinking_and_record_errors() -> None:
    engine = _ScriptedEngine()
    backend = HFBackend("scripted", BackendOptions(max_tokens=32), engine=engine)
    reqs = [GenerationRequest(id="a", prompt="p"),
            GenerationRequest(id="b", prompt="p", generation=GenerationConfig(max_tokens=8)),
            GenerationRequest(id="c", prompt="p"), GenerationRequest(id="blank", prompt="p")]
    out = asyncio.run(backend.generate_batch(reqs))
    assert [c[0] for c in engine.calls] == [["a", "c", "blank"], ["b"]]  # one parameter set per pass
    assert out[0].text == "answer a" and out[0].reasoning == "look at a" and out[0].outcome == "ok"
    assert out[1].text == "answer b" and engine.calls[1][1].max_new_tokens == 8
    assert out[3].outcome == "empty"
    err = asyncio.run(backend.generate_batch([GenerationRequest(id="boom", prompt="p")]))
    assert err[0].outcome == "error" and "out of memory" in (err[0].error or "")


def test_messages_and_family_detection(tmp_path: Path) -> None:
    frames = sample_frames(write_video(tmp_path / "v.mp4"), FrameSettings(num_frames=3, max_side=64))
    req = GenerationRequest(id="x", prompt="Current question: q", frames=frames)
    video = build_messages(req, "sys", "video")
    assert video[0] == {"role": "system", "content": [{"type": "text", "text": "sys"}]}
    assert video[1]["content"] == [{"type": "video"}, {"type": "text", "text": "Current question: q"}]
    images = build_messages(req, None, "images")
    assert [c["type"] for c in images[0]["content"]] == ["image", "image", "image", "text"]
    assert detect_family("OpenGVLab/InternVL3_5-8B") == "internvl"
    assert detect_family("OpenGVLab/InternVL3_5-8B-HF") is None  # transformers-native conversion
    assert detect_family("OpenGVLab/InternVideo2_5_Chat_8B") == "internvl"
    assert detect_family("openbmb/MiniCPM-V-4_5") == "minicpm"
    assert detect_family("Qwen/Qwen3-VL-8B-Instruct") is None
    local = tmp_path / "ckpt"
    local.mkdir()
    (local / "config.json").write_text(json.dumps({"architectures": ["InternVLChatModel"], "auto_map": {}}))
    assert detect_family(str(local)) == "internvl"
