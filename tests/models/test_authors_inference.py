"""The authors' inference scripts reproduced on ``hf:``, checked against what the scripts did on the bundled sample
(tests/fixtures/authors/sample/inference: qwen.jsonl, internvl.jsonl, meta.json).

Qwen rows: a tiny Qwen3-VL and a tiny Qwen2.5-VL, built here from a config with their real processor classes,
run as the presets (``--model qwen3-vl-8b-instruct --model-option checkpoint=DIR``) through the CLI: the message
handed to ``apply_chat_template`` is the script's (prompt text byte for byte, the video item's keys), the call's
keyword arguments and ``generate``'s are the script's, the clip has the script's frame indices, count and size,
and the store records the ``video_grid_thw`` that the same processor makes of a clip as the fixture describes it,
and the transformers version. InternVL rows: the remote-code model cannot be built offline, so its ``chat()`` is a
stand-in that records its arguments; everything before it (frames, tiles, question, history) is mtvbench's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.support.extras import require

require("hf", "torch", "transformers")

import av  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from mtvbench.data.schema import TASKS  # noqa: E402
from mtvbench.models import hf  # noqa: E402
from mtvbench.models.hf_families import internvl  # noqa: E402
from mtvbench.models.tiny import build_tiny_qwen_vl  # noqa: E402
from mtvbench.run.store import RunStore  # noqa: E402
from tests.support.authors_fixtures import load_case, load_internvl, load_qwen  # noqa: E402
from tests.support.run_helpers import cli  # noqa: E402

pytestmark = pytest.mark.torch

META = load_case("sample").meta
STEMS = {t.official_stem: t.value for t in TASKS}
#: the script's apply_chat_template / batch_decode keyword arguments, as recorded
TEMPLATE_KWARGS = META["qwen"]["apply_chat_template_kwargs"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mtvbench.data.sample import materialize

    return materialize(tmp_path_factory.mktemp("sample") / "data")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frame-cache")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-qwen")
    # Qwen2.5-VL keeps every frame: a small pixel budget keeps the tiny model's inputs small on CPU
    small = transformers.Qwen2VLVideoProcessor(min_pixels=28 * 28, max_pixels=56 * 56 * 4)
    return {"qwen3-vl-8b-instruct": build_tiny_qwen_vl(root / "qwen3", "qwen3_vl"),
            "qwen2.5-vl-7b": build_tiny_qwen_vl(root / "qwen25", "qwen2_5_vl", small)}


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """The hf engine, with the processor's apply_chat_template and the model's generate observed."""
    seen: dict[str, list[Any]] = {"template": [], "generate": []}
    init = hf.GenericEngine.__init__

    def observing_init(self: hf.GenericEngine, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        apply, generate = self.processor.apply_chat_template, self.model.generate

        def template(messages: Any, **kw: Any) -> Any:
            out = apply(messages, **kw)
            seen["template"].append((json.loads(json.dumps(messages)), dict(kw), set(out.keys())))
            return out

        def gen(**kw: Any) -> Any:
            seen["generate"].append(kw)
            return generate(**kw)

        self.processor.apply_chat_template = template
        self.model.generate = gen

    monkeypatch.setattr(hf.GenericEngine, "__init__", observing_init)
    yield seen


def turn_key(task: str, video: str, event: Any, round_key: str) -> tuple[str, str, str, int]:
    """A script's turn (task file stem, video, event index, ``Round k``) as responses.jsonl names it."""
    return STEMS[task], video, str(event), int(round_key.split()[-1])


def responses(run: Path) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return {(x["task"], x["video"], str(x["event"]), x["round"]): x for x in lines}


