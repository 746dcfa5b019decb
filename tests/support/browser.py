"""The system Chromium for the browser tests (they skip without one, and never download a browser)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def launched() -> Iterator[Any]:
    """The system Chromium, headless, through Playwright's sync API (closed at the end), or skip saying why.
    While it is open, Playwright's event loop counts as running in this thread: ``asyncio.run`` (a run, a build)
    must happen before it starts or after it is closed."""
    sync_api, exe = playwright_or_skip()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def closing_contexts(browser: Any) -> Iterator[Any]:
    """``browser``, with every browser context opened inside the block closed at its end: each test on a browser
    that its module shares (tests/review/conftest.py's ``chromium_browser``) starts from no context, no storage
    and no page, as on a browser of its own, and its pages are gone before its server stops."""
    before = list(browser.contexts)
    try:
        yield browser
    finally:
        for ctx in browser.contexts:
            if ctx not in before:
                ctx.close()
