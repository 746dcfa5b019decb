"""Model families whose checkpoints need their own input code (``trust_remote_code`` models).

Each module turns :class:`~mtvbench.models.base.GenerationRequest` objects into the inputs of
the family's own API and returns :class:`~mtvbench.models.hf.RawOutput` records; the loading
code imports torch/transformers lazily. The input preparation is plain functions, tested
offline; the loading and ``chat()`` calls need the real checkpoints (and, for most, a GPU).

- ``internvl``: InternVL3.5 (448x448 tiles, ``chat()``, the Think system prompt) and
  InternVideo2.5 (same chat API; 728x728 frames).
- ``minicpm``: MiniCPM-V 4.5 and MiniCPM-o 2.6 (``chat(msgs=...)`` with PIL frames).
- ``videochat_flash``: VideoChat-Flash (its remote code reads the video file itself).
- ``videollama3``: VideoLLaMA3 (its remote processor reads the video file itself).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from mtvbench.errors import ConfigError
from mtvbench.models.base import BackendOptions

if TYPE_CHECKING:
    from mtvbench.models.hf import Engine

FAMILIES = {
    "internvl": "mtvbench.models.hf_families.internvl",
    "minicpm": "mtvbench.models.hf_families.minicpm",
    "videochat_flash": "mtvbench.models.hf_families.videochat_flash",
    "videollama3": "mtvbench.models.hf_families.videollama3",
}


def load_family(family: str, checkpoint: str, options: BackendOptions) -> Engine:
    if family not in FAMILIES:
        raise ConfigError(f"hf: unknown family {family!r}; known: generic, {', '.join(sorted(FAMILIES))}")
    module = importlib.import_module(FAMILIES[family])
    return module.load(checkpoint, options)
