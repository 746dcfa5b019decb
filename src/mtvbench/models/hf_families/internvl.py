"""InternVL3.5 and InternVideo2.5 through their remote-code ``chat()`` API.

Inputs (the published video recipe of these models): every sampled frame is cut into
``input_size`` x ``input_size`` tiles by the dynamic-resolution rule (``max_num`` tiles, default 1:
one 448x448 tile per frame, plus no thumbnail), normalised with the ImageNet mean and std, and
stacked; the question is prefixed with one ``FrameK: <image>`` line per frame and the tile count
of each frame goes in ``num_patches_list``. The paper resizes frames to 448x448 for InternVL3.5
and 728x728 for InternVideo2.5 before this step (the presets' frame size).

Think mode (InternVL3.5): the preset's system prompt is set as ``model.system_message``; the
answer is the text after ``</think>``.

Under the authors' InternVL script (frames of the ``internvl-script`` rule: the script's segment
middles as exact ``input_size`` tiles) the call is the script's: ``model.chat(tokenizer,
pixel_values, question, generation_config, num_patches_list=..., history=HISTORY)`` with the
question = the ``FrameK: <image>`` lines of every frame + the prompt, and ``HISTORY`` = the request's
chat turns as ``(user, assistant)`` tuples (an empty list on a first turn), so InternVL's own
``chat()`` puts the image tokens where it puts them for the script; one tile per frame.

Backend options (``--model-option KEY=VALUE``): ``input_size`` (448), ``max_num`` (1), ``use_thumbnail`` (True),
``dtype``, ``device_map``, ``use_flash_attn`` (True on CUDA).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mtvbench.media.frames import VideoFrames
from mtvbench.models.local import GenParams, RawOutput, device_map, require_torch, system_of, torch_dtype
from mtvbench.models.settings import BackendOptions
from mtvbench.prompts import internvl_frame_prefix
from mtvbench.records import GenerationRequest
from mtvbench.util.timecodes import frame_label

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_PLACEHOLDER = "<image>"


def grid_candidates(min_num: int, max_num: int) -> list[tuple[int, int]]:
    """Tile grids (columns, rows) with ``min_num <= columns * rows <= max_num``, fewest tiles first."""
    grids = {(i, j) for n in range(min_num, max_num + 1) for i in range(1, n + 1) for j in range(1, n + 1)
             if min_num <= i * j <= max_num}
    return sorted(grids, key=lambda g: (g[0] * g[1], g))


def choose_grid(width: int, height: int, size: int, min_num: int, max_num: int) -> tuple[int, int]:
    """The grid whose aspect ratio is closest to the image's; on a tie the larger grid wins when the
    image has more than half of that grid's pixels."""
    aspect = width / height
    best, best_diff = (1, 1), float("inf")
    for cols, rows in grid_candidates(min_num, max_num):
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and width * height > 0.5 * size * size * cols * rows:
            best = (cols, rows)
    return best


def tile_image(image: Any, size: int = 448, min_num: int = 1, max_num: int = 1, use_thumbnail: bool = True) -> list:
    """Cut a PIL image into ``size`` x ``size`` tiles (row-major), plus a thumbnail when cut."""
    from PIL import Image

    cols, rows = choose_grid(image.width, image.height, size, min_num, max_num)
    resized = image.convert("RGB").resize((size * cols, size * rows), Image.Resampling.BICUBIC)
    tiles = [resized.crop((c * size, r * size, (c + 1) * size, (r + 1) * size))
             for r in range(rows) for c in range(cols)]
    if use_thumbnail and len(tiles) > 1:
        tiles.append(image.convert("RGB").resize((size, size), Image.Resampling.BICUBIC))
    return tiles


def normalise(tiles: Sequence[Any], size: int) -> np.ndarray:
    """Tiles -> float32 array (N, 3, size, size): bicubic resize, [0, 1], ImageNet mean/std."""
    from PIL import Image

    arr = np.stack([np.asarray(t.convert("RGB").resize((size, size), Image.Resampling.BICUBIC), dtype=np.float32)
                    for t in tiles]) / 255.0
    arr = (arr - np.array(IMAGENET_MEAN, dtype=np.float32)) / np.array(IMAGENET_STD, dtype=np.float32)
    return arr.transpose(0, 3, 1, 2).copy()


def frame_prefix(n: int, times: Sequence[float] | None = None) -> str:
    """One ``FrameK: <image>`` line per frame; with ``times`` (``--frame-timestamps on``) ``Frame at 00:03:12:
    <image>``."""
    if times is not None:
        return "".join(f"{frame_label(t)}: {IMAGE_PLACEHOLDER}\n" for t in times[:n])
    return "".join(f"Frame{i + 1}: {IMAGE_PLACEHOLDER}\n" for i in range(n))


