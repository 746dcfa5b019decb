"""Child of ``benchmarks/authors_frames.py``: what a transformers install's Qwen processors make of a clip.

Runs in the interpreter of a venv with the transformers version under test (it imports no mtvbench),
reads one JSON request from stdin and prints one JSON answer::

    {"videos": {"name": "/path/clip.mp4", ...},
     "checkpoints": {"label": {"family": "qwen2_5_vl" | "qwen3_vl", "dir": "/folder/with/configs" | null}}}

For every (video, checkpoint) it does what ``eval/infer_qwen25vl.py`` does: one user message with a
text part and a ``{"type": "video", "video": path, "min_pixels", "max_pixels", "total_pixels"}`` part
through ``processor.apply_chat_template(..., tokenize=True, add_generation_prompt=True,
return_dict=True, return_tensors="pt", padding=True)``; then again without the three pixel keys, to
see whether they change anything. The processor is the real class (``Qwen2_5_VLProcessor`` /
``Qwen3VLProcessor``) with the checkpoint's processor files when ``dir`` is given
(``AutoVideoProcessor.from_pretrained(dir)``), else the class defaults; the
tokenizer is a tiny BPE one with Qwen's special tokens (text does not change the frames). The only
thing replaced is the decoder: torchcodec needs system FFmpeg libraries, so the video processor's
``fetch_videos`` is pointed at transformers' own PyAV reader (``load_video(..., backend="pyav")``),
whose metadata (frame count from the MP4 header, average rate) equal torchcodec's for these CFR
clips; the indices the processor's sampler asks for are recorded.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import warnings
from typing import Any

import numpy as np

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|video_pad|>", "<|image_pad|>"]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% for c in m['content'] %}{% if c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROMPT = "You're an AI assistant helping to answer questions about a video.\nCurrent question:\nWhat happens?"
#: the video item's extra keys in infer_qwen25vl.py
PIXEL_KEYS = {"min_pixels": 4 * 32 * 32, "max_pixels": 256 * 32 * 32, "total_pixels": 16384 * 32 * 32}


def tiny_tokenizer() -> Any:
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # any text encodes
    tok.train_from_iterator([PROMPT, "user assistant"], trainer)
    cls = getattr(tf, "Qwen2TokenizerFast", None) or tf.Qwen2Tokenizer  # the class the Qwen processors accept
    fast = cls(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": SPECIAL[3:]})
    return fast


def build_processor(family: str, folder: str | None) -> Any:
    import transformers as tf

    if family == "qwen3_vl":
        proc_cls, vp_cls, ip_cls = tf.Qwen3VLProcessor, tf.Qwen3VLVideoProcessor, tf.Qwen2VLImageProcessor
    else:
        proc_cls, vp_cls, ip_cls = tf.Qwen2_5_VLProcessor, tf.Qwen2VLVideoProcessor, tf.Qwen2VLImageProcessor
    # the image processor only handles images (none here): class defaults
    vp = tf.AutoVideoProcessor.from_pretrained(folder) if folder else vp_cls()
    return proc_cls(image_processor=ip_cls(), tokenizer=tiny_tokenizer(), video_processor=vp, chat_template=TEMPLATE)


def patch_decoder(processor: Any, record: dict[str, Any]) -> None:
    """Decode with transformers' PyAV reader; record the metadata and the indices the sampler asked for."""
    from transformers.video_utils import load_video

    def fetch_videos(urls: Any, sample_indices_fn: Any = None) -> Any:
        if isinstance(urls, list):
            return list(zip(*[fetch_videos(u, sample_indices_fn) for u in urls]))

        def pick(metadata: Any, **kw: Any) -> Any:
            record["metadata"] = {"total_num_frames": int(metadata.total_num_frames), "fps": float(metadata.fps),
                                  "duration": float(metadata.duration)}
            if sample_indices_fn is None:
                idx = np.arange(metadata.total_num_frames, dtype=int)
            else:
                idx = sample_indices_fn(metadata=metadata, **kw)
            record["indices"] = [int(i) for i in idx]
            return idx

        return load_video(urls, backend="pyav", sample_indices_fn=pick)

    processor.video_processor.fetch_videos = fetch_videos


def feed(processor: Any, path: str, pixel_keys: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "video", "video": path}
    if pixel_keys:
        item.update(PIXEL_KEYS)
    messages = [[{"role": "user", "content": [{"type": "text", "text": PROMPT}, item]}]]
    record: dict[str, Any] = {}
    patch_decoder(processor, record)
    out = processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=True,
                                        return_tensors="pt", padding=True)
    t, gh, gw = (int(x) for x in out["video_grid_thw"][0])
    vp = processor.video_processor
    idx = record.get("indices", [])
    return {
        "video_grid_thw": [t, gh, gw],
        "frames_fed": t * vp.temporal_patch_size,
        "distinct_frames": len(set(idx)),
        "indices": idx,
        "metadata": record.get("metadata"),
        "frame_size": [gw * vp.patch_size, gh * vp.patch_size],
        "pixel_values_videos": list(out["pixel_values_videos"].shape),
        "video_tokens": int((out["input_ids"][0] == processor.tokenizer.convert_tokens_to_ids("<|video_pad|>")).sum()),
        # Qwen3-VL writes a time before each temporal patch, from the clip's own frame rate
        "timestamps_s": [float(t) for t in re.findall(r"<([0-9.]+) seconds>", processor.tokenizer.decode(
            out["input_ids"][0]))],
    }


def settings(vp: Any) -> dict[str, Any]:
    keys = ("do_sample_frames", "fps", "num_frames", "min_frames", "max_frames", "size", "min_pixels", "max_pixels",
            "patch_size", "temporal_patch_size", "merge_size", "cap_pixels_per_frame")
    out = {}
    for k in keys:
        v = getattr(vp, k, None)
        if dataclasses.is_dataclass(v):  # SizeDict in transformers 5
            v = {f: x for f, x in dataclasses.asdict(v).items() if x is not None}
        if v is not None:
            out[k] = dict(v) if hasattr(v, "keys") else v
    return out


def main() -> None:
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    req = json.load(sys.stdin)
    answer: dict[str, Any] = {"transformers": transformers.__version__, "results": {}}
    for label, ck in req["checkpoints"].items():
        processor = build_processor(ck["family"], ck.get("dir"))
        entry: dict[str, Any] = {"family": ck["family"], "video_processor": type(processor.video_processor).__name__,
                                 "settings": settings(processor.video_processor), "videos": {}}
        for name, path in req["videos"].items():
            with_keys = feed(processor, path, pixel_keys=True)
            without = feed(processor, path, pixel_keys=False)
            with_keys["pixel_keys_change_anything"] = {k: v for k, v in with_keys.items() if k != "indices"} != {
                k: v for k, v in without.items() if k != "indices"}
            entry["videos"][name] = with_keys
        answer["results"][label] = entry
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
