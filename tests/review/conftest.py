"""Fixtures of the review tests: the bundled sample, test clients, the real server in a subprocess."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mtvbench.data.sample import materialize
from mtvbench.review.source import open_source
from mtvbench.review.store import ReviewStore

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="session")
def sample_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize(tmp_path_factory.mktemp("sample") / "sample")


@pytest.fixture(scope="session")
def built_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `build all` workspace over two generated videos (scripted loopback model, as in tests/construct)."""
    from tests.support.build_replies import Scripted
    from tests.support.builds import build_all, two_videos
    from tests.support.openai_server import LoopbackServer, ServerState

    root = tmp_path_factory.mktemp("ws-build")
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = build_all(root / "ws", two_videos(root / "raw"), srv.url)
    assert res.exit_code == 0, res.output
    return root / "ws"


@pytest.fixture
def sample(sample_master: Path, tmp_path: Path) -> Path:
    """A private copy of the bundled sample (its review store starts empty)."""
    dest = tmp_path / "sample"
    shutil.copytree(sample_master, dest)
    return dest


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    """One headless system Chromium for the browser tests of a module (starting Playwright and a browser for
    each test took a second or two each); a test opens its own contexts inside
    :func:`tests.support.browser.closing_contexts`. Skipped, saying why, without Playwright or Chromium."""
    from tests.support.browser import launched

    with launched() as browser:
        yield browser


def make_client(path: Path, *, require_tokens: bool = False, store: Path | None = None):  # noqa: ANN201
    from starlette.testclient import TestClient

    from mtvbench.review.app import LOOPBACK_NAMES, create_app

    source = open_source(path)
    st = ReviewStore(store or source.default_store)
    app = create_app(source, st, require_tokens=require_tokens, trusted_hosts=LOOPBACK_NAMES | {"testserver"})
    return TestClient(app)


def who(name: str, job: str = "annotator") -> dict[str, str]:
    """Open-mode identity headers (what the pages send on loopback without users)."""
    from urllib.parse import quote

    return {"X-Review-User": quote(name), "X-Review-Job": job}


def verdict(name: str, decision: str, *, senior: bool = False, unmet: tuple[str, ...] = (), **extra: object
            ) -> dict[str, object]:
    """A decision as the pages post it: the three criteria (met unless named in ``unmet``), and the
    comment a rejection needs."""
    from mtvbench.review.decisions import CRITERIA

    body: dict[str, object] = {"senior" if senior else "annotator": name, "decision": decision,
                               "criteria": {c: {"met": c not in unmet, "note": "see Q2" if c in unmet else ""}
                                            for c in CRITERIA}}
    if decision == "reject":
        body["comment"] = "not grounded"
    return body | extra


def item_url(item_id: str, suffix: str = "") -> str:
    from urllib.parse import quote

    return "/api/items/" + "/".join(quote(p, safe="") for p in item_id.split("/")) + suffix


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(path: Path, *extra: str, port: int = 0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``mtvbench review serve PATH --port PORT`` in a subprocess; yields its URL (stopped at the end)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "mtvbench", "review", "serve", str(path), "--port", str(port),
                             *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    url = None
    lines = []
    deadline = time.monotonic() + 60
    try:
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"serving at (http://\S+?)/? ", line + " ")
            if m:
                url = m.group(1).rstrip("/")
                break
        if url is None:
            proc.kill()
            raise AssertionError("the server did not start:\n" + "".join(lines) + (proc.stdout.read() or ""))
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
