"""Input preparation of the family adapters and of the vLLM engine, offline (no checkpoints, no vLLM)."""

from __future__ import annotations

import base64
import importlib.util

import numpy as np
import pytest
from PIL import Image

from mtvbench.errors import ConfigError
from mtvbench.media.frames import FrameSettings, sample_frames
from mtvbench.models.hf_families import internvl, minicpm, videochat_flash, videollama3
from mtvbench.models.local import GenParams
from mtvbench.models.presets import get_preset
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.models.vllm_engine import chat_messages, engine_kwargs, sampling_kwargs, video_input
from mtvbench.records import GenerationRequest
from mtvbench.run.settings import build_config
from mtvbench.util.timecodes import frame_label
from tests.support.datasets import write_video


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory):
    path = write_video(tmp_path_factory.mktemp("v") / "clip.mp4", n_frames=24, size=(64, 48))
    return sample_frames(path, FrameSettings(num_frames=4, size=(448, 448)))


# ------------------------------------------------------------------------------ InternVL / InternVideo


def test_internvl_one_448_tile_per_frame(frames) -> None:
    images = frames.images()
    pixels, patches, question = internvl.prepare_inputs(images, "Current question: what?", 448, max_num=1)
    assert pixels is not None and pixels.shape == (4, 3, 448, 448) and pixels.dtype == np.float32
    assert patches == [1, 1, 1, 1]
    assert question == "Frame1: <image>\nFrame2: <image>\nFrame3: <image>\nFrame4: <image>\nCurrent question: what?"
    # ImageNet normalisation: frame 0 of the test video is black -> (0 - mean) / std per channel
    first = pixels[0, :, 200, 200]
    expected = -np.array(internvl.IMAGENET_MEAN) / np.array(internvl.IMAGENET_STD)
    assert np.allclose(first, expected, atol=0.05)


def test_internvl_dynamic_tiles() -> None:
    # a 728x728 frame (InternVideo2.5 input) with up to 6 tiles: a 2x2 grid wins the tie with 1x1
    assert internvl.choose_grid(728, 728, 448, 1, 6) == (2, 2)
    assert internvl.choose_grid(300, 300, 448, 1, 6) == (1, 1)  # small image: no upscaling into tiles
    assert internvl.choose_grid(896, 448, 448, 1, 6) == (2, 1)
    tiles = internvl.tile_image(Image.new("RGB", (896, 448)), 448, 1, 6)
    assert len(tiles) == 3 and all(t.size == (448, 448) for t in tiles)  # 2 tiles + thumbnail
    assert internvl.grid_candidates(1, 2) == [(1, 1), (1, 2), (2, 1)]


def test_internvl_think_preset_and_generation_config() -> None:
    p = get_preset("internvl3.5-8b-think")
    assert p is not None
    opts = p.backend_options()
    params = GenParams.of(GenerationRequest(id="x", prompt="q"), opts)
    # the authors' eval/infer_internvl.py generation_config, Think and No Think
    assert internvl.generation_config(params) == {"max_new_tokens": 8192, "do_sample": True, "temperature": 0.6,
                                                  "top_p": 0.001, "repetition_penalty": 1.05}
    nothink = GenParams.of(GenerationRequest(id="x", prompt="q"), get_preset("internvl3.5-8b").backend_options())
    assert internvl.generation_config(nothink) == {"max_new_tokens": 1024, "do_sample": True, "temperature": 0.1,
                                                   "top_p": 0.001, "repetition_penalty": 1.05}


# ------------------------------------------------------------------------------ MiniCPM


def test_minicpm_chat_inputs(frames) -> None:
    req = GenerationRequest(id="x", prompt="Current question: what?", frames=frames)
    opts = get_preset("minicpm-v4.5").backend_options()
    params = GenParams.of(req, opts)
    kw = minicpm.chat_kwargs(req, params, opts, v45=True)
    content = kw["msgs"][0]["content"]
    assert kw["msgs"][0]["role"] == "user" and len(content) == 5 and content[-1] == "Current question: what?"
    assert all(isinstance(c, Image.Image) for c in content[:4])
    assert kw["use_image_id"] is False and kw["max_slice_nums"] == 1 and kw["enable_thinking"] is False
    assert kw["sampling"] is True and kw["top_k"] == 100 and kw["repetition_penalty"] == 1.05
    expected_ids = [[round(t / 0.1)] for t in frames.timestamps]
    assert kw["temporal_ids"] == expected_ids and expected_ids[-1][0] > expected_ids[0][0]
    assert minicpm.temporal_ids([0.0, 0.5, 1.0, 1.5, 2.0], packing=2) == [[0, 5], [10, 15], [20]]
    o = minicpm.chat_kwargs(req, params, get_preset("minicpm-o").backend_options(), v45=False)
    assert "temporal_ids" not in o and "enable_thinking" not in o
    assert minicpm.is_v45("openbmb/MiniCPM-V-4_5") and not minicpm.is_v45("openbmb/MiniCPM-o-2_6")


# ------------------------------------------------------------------------------ video-path families


def test_video_path_families(frames) -> None:
    req = GenerationRequest(id="x", prompt="Current question: what?", frames=frames)
    params = GenParams.of(req, get_preset("videochat-flash-7b").backend_options())
    kw = videochat_flash.chat_kwargs(req, params)
    assert kw["video_path"] == str(frames.video) and kw["max_num_frames"] == 4
    assert kw["generation_config"] == {"max_new_tokens": 1024, "do_sample": False}
    conv = videollama3.conversation(req, BackendOptions())
    assert conv[0] == {"role": "system", "content": videollama3.DEFAULT_SYSTEM}
    assert conv[1]["content"][0]["video"] == {"video_path": str(frames.video), "fps": 1.0, "max_frames": 4}
    assert conv[1]["content"][1] == {"type": "text", "text": "Current question: what?"}