def prepare_inputs(images: Sequence[Any], prompt: str, size: int = 448, max_num: int = 1,
                   use_thumbnail: bool = True) -> tuple[np.ndarray | None, list[int], str]:
    """(pixel values (sum of tiles, 3, size, size), tiles per frame, question with frame lines)."""
    if not images:
        return None, [], prompt
    per_frame = [tile_image(im, size, 1, max_num, use_thumbnail) for im in images]
    pixels = normalise([t for tiles in per_frame for t in tiles], size)
    return pixels, [len(t) for t in per_frame], frame_prefix(len(images)) + prompt


def generation_config(params: GenParams) -> dict[str, Any]:
    """``chat()``'s generation_config: the ``generate()`` arguments that have a value."""
    return {k: v for k, v in params.hf_kwargs().items() if v is not None}


class InternVLEngine:
    batch_size = 1  # chat() takes one conversation; frames of one turn already fill the batch

    def __init__(self, checkpoint: str, options: BackendOptions, model: Any = None, tokenizer: Any = None):
        """Load ``checkpoint`` (remote code), or use the given ``model`` and ``tokenizer``."""
        torch, transformers = require_torch()
        self.torch = torch
        self.transformers_version = str(transformers.__version__)
        self.options = options
        own = options.options
        self.size = int(own.get("input_size", 448))
        self.max_num = int(own.get("max_num", 1))
        self.use_thumbnail = bool(own.get("use_thumbnail", True))
        kwargs: dict[str, Any] = {"dtype": torch_dtype(torch, own.get("dtype")), "low_cpu_mem_usage": True,
                                  "trust_remote_code": True,
                                  "use_flash_attn": bool(own.get("use_flash_attn", torch.cuda.is_available()))}
        dm = device_map(torch, options)
        if dm is not None:
            kwargs["device_map"] = dm
        if model is None:
            model = transformers.AutoModel.from_pretrained(checkpoint, **kwargs).eval()
        if tokenizer is None:
            tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True, use_fast=False)
        self.model, self.tokenizer = model, tokenizer
        self.default_system = getattr(self.model, "system_message", None)
        self.dtype = kwargs["dtype"]

    def run(self, requests: Sequence[GenerationRequest], params: GenParams) -> list[RawOutput]:
        outs = []
        device = next(self.model.parameters()).device
        for r in requests:
            script = r.frames is not None and r.frames.settings.rule == "internvl-script"
            pixels, patches = self._pixels(r.frames, script)
            pv = pixels.to(device) if pixels is not None else None
            self.model.system_message = system_of(r, self.options) or self.default_system
            with self.torch.inference_mode():
                if script:  # the script's call: its frame lines, its HISTORY, nothing else
                    question = internvl_frame_prefix(len(patches)) + r.prompt
                    history = [(u, a) for u, a in r.chat_history or []]
                    text = self.model.chat(self.tokenizer, pv, question, generation_config(params),
                                           num_patches_list=patches, history=history)
                else:
                    times = r.frames.timestamps if r.frames is not None and r.frame_timestamps else None
                    question = frame_prefix(len(patches), times) + r.prompt if patches else r.prompt
                    text = self.model.chat(self.tokenizer, pv, question, generation_config(params),
                                           num_patches_list=patches or None, history=None, return_history=False)
            fed = {"transformers": self.transformers_version, "frames": len(patches), "tiles": sum(patches),
                   "pixel_values": list(pixels.shape) if pixels is not None else None,
                   "indices": list(r.frames.indices) if r.frames is not None else None}
            outs.append(RawOutput(text=text, completion_tokens=len(self.tokenizer(text).input_ids), inputs=fed))
        return outs

    def _pixels(self, frames: VideoFrames | None, script: bool) -> tuple[Any, list[int]]:
        """The frames' pixel values (the model's dtype, on the CPU) and tiles per frame, made once per video (every
        turn of a video feeds the same ones). The script's tiles are fed as they are: one per frame."""
        if frames is None or not len(frames):
            return None, []
        size, max_num = (frames.width, 1) if script else (self.size, self.max_num)
        key = (size, max_num, self.use_thumbnail, str(self.dtype))
        memo = frames.__dict__.get("_internvl_pixels")
        if memo is None or memo[0] != key:
            pixels, patches, _ = prepare_inputs(frames.images(), "", size, max_num, self.use_thumbnail)
            memo = (key, self.torch.from_numpy(pixels).to(self.dtype), patches)
            frames.__dict__["_internvl_pixels"] = memo
        return memo[1], memo[2]

    def close(self) -> None:
        del self.model


def load(checkpoint: str, options: BackendOptions) -> InternVLEngine:
    return InternVLEngine(checkpoint, options)
