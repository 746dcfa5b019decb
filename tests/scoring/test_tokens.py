"""The frame-token rules of `mtvbench estimate` against the providers' documented worked examples and against
transformers' own Qwen2.5-VL and Qwen3-VL processors (built from config, CPU) counting the same requests.
(Real provider usage cannot be reached here: the documented examples stand in for it.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtvbench.scoring.tokens import (
    MESSAGE_OVERHEAD,
    frame_rule,
    gemini_image,
    openai_patches,
    openai_tiles,
    text_tokens,
)
from tests.support.extras import needs

CONFIGS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "checkpoint_configs"


def test_openai_worked_examples() -> None:
    # platform.openai.com/docs/guides/images-vision, "Calculating costs"
    assert openai_tiles(1024, 1024, 85, 170) == 765
    assert openai_tiles(2048, 4096, 85, 170) == 1105
    assert openai_tiles(4096, 8192, 85, 170, detail="low") == 85
    assert openai_patches(1024, 1024) == 1024
    assert openai_patches(1800, 2400) == 1452
    assert openai_patches(1800, 2400, 1.62) == 2353  # gpt-4.1-mini's multiplier: ceil(1452 x 1.62)


def test_gemini_documented_rule() -> None:
    # ai.google.dev/gemini-api/docs/tokens: both sides <= 384 px: 258; else 768 x 768 tiles of 258
    assert gemini_image(384, 384) == 258
    assert gemini_image(720, 405) == 258
    assert gemini_image(1280, 720) == 2 * 258
    assert gemini_image(1920, 1080) == 6 * 258


@pytest.mark.parametrize(("spec", "extra", "name"), [
    ("openai:gpt-4o", {}, "OpenAI tiles (gpt-4o, detail high)"),
    ("openai:gpt-4o-mini", {}, "OpenAI tiles (gpt-4o-mini, detail high)"),
    ("openai:gpt-4.1-mini", {}, "OpenAI patches (gpt-4.1-mini)"),
    ("openai:gpt-4o-2024-08-06", {"detail": "low"}, "OpenAI tiles (gpt-4o, detail low)"),
    ("gemini:gemini-2.5-pro", {}, "Gemini per image"),
    ("openai:gemini-2.5-flash", {}, "Gemini per image"),
    ("hf:Qwen/Qwen2.5-VL-7B-Instruct", {}, "Qwen2.5-VL patches (video)"),
    ("openai:Qwen/Qwen3-VL-8B-Instruct", {}, "Qwen3-VL patches (images)"),
    ("openai:Qwen/Qwen3-VL-8B-Instruct", {"video_part": True}, "Qwen3-VL patches (video)"),
    ("hf:OpenGVLab/InternVL3_5-8B", {}, "InternVL 256 per 448 tile"),
])
def test_the_rule_of_a_backend(spec: str, extra: dict, name: str) -> None:
    rule = frame_rule(spec, extra)
    assert rule is not None and rule.name == name


def test_an_unknown_model_has_no_rule() -> None:
    assert frame_rule("openai:my-own-model") is None and frame_rule("hf:org/llava-next") is None


def _processor(family: str, tmp_path: Path):
    import transformers as tf

    from mtvbench.models.tiny import build_tiny_qwen_vl

    if family == "qwen3_vl":  # the checkpoint's own video processor settings (benchmarks/data/checkpoint_configs)
        cfg = json.loads((CONFIGS / "qwen3-vl-8b-instruct" / "video_preprocessor_config.json").read_text())
        vp = tf.Qwen3VLVideoProcessor(size=cfg["size"])
    else:
        cfg = json.loads((CONFIGS / "qwen2.5-vl-7b-instruct" / "preprocessor_config.json").read_text())
        vp = tf.Qwen2VLVideoProcessor(min_pixels=cfg["min_pixels"], max_pixels=cfg["max_pixels"])
    path = build_tiny_qwen_vl(tmp_path / family, family, video_processor=vp)
    processor = tf.AutoProcessor.from_pretrained(path)
    folder = "qwen3-vl-8b-instruct" if family == "qwen3_vl" else "qwen2.5-vl-7b-instruct"
    image = json.loads((CONFIGS / folder / "preprocessor_config.json").read_text())
    keys = ("size", "min_pixels", "max_pixels", "patch_size", "temporal_patch_size", "merge_size")
    processor.image_processor = tf.Qwen2VLImageProcessor(**{k: image[k] for k in keys if k in image})
    return processor


PROMPT = ("You're an AI assistant helping to answer questions about a video. Conversation history: User: What "
          "is the red square doing? Assistant: The red square moves right while the blue circle stays. "
          "Current question: Where does the square go after that?")


@needs("hf", "torch", "torchvision", "transformers")  # the processors, built from config
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize(("frames", "size", "as_video"), [(128, (720, 405), True), (32, (640, 360), True),
                                                          (8, (720, 405), False)])
def test_qwen_counts_within_10_percent_of_the_processor(family: str, frames: int, size: tuple[int, int],
                                                        as_video: bool, tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    from mtvbench.models.local import build_messages
    from mtvbench.records import GenerationRequest

    processor = _processor(family, tmp_path)
    w, h = size
    images = [Image.fromarray(np.full((h, w, 3), i, dtype=np.uint8)) for i in range(frames)]
    msgs = build_messages(GenerationRequest(id="x", prompt=PROMPT), None, "video" if as_video else "images")
    msgs[-1]["content"][:0] = [{"type": "video"}] if as_video else [{"type": "image"}] * frames
    text = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    duration = 60.0
    if as_video:
        meta = {"total_num_frames": 1800, "fps": 30.0, "duration": duration,
                "frames_indices": [round(i * 1799 / (frames - 1)) for i in range(frames)], "width": w, "height": h}
        batch = processor(text=[text], videos=[images], return_tensors="pt", videos_kwargs={"do_sample_frames": False,
                                                                       "video_metadata": [meta]})
    else:
        batch = processor(text=[text], images=images, return_tensors="pt")
    counted = int(batch["input_ids"].shape[1])
    spec = f"hf:Qwen/{'Qwen3-VL-8B-Instruct' if family == 'qwen3_vl' else 'Qwen2.5-VL-7B-Instruct'}"
    rule = frame_rule(spec, {"input": "video" if as_video else "images"})
    assert rule is not None
    estimated = rule.tokens(frames, w, h, duration) + text_tokens(PROMPT) + MESSAGE_OVERHEAD
    assert abs(estimated - counted) <= 0.10 * counted, (estimated, counted)
    pad = processor.tokenizer.convert_tokens_to_ids("<|video_pad|>" if as_video else "<|image_pad|>")
    vision = int((batch["input_ids"] == pad).sum())  # the vision tokens themselves: the same patch count
    groups = (frames + 1) // 2 if as_video else frames
    specials = 2 * groups if family == "qwen3_vl" or not as_video else 2
    assert rule.tokens(frames, w, h, duration) - specials - (
        sum(text_tokens(f"<{i * duration / groups:.1f} seconds>") for i in range(groups))
        if family == "qwen3_vl" and as_video else 0) == vision
