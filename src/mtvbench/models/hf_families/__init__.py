"""Model families whose checkpoints need their own input code (``trust_remote_code`` models):
the :data:`FAMILIES` registry and the detection of a checkpoint's family.

Each module turns :class:`~mtvbench.records.GenerationRequest` objects into the inputs of the
family's own API and returns :class:`~mtvbench.models.local.RawOutput` records; the loading
code imports torch/transformers lazily. The input preparation is plain functions, tested
offline; the loading and ``chat()`` calls need the real checkpoints (and, for most, a GPU).

- ``internvl``: InternVL3.5 (448x448 tiles, ``chat()``, the Think system prompt) and
  InternVideo2.5 (same chat API; 728x728 frames).
- ``minicpm``: MiniCPM-V 4.5 and MiniCPM-o 2.6 (``chat(msgs=...)`` with PIL frames).
- ``videochat_flash``: VideoChat-Flash (its remote code reads the video file itself).
- ``videollama3``: VideoLLaMA3 (its remote processor reads the video file itself).

A family is an entry of :data:`FAMILIES`: a function ``(checkpoint, options) -> Engine``
(:class:`~mtvbench.models.local.Engine`), named ``"module:attr"`` and imported when a checkpoint
needs it. Another package adds one through the entry-point group ``mtvbench.hf_families`` and
picks it with ``--model-option family=NAME``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mtvbench.errors import ConfigError
from mtvbench.models.settings import BackendOptions
from mtvbench.registry import Registry

if TYPE_CHECKING:
    from mtvbench.models.local import Engine

FamilyLoader = Callable[[str, BackendOptions], "Engine"]


def _as_loader(obj: object) -> FamilyLoader:
    if not callable(obj):
        raise TypeError(f"expected a function (checkpoint, options) -> engine, got {type(obj).__name__}")
    return cast(FamilyLoader, obj)


FAMILIES: Registry[FamilyLoader] = Registry("hf model family", group="mtvbench.hf_families", coerce=_as_loader)
FAMILIES.add("internvl", "mtvbench.models.hf_families.internvl:load")
FAMILIES.add("minicpm", "mtvbench.models.hf_families.minicpm:load")
FAMILIES.add("videochat_flash", "mtvbench.models.hf_families.videochat_flash:load")
FAMILIES.add("videollama3", "mtvbench.models.hf_families.videollama3:load")


def load_family(family: str, checkpoint: str, options: BackendOptions) -> Engine:
    """The engine of ``checkpoint`` through the adapter of ``family``."""
    if family not in FAMILIES:
        close = FAMILIES.suggest(family)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"hf: unknown family {family!r}; known: generic, {', '.join(sorted(FAMILIES.names()))}"
                          + hint)
    return FAMILIES.get(family)(checkpoint, options)


_NAME_FAMILIES = (
    (re.compile(r"internvl|internvideo2", re.I), "internvl"),
    (re.compile(r"minicpm-?[vo]", re.I), "minicpm"),
    (re.compile(r"videochat-?flash", re.I), "videochat_flash"),
    (re.compile(r"videollama3", re.I), "videollama3"),
)
_ARCH_FAMILIES = {"InternVLChatModel": "internvl", "MiniCPMV": "minicpm", "MiniCPMO": "minicpm",
                  "Videollama3Qwen2ForCausalLM": "videollama3", "VideoChatFlashQwenForCausalLM": "videochat_flash"}


def detect_family(checkpoint: str) -> str | None:
    """The adapter a checkpoint needs, from its config.json (local dirs) or its name; None: generic.

    Transformers-native conversions (ids ending in ``-hf``) use the generic path."""
    cfg = Path(checkpoint) / "config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        for arch in data.get("architectures") or []:
            if arch in _ARCH_FAMILIES:
                return _ARCH_FAMILIES[arch]
        if data.get("auto_map") is None:
            return None
    if checkpoint.lower().rstrip("/").endswith("-hf"):
        return None
    for pattern, family in _NAME_FAMILIES:
        if pattern.search(checkpoint):
            return family
    return None