def described_clip(path: Path, frames: int, size: tuple[int, int], fps: float) -> Path:
    """An MP4 as the fixture describes the script's (frame count, size, frame rate, codec); any content."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        rng = np.random.default_rng(0)
        for _ in range(frames):
            img = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")))
        out.mux(stream.encode(None))
    return path


def processor_grid(checkpoint: Path, clip: Path) -> list[int]:
    """``video_grid_thw`` of the script's message for ``clip``, from the checkpoint's own processor."""
    processor = transformers.AutoProcessor.from_pretrained(checkpoint)
    processor.video_processor.fetch_videos = hf._pyav_fetch  # torchcodec cannot run here (as in the run)
    message = [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "video", "video": str(clip)}]}]
    out = processor.apply_chat_template([message], **TEMPLATE_KWARGS)
    return [int(x) for x in out["video_grid_thw"][0]]


@pytest.mark.parametrize("preset", ["qwen3-vl-8b-instruct", "qwen2.5-vl-7b"])
def test_qwen_preset_on_a_local_checkpoint_sends_the_scripts_call(
        preset: str, sample: Path, cache: Path, checkpoints: dict[str, Path], observed: dict[str, list[Any]],
        tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = cli("run", "--data", sample, "--model", preset, "--model-option", f"checkpoint={checkpoints[preset]}",
              "--model-option", "batch_size=8", "--max-tokens", "3", "--judge", "offline", "--judge-runs", "1",
              "--out", run, "--cache-dir", cache, "--quiet")
    assert res.exit_code == 0, res.output
    config = json.loads(json.dumps(__import__("yaml").safe_load((run / "config.yaml").read_text())))
    assert config["model_spec"] == f"hf:{checkpoints[preset]}"
    assert config["inference_sent"] == "authors: eval/infer_qwen25vl.py"  # the script's own call: nothing to flag
    assert config["preset_overrides"] == ["max_tokens"]  # the local copy of the checkpoint is not a change

    # the script's apply_chat_template call, and generate(**inputs, max_new_tokens=N) with nothing else
    assert observed["template"] and all(kw == TEMPLATE_KWARGS for _, kw, _ in observed["template"])
    for (_, _, inputs), kw in zip(observed["template"], observed["generate"], strict=True):
        assert set(kw) == inputs | {"max_new_tokens"} and kw["max_new_tokens"] == 3  # **inputs, max_new_tokens=N
        assert {"pixel_values_videos", "video_grid_thw"} <= inputs
    sent = {m[0]["content"][0]["text"]: m for batch, _, _ in observed["template"] for m in batch}

    got = responses(run)
    script_turns = [t for t in load_qwen("sample") if t.kind == "model"]
    # the script answers 46 model turns; mtvbench asks the 39 whose answers eval.py judges (golden context:
    # an answer never judged changes nothing), every one of them with the script's prompt
    asked = [t for t in script_turns
             if got.get(turn_key(t.task, t.video, t.event_index, t.round_key), {}).get("answer") is not None]
    assert len(script_turns) == 46 and len(asked) == len(sent) == 39
    grids: dict[tuple[int, int, int], list[int]] = {}
    for t in asked:
        message = sent[t.prompt]  # the prompt text, byte for byte
        assert t.messages is not None
        video = dict(t.messages[0]["content"][1])
        mine = dict(message[0]["content"][1])
        assert Path(mine.pop("video")).name == "clip.mp4" and video.pop("video").endswith("_processed.mp4")
        assert mine == video and message[0]["role"] == "user" and len(message) == 1  # the item's keys and values
        row = got[turn_key(t.task, t.video, t.event_index, t.round_key)]
        fed = row["inputs"]
        mp4 = META["qwen"]["videos"][t.video]["processed_mp4"]
        assert fed["clip"]["indices"] == META["qwen"]["videos"][t.video]["frame_indices"]
        assert fed["clip"]["frames"] == mp4["frames"] and tuple(fed["clip"]["size"]) == (mp4["width"], mp4["height"])
        assert fed["transformers"] == transformers.__version__ and fed["video_reader"] in ("pyav", "processor")
        key = (mp4["frames"], mp4["width"], mp4["height"])
        if key not in grids:
            clip = described_clip(tmp_path / f"described-{len(grids)}.mp4", mp4["frames"],
                                  (mp4["width"], mp4["height"]), mp4["fps"])
            grids[key] = processor_grid(checkpoints[preset], clip)
        assert fed["video_grid_thw"] == grids[key]
    t, h, w = next(iter(grids.values()))
    if preset.startswith("qwen3"):  # the processor's own resampling: 17 frames, padded to 18 (9 pairs)
        assert t == 9 and fed["frames_fed"] == 18
    else:  # Qwen2.5-VL keeps all 128
        assert t == 64 and fed["frames_fed"] == 128
    store = RunStore(run, create=False)  # each turn asked once
    try:
        assert len(store.responses()) == 39
    finally:
        store.close()


# ------------------------------------------------------------------------------ InternVL


class StandInChat:
    """InternVL's remote-code model, as far as the engine uses it: ``chat()`` records its arguments."""

    def __init__(self) -> None:
        self.system_message = "the checkpoint's default system message"
        self.calls: list[dict[str, Any]] = []
        self._param = torch.nn.Parameter(torch.zeros(1))

    def eval(self) -> StandInChat:
        return self

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        yield self._param

    def chat(self, tokenizer: Any, pixel_values: Any, question: str, generation_config: dict[str, Any],
             **kwargs: Any) -> str:
        self.calls.append({"pixel_values": pixel_values, "question": question, "generation_config": generation_config,
                           "kwargs": kwargs, "system": self.system_message})
        return f"answer {len(self.calls)}"