def test_frame_timestamps_reach_the_families_that_take_our_frames(frames) -> None:
    labels = [frame_label(t) for t in frames.timestamps]
    timed = GenerationRequest(id="x", prompt="q", frames=frames, frame_timestamps=True)
    opts = get_preset("minicpm-v4.5").backend_options()
    content = minicpm.chat_kwargs(timed, GenParams.of(timed, opts), opts, v45=True)["msgs"][0]["content"]
    assert content[0:8:2] == labels and all(isinstance(c, Image.Image) for c in content[1:8:2])
    assert content[-1] == "q" and len(content) == 9
    assert internvl.frame_prefix(4, frames.timestamps) == "".join(f"{lab}: <image>\n" for lab in labels)
    assert internvl.frame_prefix(2) == "Frame1: <image>\nFrame2: <image>\n"
    # the families whose processor reads the video file refuse both ablations (no frame of the run is sent)
    base = {"data": ".", "judge": "offline", "out": "run", "protocol": "paper"}
    for model in ("hf:DAMO-NLP-SG/VideoLLaMA3-7B", "hf:OpenGVLab/VideoChat-Flash-Qwen2-7B_res448"):
        for flags in ({"frame_timestamps": "on"}, {"sampling": "clip"}):
            with pytest.raises(ConfigError, match="reads the video file with its own processor"):
                build_config({**base, **flags, "model": model})
    assert build_config({**base, "model": "hf:OpenGVLab/InternVL3_5-8B", "frame_timestamps": "on",
                         "sampling": "clip"}).ablations


# ------------------------------------------------------------------------------ vLLM


def test_vllm_inputs(frames) -> None:
    req = GenerationRequest(id="x", prompt="Current question: what?", frames=frames)
    msgs = chat_messages(req, "sys")
    assert msgs[0] == {"role": "system", "content": "sys"}
    parts = msgs[1]["content"]
    assert [p["type"] for p in parts] == ["image_url"] * 4 + ["text"]
    jpeg = base64.b64decode(parts[0]["image_url"]["url"].split(",", 1)[1])
    assert jpeg == frames.jpegs[0]
    item = video_input(req, "PROMPT", with_metadata=True)
    video, meta = item["multi_modal_data"]["video"]
    assert item["prompt"] == "PROMPT" and video.shape == (4, 448, 448, 3) and video.dtype == np.uint8
    assert meta["frames_indices"] == frames.indices and meta["total_num_frames"] == 24
    _, opts, _ = _resolve("qwen3-vl-8b-instruct@vllm")
    assert sampling_kwargs(req, opts) == {"max_tokens": 1024, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                                          "repetition_penalty": 1.0}
    _, greedy, _ = _resolve("llava-onevision-7b@vllm")
    assert sampling_kwargs(req, greedy) == {"max_tokens": 1024, "temperature": 0.0}
    ek = engine_kwargs("Qwen/Qwen3-VL-8B-Instruct", BackendOptions(extra={"tensor_parallel_size": 2}))
    assert ek["tensor_parallel_size"] == 2 and ek["limit_mm_per_prompt"] == {"image": 128}


def _resolve(name: str):
    from mtvbench.models.presets import resolve_model

    return resolve_model(name)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_vllm_backend_without_vllm_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r"mtvbench\[vllm\]"):
        create_backend("vllm:Qwen/Qwen3-VL-8B-Instruct")



def test_vllm_under_the_scripts_sends_what_a_server_gets(frames) -> None:
    qwen = GenerationRequest(id="x", prompt="PROMPT", frames=frames, text_first=True)
    parts = chat_messages(qwen, None)[-1]["content"]
    assert [p["type"] for p in parts] == ["text"] + ["image_url"] * 4  # the script's order: text, then the video
    history = [("User: Frame1: <image>\nq1", "Assistant: a1")]
    internvl_req = GenerationRequest(id="y", prompt="PROMPT", frames=frames, chat_history=history)
    msgs = chat_messages(internvl_req, None)
    assert msgs[:2] == [{"role": "user", "content": history[0][0]}, {"role": "assistant", "content": "Assistant: a1"}]
    assert [p["type"] for p in msgs[2]["content"]] == ["image_url"] * 4 + ["text"]


# ------------------------------------------------------------------------------ the checkpoint's own defaults


def test_checkpoint_generation_defaults_pass_only_what_is_set() -> None:
    """The authors' Qwen script calls generate(**inputs, max_new_tokens=N): the checkpoint decides the rest."""
    request = GenerationRequest(id="x", prompt="q")
    _, authors, _ = _resolve_with("qwen3-vl-8b-instruct", "authors")
    params = GenParams.of(request, authors)
    assert params.checkpoint_defaults and params.hf_kwargs() == {"max_new_tokens": 1024}
    _, thinking, _ = _resolve_with("qwen3-vl-8b-thinking", "authors")
    assert GenParams.of(request, thinking).hf_kwargs() == {"max_new_tokens": 8196}
    # a value set on top is passed, and only it
    mine = authors.model_copy(update={"temperature": 0.5, "do_sample": True})
    assert GenParams.of(request, mine).hf_kwargs() == {"max_new_tokens": 1024, "temperature": 0.5, "do_sample": True}
    # without it, greedy decoding silences the checkpoint's sampling values (the paper protocol's rows)
    plain = GenParams.of(request, BackendOptions(max_tokens=7))
    assert plain.hf_kwargs() == {"max_new_tokens": 7, "do_sample": False, "temperature": None, "top_p": None,
                                 "top_k": None}


def _resolve_with(name: str, protocol: str):
    from mtvbench.models.presets import resolve_model

    return resolve_model(name, protocol=protocol)
