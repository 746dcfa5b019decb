"""Where mtvbench keeps per-user data."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir(name: str) -> Path:
    """``$MTVBENCH_CACHE/<name>``, else ``$XDG_CACHE_HOME/mtvbench/<name>`` (``~/.cache`` by default)."""
    env = os.environ.get("MTVBENCH_CACHE")
    if env:
        return Path(env).expanduser() / name
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mtvbench" / name
