"""Serving your own model, first try: a server that does not serve the model name sent gets one error
naming ``served_name``, and the run directory of a try in which no call succeeded takes the corrected
settings (its failed calls stay counted, their settings kept).

The server is a real HTTP server on 127.0.0.1 pinned to one model name, as a ``transformers serve`` or
a vLLM started for one checkpoint is: every request for another name gets a 400 (or 404) saying so.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.models.resilience import model_name_refused
from tests.support.datasets import make_dataset

PINNED = "/models/x"
PRESET = "qwen3-vl-8b-instruct@openai"


def _reply(model: str, status: int, body_of: str) -> tuple[int, bytes]:
    if model == PINNED:
        return 200, json.dumps({
            "id": "c1", "object": "chat.completion", "model": PINNED,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "an answer"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}).encode()
    return status, body_of.replace("{model}", model).encode()


@pytest.fixture(params=[
    (400, '{"error": {"message": "Server is pinned to \'' + PINNED + '\'; requested \'{model}\'"}}'),
    (404, '{"object": "error", "message": "The model `{model}` does not exist.", "type": "NotFoundError"}'),
], ids=["400-pinned", "404-does-not-exist"])
def pinned_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    status, body_of = request.param
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append(body["model"])
            code, data = _reply(body["model"], status, body_of)
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_model_name_names_served_name_and_the_same_out_takes_the_fix(
        pinned_server: tuple[str, list[str]], tmp_path: Path) -> None:
    url, asked = pinned_server
    data = make_dataset(tmp_path / "data")
    out = tmp_path / "run"
    base = ["run", "--data", str(data), "--model", PRESET, "--model-base-url", url, "--judge", "offline",
            "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--frames", "4"]
    first = CliRunner().invoke(app, base, env={"COLUMNS": "80"})
    assert first.exit_code == 2, first.output
    errors = [line for line in first.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, first.output  # one error, not one per call or video
    assert "--model-option served_name=" in first.output and "Traceback" not in first.output
    if "pinned" in first.output:  # the server named the model it serves: the advice names it too
        assert f"served_name={PINNED}" in first.output
    failed_calls = len(asked)
    assert failed_calls > 0 and PINNED not in asked

    second = CliRunner().invoke(app, [*base, "--model-option", f"served_name={PINNED}"], env={"COLUMNS": "80"})
    assert second.exit_code == 0, second.output
    assert "other settings" not in second.output
    protocol = [line for line in second.output.splitlines() if line.startswith("protocol:")]
    assert len(protocol) == 1 and len(protocol[0]) <= 100, protocol
    assert "no call had succeeded here under the earlier settings" in second.output
    assert asked.count(PINNED) > 0
    db = sqlite3.connect(out / "store.sqlite")
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        model_calls = db.execute("SELECT outcome, COUNT(*) FROM calls WHERE role='model' GROUP BY outcome").fetchall()
    finally:
        db.close()
    earlier = json.loads(meta["earlier_identities"])
    assert len(earlier) == 1 and "Qwen/Qwen3-VL-8B-Instruct" in json.dumps(earlier[0]["identity"])
    assert PINNED in meta["identity"]
    counted = dict(model_calls)
    assert counted.get("error", 0) >= 1 and counted.get("ok", 0) >= 1  # the failed try's calls stay counted
    assert "failed" in second.output  # and the usage line says so


def test_a_run_directory_with_a_result_stays_locked_to_its_settings(
        pinned_server: tuple[str, list[str]], tmp_path: Path) -> None:
    url, _ = pinned_server
    data = make_dataset(tmp_path / "data")
    base = ["run", "--data", str(data), "--judge", "offline", "--model-base-url", url, "--out", str(tmp_path / "run"),
            "--cache-dir", str(tmp_path / "cache"), "--quiet", "--frames", "4"]
    ok = CliRunner().invoke(app, [*base, "--model", PRESET, "--model-option", f"served_name={PINNED}"])
    assert ok.exit_code == 0, ok.output
    other = CliRunner().invoke(app, [*base, "--model", "openai:another"])
    assert other.exit_code == 2 and "other settings" in other.output, other.output


@pytest.mark.parametrize(("body", "named"), [
    ("Server is pinned to '/models/x'; requested 'y'", "/models/x"),
    ('{"message": "The model `y` does not exist or you do not have access to it."}', ""),
    ('{"error": "model \'y\' not found"}', ""),
    ('{"detail": "Unknown model: y"}', ""),
    ("404 page not found", None),  # a wrong URL, not a model name
    ("The requested URL does not exist", None),
    ('{"detail": "Unexpected fields in the request: {\'top_k\'}"}', None),
    ("Server is pinned to '$(rm -rf ~)'", ""),  # a name that is not a plain model name is not repeated
])
def test_which_replies_say_the_model_name_is_not_served(body: str, named: str | None) -> None:
    assert model_name_refused(body) == named


@pytest.mark.parametrize(("model", "frames", "qwen3"), [("qwen2.5-vl-7b@openai", 8, False),
                                                        ("qwen3-vl-8b-instruct@openai", 8, True),
                                                        ("qwen3-vl-8b-instruct@openai", 128, True)])
def test_what_the_model_was_sent_is_about_the_model_in_the_run(model: str, frames: int, qwen3: bool) -> None:
    from mtvbench.run.settings import build_config

    cfg = build_config({"data": "data", "model": model, "judge": "offline", "out": "run", "frames": frames,
                        "model_settings": {"base_url": "http://127.0.0.1:9/v1"}}, "test")
    label = cfg.inference_label
    assert f"{frames} JPEG images" in label
    assert ("Qwen3-VL" in label) == qwen3
    assert ("17 of 128 frames" in label) == (qwen3 and frames == 128)
