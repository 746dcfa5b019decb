"""Tiny, randomly initialised vision-language models saved in the transformers layout: a smoke test
of a local or served model path without downloading a checkpoint (and the models the tests use).

From the command line (needs ``torch`` and ``transformers``, e.g. ``pip install 'mtvbench[hf]'``)::

    python -m mtvbench.models.tiny /tmp/tiny-llava                       # LLaVA-style, a few MB
    python -m mtvbench.models.tiny /tmp/tiny-qwen --family qwen2_5_vl    # or qwen3_vl
    mtvbench run --data mtvbench-demo/sample --model hf:/tmp/tiny-llava --judge offline --out runs/tiny

Its answers are random text: it checks that frames, prompts and the engine run end to end, never a score.

Built from a config (2 small layers in the vision tower and the language model) with a BPE
tokenizer trained on the fly by the ``tokenizers`` library, so nothing is downloaded:

- :func:`build_tiny_llava`: LLaVA-style; each 28x28 image becomes 4 ``<image>`` tokens (14-pixel
  patches, CLS dropped).
- :func:`build_tiny_qwen_vl`: Qwen2.5-VL or Qwen3-VL with the real processor classes (video processor
  at its class defaults, or as given) and a tokenizer with Qwen's special tokens and a chat template
  that places ``<|vision_start|><|video_pad|><|vision_end|>`` where a message has a video.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

IMAGE_TOKEN = "<image>"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", IMAGE_TOKEN]
TOKENS_PER_IMAGE = 4

# a plain chat template: roles in <|im_start|> blocks, images as <image> placeholders
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "You're an AI assistant helping to answer questions about a video. Use the conversation history if helpful.",
    "Conversation history: User: Assistant: Current question: Question about the clip?",
    "The red square moves right in round and the blue circle stays. summary memory object refusal topic",
]


QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|video_pad|>", "<|image_pad|>"]
QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _bpe(special: list[str], vocab_size: int, unk: str | None) -> Any:
    """A byte-level BPE tokenizer (``tokenizers``) trained on :data:`CORPUS`: any text encodes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 5, trainer)
    return tok


def build_tiny_llava(dest: Path, seed: int = 0) -> Path:
    from transformers import (
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
        Qwen2Config,
    )
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tok = _bpe(SPECIAL, 600, None)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    image_processor = LlavaImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=fast, patch_size=14,
                               vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
                               num_additional_image_tokens=1)
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=28, patch_size=14, projection_dim=32)
    text = Qwen2Config(vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                       eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None)
    config = LlavaConfig(vision_config=vision, text_config=text,
                         image_token_index=fast.convert_tokens_to_ids(IMAGE_TOKEN),
                         vision_feature_select_strategy="default", vision_feature_layer=-1)
    return _save(LlavaForConditionalGeneration, config, processor, fast, dest, seed)


def build_tiny_qwen_vl(dest: Path, family: str, video_processor: object | None = None, seed: int = 0) -> Path:
    """A tiny ``qwen3_vl`` or ``qwen2_5_vl`` checkpoint with its real processor class, saved to ``dest``.

    ``video_processor``: the processor's video processor (default: the class's own defaults)."""
    import transformers as tf

    cls = getattr(tf, "Qwen2TokenizerFast", None) or tf.Qwen2Tokenizer  # the class the Qwen processors accept
    fast = cls(tokenizer_object=_bpe(QWEN_SPECIAL, 400, "<|endoftext|>"), eos_token="<|im_end|>",
               pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": QWEN_SPECIAL[3:]})
    ids = {k: fast.convert_tokens_to_ids(k) for k in QWEN_SPECIAL}
    tokens = {"image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
              "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"]}
    text = {"vocab_size": len(fast), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 32768}
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32}
    if family == "qwen3_vl":
        vp = video_processor or tf.Qwen3VLVideoProcessor()
        processor = tf.Qwen3VLProcessor(image_processor=tf.Qwen2VLImageProcessor(), tokenizer=fast,
                                        video_processor=vp, chat_template=QWEN_TEMPLATE)
        rope = {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [2, 3, 3], "mrope_interleaved": True}
        config = tf.Qwen3VLConfig(vision_config={**vision, "num_position_embeddings": 64,
                                                 "deepstack_visual_indexes": [1]},
                                  text_config={**text, "head_dim": 16, "rope_parameters": rope}, **tokens)
        model_cls = tf.Qwen3VLForConditionalGeneration
    elif family == "qwen2_5_vl":
        vp = video_processor or tf.Qwen2VLVideoProcessor()
        processor = tf.Qwen2_5_VLProcessor(image_processor=tf.Qwen2VLImageProcessor(), tokenizer=fast,
                                           video_processor=vp, chat_template=QWEN_TEMPLATE)
        rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}
        config = tf.Qwen2_5_VLConfig(vision_config={**vision, "fullatt_block_indexes": [1], "window_size": 56},
                                     text_config={**text, "rope_parameters": rope}, **tokens)
        model_cls = tf.Qwen2_5_VLForConditionalGeneration
    else:
        raise ValueError(f"unknown family {family!r}")
    return _save(model_cls, config, processor, fast, dest, seed)


FAMILIES = ("llava", "qwen2_5_vl", "qwen3_vl")


def build_tiny(dest: Path, family: str = "llava", seed: int = 0) -> Path:
    """A tiny model of ``family`` (:data:`FAMILIES`) saved to ``dest``."""
    if family == "llava":
        return build_tiny_llava(dest, seed=seed)
    return build_tiny_qwen_vl(dest, family, seed=seed)


def main(argv: list[str] | None = None) -> int:
    """``python -m mtvbench.models.tiny DEST [--family F] [--seed N]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mtvbench.models.tiny",
                                     description="Save a tiny, randomly initialised vision-language model "
                                                 "(transformers layout) for a smoke test; nothing is downloaded.")
    parser.add_argument("dest", type=Path, help="folder to write the model to")
    parser.add_argument("--family", choices=FAMILIES, default="llava", help="model family (default: llava)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default: 0)")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"error: the tiny model needs torch and transformers ({e}): pip install 'mtvbench[hf]'",
              file=sys.stderr)
        return 2
    path = build_tiny(args.dest, args.family, args.seed)
    print(f"wrote a tiny {args.family} model to {path}: mtvbench run --model hf:{path} ... (random answers: "
          "a smoke test, not a score)")
    return 0


def _save(model_cls: Any, config: Any, processor: Any, tokenizer: Any, dest: Path, seed: int) -> Path:
    """A randomly initialised ``model_cls(config)`` (seeded) and ``processor``, saved to ``dest``."""
    import torch

    torch.manual_seed(seed)
    model = model_cls(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    processor.save_pretrained(dest)
    return dest


if __name__ == "__main__":  # pragma: no cover - python -m mtvbench.models.tiny
    sys.exit(main())
