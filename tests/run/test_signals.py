"""SIGINT and SIGTERM stop a run the same way, whatever its backend: the calls in flight cancelled, the
backends closed, the store's session ended, the score files written (INCOMPLETE), one message, exit 130 /
143; the same command then resumes without asking again what was stored. (Gemini's context caches on a
signal: tests/models/test_gemini_cleanup.py; the wait for a Ray cluster: tests/ray/test_ray_faults.py.)"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.openai_server import Faults, LoopbackServer, ServerState
from tests.support.run_helpers import mtvbench_cmd, stored_ok, subprocess_env


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_a_signal_mid_run_closes_it_as_its_end_does(dataset: Path, tmp_path: Path, sig: int, code: int,
                                                    word: str) -> None:
    run = tmp_path / "run"
    state = ServerState(faults=Faults(slow_every=1, slow_s=0.3))
    with LoopbackServer(state) as srv:
        cmd = mtvbench_cmd("run", "--data", dataset, "--model", "openai:test-model", "--judge", "offline",
                           "--out", run, "--model-base-url", srv.url, "--frames", "4", "--judge-runs", "1",
                           "--concurrency", "2", "--cache-dir", tmp_path / "cache", "--quiet")
        proc = subprocess.Popen(cmd, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        while stored_ok(run) < 2 and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, out + err
        assert f"{word}: everything finished so far is stored" in err and "Traceback" not in err
        scores = json.loads((run / "scores.json").read_text())  # written as at the end: what is stored, scored
        assert scores["status"] == "INCOMPLETE"
        with sqlite3.connect(run / "store.sqlite") as db:
            stored = db.execute("SELECT COUNT(*) FROM responses WHERE outcome='ok'").fetchone()[0]
            ended = db.execute("SELECT ended FROM sessions").fetchall()
        assert 2 <= stored < 12 and ended and all(e is not None for (e,) in ended)  # the session was closed
        asked = len(state.requests)
        again = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(state.requests) - asked == 12 - stored  # only what was not stored is asked
