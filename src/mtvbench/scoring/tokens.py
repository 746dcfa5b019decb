"""How many prompt tokens a request costs before it is sent: each provider's documented rule for images and
video frames, and the rule of thumb for text (used by ``mtvbench estimate``; nothing is called).

The rule is picked from the backend spec (and for a server, from the model name it serves):

- **OpenAI** (``openai:gpt-...``, ``openai:o...``), per model family and ``detail`` (the image part's
  ``detail``; mtvbench sends none, which is ``auto``, counted as ``high``), from "Calculating costs" of
  https://platform.openai.com/docs/guides/images-vision: *tiles* (GPT-4o, GPT-4.1, GPT-4.5, o1, o3: 85 + 170
  per 512 px tile after fitting into 2048 x 2048 and scaling the short side to 768; GPT-4o-mini 2833 + 5667;
  the GPT-5 family 70 + 140; ``low`` is the base alone) or *patches* (GPT-4.1-mini, GPT-4.1-nano, o4-mini,
  GPT-5-mini, GPT-5-nano: 32 px patches, at most 1536 after scaling down, times 1.62, 2.46, 1.72, 1.62, 2.46).
  Worked examples of that page: 1024 x 1024 high = 765, 2048 x 4096 high = 1105, any low = 85; patches:
  1024 x 1024 = 1024 and 1800 x 2400 = 1452 patches.
- **Gemini** (``gemini:...``, or ``openai:gemini-...`` through Google's OpenAI endpoint), from
  https://ai.google.dev/gemini-api/docs/tokens: an image with both sides at most 384 px is 258 tokens; a
  larger one is cut into 768 x 768 tiles of 258 tokens each.
- **Qwen2.5-VL / Qwen3-VL** (a preset, ``hf:``/``vllm:`` with a Qwen checkpoint, or a server serving one): the
  patch count the checkpoint's processor makes at the frames' size (``smart_resize`` with the checkpoint's
  ``preprocessor_config.json`` / ``video_preprocessor_config.json`` pixel limits: Qwen2.5-VL 14 px patches
  merged 2 x 2, 3,136 to 12,845,056 pixels per image or frame; Qwen3-VL 16 px patches merged 2 x 2, images of
  65,536 to 16,777,216 pixels, a video's frames together at most 25,165,824 pixels), frames taken in pairs
  (``temporal_patch_size`` 2) when sent as one video (``hf:`` and ``vllm:`` by default, ``video_part`` on a
  server), each frame on its own as an image otherwise; Qwen3-VL adds a ``<t seconds>`` timestamp per pair.
- **InternVL** (InternVL3/3.5, InternVideo2.5): 256 tokens per 448 x 448 tile, one tile per video frame
  (https://internvl.readthedocs.io, "video" chat: ``Frame{i}: <image>`` per frame).
- anything else: "rule unknown" (None), never a guess.

Text: about 4 characters per token (OpenAI's and Google's documented rule of thumb for English text), plus
a few tokens per chat message for the template.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: characters per token of English text (OpenAI, https://platform.openai.com/tokenizer; Google, the tokens page)
CHARS_PER_TOKEN = 4.0
#: tokens a chat template adds per message (role markers)
MESSAGE_OVERHEAD = 4

OPENAI_VISION = "https://platform.openai.com/docs/guides/images-vision"
GEMINI_TOKENS = "https://ai.google.dev/gemini-api/docs/tokens"
QWEN_PROCESSOR = "the checkpoint's processor (transformers smart_resize)"
INTERNVL_DOCS = "https://internvl.readthedocs.io"

#: OpenAI tile models: name prefix -> (base, per tile); the longest matching prefix wins
OPENAI_TILES: dict[str, tuple[int, int]] = {
    "gpt-4o": (85, 170), "gpt-4o-mini": (2833, 5667), "gpt-4.1": (85, 170), "gpt-4.5": (85, 170),
    "gpt-4-turbo": (85, 170), "o1": (75, 150), "o3": (75, 150), "gpt-5": (70, 140), "chatgpt-4o": (85, 170),
}
#: OpenAI patch models: name prefix -> multiplier
OPENAI_PATCHES: dict[str, float] = {
    "gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "o4-mini": 1.72, "gpt-5-mini": 1.62, "gpt-5-nano": 2.46,
}


def text_tokens(text: str) -> int:
    """Tokens of ``text`` by the 4-characters rule (0 for no text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


# ------------------------------------------------------------------------------ OpenAI
def openai_tiles(width: int, height: int, base: int, per_tile: int, detail: str = "high") -> int:
    """An image under OpenAI's tile rule (module doc)."""
    if detail == "low":
        return base
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    return base + per_tile * math.ceil(w / 512) * math.ceil(h / 512)


def openai_patches(width: int, height: int, multiplier: float = 1.0, cap: int = 1536) -> int:
    """An image under OpenAI's patch rule: 32 px patches, scaled down to at most ``cap``, times ``multiplier``."""
    w, h = float(width), float(height)
    if math.ceil(w / 32) * math.ceil(h / 32) > cap:
        r = math.sqrt(32 * 32 * cap / (w * h))
        r *= min(math.floor(w * r / 32) / (w * r / 32), math.floor(h * r / 32) / (h * r / 32))
        w, h = w * r, h * r
    patches = min(cap, math.ceil(w / 32) * math.ceil(h / 32))
    return math.ceil(patches * multiplier)


def _longest_prefix(name: str, table: dict[str, object]) -> str | None:
    found = [k for k in table if name == k or name.startswith(k + "-")]
    return max(found, key=len) if found else None


# ------------------------------------------------------------------------------ Gemini
def gemini_image(width: int, height: int) -> int:
    """An image under Gemini's documented rule (module doc)."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


# ------------------------------------------------------------------------------ Qwen
@dataclass(frozen=True)
class QwenFamily:
    """A Qwen-VL processor's sizes (its checkpoint's processor files)."""

    name: str
    patch: int
    image_min: int
    image_max: int
    video_min: int
    video_max: int
    #: the video's pixel limits hold for all its frames together (Qwen3-VL), not per frame (Qwen2.5-VL)
    video_total: bool
    timestamps: bool

    @property
    def factor(self) -> int:
        """The side length, in pixels, that the processor rounds images to (two patches, as the processor merges 2 x
        2 patches into one token)."""
        return self.patch * 2  # merge_size 2


QWEN25 = QwenFamily("Qwen2.5-VL", 14, 3136, 12845056, 3136, 12845056, video_total=False, timestamps=False)
QWEN3 = QwenFamily("Qwen3-VL", 16, 65536, 16777216, 4096, 25165824, video_total=True, timestamps=True)


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int, frames: int = 1
                 ) -> tuple[int, int]:
    """The size a Qwen processor resizes to: sides rounded to ``factor``, pixels (of ``frames`` frames
    together) kept within [min_pixels, max_pixels] (transformers' ``smart_resize``)."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    t = frames if frames == 1 else round(frames / 2) * 2
    if t * h * w > max_pixels:
        beta = math.sqrt(frames * height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif t * h * w < min_pixels:
        beta = math.sqrt(min_pixels / (frames * height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def qwen_video(family: QwenFamily, frames: int, width: int, height: int, duration_s: float) -> int:
    """Tokens of ``frames`` frames of ``width`` x ``height`` fed as one video."""
    if family.video_total:
        h, w = smart_resize(height, width, family.factor, family.video_min, family.video_max, max(frames, 2))
    else:
        h, w = smart_resize(height, width, family.factor, family.video_min, family.video_max)
    groups = math.ceil(frames / 2)
    per_group = (h // family.factor) * (w // family.factor)
    if not family.timestamps:
        return groups * per_group + 2
    step = duration_s / max(1, groups)
    stamps = sum(text_tokens(f"<{i * step:.1f} seconds>") for i in range(groups))
    return groups * (per_group + 2) + stamps


def qwen_images(family: QwenFamily, frames: int, width: int, height: int) -> int:
    """Tokens of ``frames`` frames of ``width`` x ``height`` fed as separate images."""
    h, w = smart_resize(height, width, family.factor, family.image_min, family.image_max)
    return frames * ((h // family.factor) * (w // family.factor) + 2)


# ------------------------------------------------------------------------------ the rule of a backend
@dataclass(frozen=True)
class FrameRule:
    """How one backend's frames are counted; ``tokens(frames, width, height, duration_s)``."""

    name: str
    source: str
    kind: str
    model: str
    detail: str = "high"
    as_video: bool = False

    def tokens(self, frames: int, width: int, height: int, duration_s: float = 0.0) -> int:
        """The prompt tokens of ``frames`` frames of ``width`` x ``height`` under this rule (``duration_s`` matters
        only to rules that count time)."""
        if frames <= 0:
            return 0
        if self.kind == "openai-tiles":
            base, per_tile = OPENAI_TILES[self.model]
            return frames * openai_tiles(width, height, base, per_tile, self.detail)
        if self.kind == "openai-patches":
            return frames * openai_patches(width, height, OPENAI_PATCHES[self.model])
        if self.kind == "gemini":
            return frames * gemini_image(width, height)
        if self.kind == "internvl":
            return frames * (256 + text_tokens("Frame00: <img></img>\n"))
        family = QWEN3 if self.kind == "qwen3" else QWEN25
        if self.as_video:
            return qwen_video(family, frames, width, height, duration_s)
        return qwen_images(family, frames, width, height)


def _served_name(spec: str) -> tuple[str, str]:
    prefix, _, name = spec.partition(":")
    return prefix.strip().lower(), name.strip()


def frame_rule(spec: str, extra: dict[str, object] | None = None) -> FrameRule | None:
    """The frame-token rule of backend ``spec`` with backend options ``extra`` (None: rule unknown)."""
    extra = extra or {}
    prefix, name = _served_name(spec)
    low = name.lower().rsplit("/", 1)[-1]
    detail = str(extra.get("detail", "auto"))
    detail = "low" if detail == "low" else "high"
    if prefix == "gemini" or (prefix == "openai" and low.startswith("gemini")):
        return FrameRule("Gemini per image", GEMINI_TOKENS, "gemini", low)
    if prefix == "openai":
        patch = _longest_prefix(low, OPENAI_PATCHES)  # type: ignore[arg-type]
        tile = _longest_prefix(low, OPENAI_TILES)  # type: ignore[arg-type]
        if patch is not None and (tile is None or len(patch) >= len(tile)):
            return FrameRule(f"OpenAI patches ({patch})", OPENAI_VISION, "openai-patches", patch)
        if tile is not None:
            return FrameRule(f"OpenAI tiles ({tile}, detail {detail})", OPENAI_VISION, "openai-tiles", tile, detail)
    as_video = prefix in ("hf", "vllm") and str(extra.get("input", "video" if prefix == "hf" else "images")) != \
        "images" or bool(extra.get("video_part"))
    if "qwen3-vl" in low:
        return FrameRule(f"Qwen3-VL patches ({'video' if as_video else 'images'})", QWEN_PROCESSOR, "qwen3", low,
                         as_video=as_video)
    if "qwen2.5-vl" in low or "qwen2_5_vl" in low:
        return FrameRule(f"Qwen2.5-VL patches ({'video' if as_video else 'images'})", QWEN_PROCESSOR, "qwen25", low,
                         as_video=as_video)
    if "internvl" in low or "internvideo" in low:
        return FrameRule("InternVL 256 per 448 tile", INTERNVL_DOCS, "internvl", low)
    return None


__all__ = ["CHARS_PER_TOKEN", "FrameRule", "MESSAGE_OVERHEAD", "QWEN25", "QWEN3", "QwenFamily", "frame_rule",
           "gemini_image", "openai_patches", "openai_tiles", "qwen_images", "qwen_video", "smart_resize",
           "text_tokens"]
