"""The system Chromium for the browser tests (they skip without one)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def chromium() -> str | None:
    """The Chromium executable (``$MTVBENCH_CHROMIUM``, or one on the PATH), or None."""
    for c in (os.environ.get("MTVBENCH_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser")):
        if c and Path(c).exists():
            return c
    return None
