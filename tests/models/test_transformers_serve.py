"""A paper preset against a real ``transformers serve`` (CPU, a tiny model built from a config, 127.0.0.1).

``transformers serve`` refuses request fields its OpenAI schema lacks (HTTP 422 "Unexpected fields in
the request: {'top_k', 'repetition_penalty'}"), which the Qwen presets send. The run must stop with one
error naming the preset's values and the flags that drop them; with those flags it must succeed.

Needs what ``pip install 'transformers[serving]'`` installs (fastapi, uvicorn, openai, accelerate) and
torch; without them the tests are skipped, saying which module is missing.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset
from tests.support.extras import missing

_NEEDS = ("torch", "transformers", "fastapi", "uvicorn", "openai", "accelerate")
_MISSING = missing(*_NEEDS)
_WHY = (f"transformers serve needs mtvbench[hf] and transformers[serving] ({', '.join(_MISSING)} not installed): "
        "pip install 'mtvbench[hf]' 'transformers[serving]'")
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=_WHY)
#: how long the server may take to import and load the tiny model on a busy 2-core machine
START_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as r:
            return r.status == 200 and "data" in json.loads(r.read())
    except OSError:
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, model path) of ``transformers serve`` holding the tiny model."""
    from mtvbench.models.tiny import build_tiny_llava

    root = tmp_path_factory.mktemp("tserve")
    model = build_tiny_llava(root / "tiny")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = (root / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "transformers.cli.transformers", "serve", str(model),
                             "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_S
        while not _up(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start:\n{(root / 'serve.log').read_text()[-3000:]}")
            time.sleep(1)
        yield url, model
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _run(data: Path, out: Path, url: str, model: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", "--data", str(data), "--model", "qwen2.5-vl-7b@openai", "--judge", "offline",
                                   "--model-base-url", url, "--model-option", f"served_name={model}",
                                   "--frames", "2", "--max-tokens", "4", "--limit", "1", "--concurrency", "2",
                                   "--quiet", "--out", str(out), *extra])
    assert "Traceback" not in res.output
    return res.exit_code, " ".join(res.output.split())


def test_a_qwen_preset_on_transformers_serve_names_what_to_drop_and_then_runs(
        served: tuple[str, Path], tmp_path: Path) -> None:
    url, model = served
    data = make_dataset(tmp_path / "data")
    code, out = _run(data, tmp_path / "refused", url, model)
    assert code == 2, out
    assert f"HTTP 422 from {url}/chat/completions: \"Unexpected fields in the request:" in out
    assert "top_k=1 (preset qwen2.5-vl-7b)" in out and "repetition_penalty=1.05 (preset qwen2.5-vl-7b)" in out
    assert ("drop them with --top-k none --repetition-penalty none (YAML: model_settings: {top_k: null, "
            "repetition_penalty: null})") in out
    code, out = _run(data, tmp_path / "ok", url, model, "--top-k", "none", "--repetition-penalty", "none")
    assert code == 0, out
    responses = [json.loads(line) for line in (tmp_path / "ok" / "responses.jsonl").read_text().splitlines()]
    assert responses and all(r.get("answer") is not None for r in responses), responses[:1]


def test_a_video_part_refused_by_transformers_serve_hints_at_images(served: tuple[str, Path], tmp_path: Path) -> None:
    url, model = served
    data = make_dataset(tmp_path / "data")
    drop = ("--top-k", "none", "--repetition-penalty", "none", "--model-option", "max_retries=0")
    code, out = _run(data, tmp_path / "video", url, model, *drop, "--model-option", "video_part=true")
    assert code == 3, out
    # the server answers a video part with HTTP 500 (and now and then drops the connection instead)
    with sqlite3.connect(tmp_path / "video" / "store.sqlite") as db:
        errors = [e for (e,) in db.execute("SELECT error FROM responses")]
    hinted = [e for e in errors if e.startswith(f"HTTP 500 from {url}/chat/completions")]
    assert hinted and all(e.startswith((f"HTTP 500 from {url}", f"connection to {url}")) for e in errors), errors
    assert all("(the server may not accept video parts, video_part=true: send the frames as images with "
               "--model-option video_part=false" in e for e in hinted)
