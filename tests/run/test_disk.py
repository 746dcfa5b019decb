"""Class 9: a full disk stops the run with one message and a consistent store; files respect the umask.

The full disk is real: the run goes in a subprocess whose file-size limit (RLIMIT_FSIZE, with
SIGXFSZ ignored) makes every write past the limit fail with EFBIG, as a full disk fails with
ENOSPC; nothing of the write path is mocked.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from mtvbench.run.evaluate import evaluate
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import (
    cfg_for,
    cli_run,
    model_requests,
    run_cli_process,
    scores_of,
    settings,
    stored_ok,
    subprocess_env,
    write_settings,
)

LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from mtvbench.cli import app
app(sys.argv[2:], prog_name="mtvbench")
"""


def test_full_disk_stops_cleanly_and_the_next_run_resumes(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as ref:
        evaluate(cfg_for(dataset, tmp_path / "ref", ref.url, tmp_path / "cache"))
    run = tmp_path / "run"
    with LoopbackServer() as srv:
        cfg = write_settings(tmp_path / "run.yaml", settings(dataset, run, srv.url, tmp_path / "cache"))
        full = subprocess.run([sys.executable, "-c", LIMITED, str(192 << 10), "run", "--config", str(cfg), "--quiet"],
                              env=subprocess_env(), capture_output=True, text=True, timeout=120)
        out = full.stdout + full.stderr
        assert full.returncode == 2, out
        assert out.count("error:") == 1 and "store.sqlite: cannot write results" in out
        assert "free some space" in out and "run the same command again to resume" in out
        assert "Traceback" not in out and "never retrieved" not in out
        with sqlite3.connect(run / "store.sqlite") as c:
            assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kept = stored_ok(run)
        assert 0 < kept < 12, "the disk must fill up mid-run"
        asked_first = len(model_requests(srv.state))
        resumed = run_cli_process("run", "--config", cfg, "--quiet")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(model_requests(srv.state)) - asked_first == 12 - kept  # nothing stored was asked again
    ref_s, s = scores_of(tmp_path / "ref"), scores_of(run)
    for key in ("overall", "tasks", "ci95", "counts", "complete"):
        assert s[key] == ref_s[key], key


def test_unwritable_frame_cache_falls_back_to_memory_with_a_warning(dataset: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    with LoopbackServer() as srv:
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, blocker / "cache", judge="offline"))
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert out.count("frame cache not writable") == 1 and "continuing with frames in memory" in out
    assert len(model_requests(srv.state)) == 12 and scores_of(tmp_path / "run")["complete"]


def _modes(folder: Path) -> dict[str, int]:
    return {f.name: stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir() if f.is_file()}


def test_result_files_respect_the_umask(dataset: Path, tmp_path: Path) -> None:
    for umask, expected in ((0o027, 0o640), (0o022, 0o644)):
        run, report = tmp_path / f"run{umask:o}", tmp_path / f"report{umask:o}"
        args = ["run", "--data", dataset, "--model", "oracle", "--judge", "offline", "--out", run, "--judge-runs",
                "1", "--quiet"]
        for cmd in (args, ["report", run, "--out", report]) if umask == 0o027 else (args,):
            done = run_cli_process(*cmd, preexec_fn=lambda m=umask: os.umask(m))
            assert done.returncode == 0, done.stdout + done.stderr
        modes = _modes(run)
        for name in ("scores.json", "leaderboard.md", "responses.jsonl", "config.yaml", "benchmark.json",
                     "store.sqlite", "run.lock"):
            assert modes[name] == expected, (name, oct(modes[name]), oct(umask))
        if umask == 0o027:
            assert _modes(report)["report.html"] == expected