class StandInTokenizer:
    def __call__(self, text: str) -> Any:
        return type("Encoded", (), {"input_ids": text.split()})()


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandInChat:
    """``from_pretrained`` of the InternVL engine returns the stand-ins (the loading code runs as it is)."""
    model = StandInChat()
    loads: list[tuple[str, dict[str, Any]]] = []

    class Auto:
        @staticmethod
        def from_pretrained(path: str, **kwargs: Any) -> Any:
            loads.append((path, kwargs))
            return model if "use_flash_attn" in kwargs else StandInTokenizer()

    fake = type("transformers", (), {"AutoModel": Auto, "AutoTokenizer": Auto, "__version__": "stand-in"})
    monkeypatch.setattr(internvl, "require_torch", lambda: (torch, fake))
    model.loads = loads  # type: ignore[attr-defined]
    return model


def test_internvl_preset_calls_chat_as_the_script(sample: Path, cache: Path, stand_in: StandInChat,
                                                  tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = cli("run", "--data", sample, "--model", "internvl3.5-8b", "--judge", "offline", "--judge-runs", "1",
              "--out", run, "--cache-dir", cache, "--quiet")
    assert res.exit_code == 0, res.output
    script_turns = [t for t in load_internvl("sample") if t.kind == "model"]
    assert len(script_turns) == META["internvl"]["model_turns"] == 46
    assert len(stand_in.calls) == 39  # the turns whose answers eval.py judges (see the Qwen test)
    by_question: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Any]] = {}
    for call in stand_in.calls:
        history = call["kwargs"]["history"]
        assert isinstance(history, list) and all(isinstance(p, tuple) for p in history)  # the script's HISTORY
        by_question[(call["question"], tuple(history))] = call
    got = responses(run)
    checked = 0
    for t in script_turns:
        row = got.get(turn_key(t.task, t.video, t.event_index, t.round_key), {})
        if row.get("answer") is None:
            continue
        checked += 1
        assert t.question is not None and t.history is not None
        call = by_question[(t.question, t.history)]  # question (frame lines + prompt) and history byte for byte
        assert set(call["kwargs"]) == {"num_patches_list", "history"}  # nothing else, as the script
        assert tuple(call["kwargs"]["num_patches_list"]) == t.num_patches_list
        assert tuple(call["pixel_values"].shape) == t.pixel_values_shape
        assert call["generation_config"] == META["internvl"]["generation_config"]
        assert call["system"] == "the checkpoint's default system message"  # No Think: the model's own
        fed = row["inputs"]
        assert fed["indices"] == META["internvl"]["videos"][t.video]["frame_indices"]
        assert fed["pixel_values"] == list(t.pixel_values_shape) and fed["transformers"] == "stand-in"
    assert checked == 39


def test_internvl_think_gets_the_scripts_system_message(sample: Path, cache: Path, stand_in: StandInChat,
                                                         tmp_path: Path) -> None:
    res = cli("run", "--data", sample, "--model", "internvl3.5-8b-think", "--judge", "offline", "--judge-runs", "1",
              "--tasks", "summary", "--out", tmp_path / "run", "--cache-dir", cache, "--quiet")
    assert res.exit_code == 0, res.output
    think = META["internvl_think"]
    assert stand_in.calls and len(stand_in.calls) == think["model_turns"]
    for call in stand_in.calls:
        assert call["system"] == think["system_message"]
        assert call["generation_config"] == think["generation_config"]
        assert tuple(call["pixel_values"].shape) == (128, 3, 448, 448)  # the paper's 448, not the script's 720
