"""The system Chromium for the browser tests (they skip without one, and never download a browser)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

#: headless, no sandbox (containers), nothing fetched by the browser itself
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> str | None:
    """The Chromium executable (``$MTVBENCH_CHROMIUM``, or one on the PATH), or None."""
    for c in (os.environ.get("MTVBENCH_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser")):
        if c and Path(c).exists():
            return c
    return None


def playwright_or_skip() -> tuple[Any, str]:
    """``(playwright.sync_api, chromium executable)``, or skip the test saying what is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python not installed")
    pytest.importorskip("uvicorn", reason="the review web app needs mtvbench[review]")
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium); no browser is downloaded")
    return sync_api, exe
