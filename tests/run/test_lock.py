"""Class 6: one writer per run directory; readers see a consistent snapshot."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mtvbench.errors import BusyError
from mtvbench.records import GenerationResult, JudgeVerdict
from mtvbench.run.identity import ResultKey
from mtvbench.run.lock import RunLock
from mtvbench.run.store import RunStore
from tests.support.openai_server import Faults, LoopbackServer, ServerState
from tests.support.run_helpers import (
    cli,
    cli_run,
    model_requests,
    mtvbench_cmd,
    settings,
    stored_ok,
    subprocess_env,
    write_settings,
)


def _start(cfg: Path, *extra: str, log: Path | None = None) -> subprocess.Popen[str]:
    out = log.open("w") if log else subprocess.PIPE
    return subprocess.Popen(mtvbench_cmd("run", "--config", cfg, "--quiet", *extra), env=subprocess_env(),
                            stdout=out, stderr=subprocess.STDOUT, text=True)


def _wait_until(what: str, cond: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting until {what}")


def _wait_for_results(run: Path, proc: subprocess.Popen[str], n: int = 1) -> None:
    _wait_until("the first run stored a result", lambda: stored_ok(run) >= n, proc)


class Gate:
    """Model replies (the echo of the test server) that hold after ``free`` calls until opened."""

    def __init__(self, free: int):
        self.free, self.served, self.open = free, 0, threading.Event()
        self.lock = threading.Lock()

    def __call__(self, text: str, n_img: int) -> str:
        with self.lock:
            self.served += 1
            held = self.served > self.free
        if held:
            self.open.wait(60)
        return f"Answer to: {text.rsplit('Current question: ', 1)[-1]} [frames={n_img}]"


def test_second_run_refuses_or_waits_and_no_call_is_paid_twice(dataset: Path, tmp_path: Path) -> None:
    run, log = tmp_path / "run", tmp_path / "second.log"
    gate = Gate(free=2)
    state = ServerState(model_reply=gate)
    with LoopbackServer(state) as srv:
        values = settings(dataset, run, srv.url, tmp_path / "cache", judge="offline", concurrency=1)
        cfg = write_settings(tmp_path / "run.yaml", values)
        first, second = _start(cfg), None
        try:
            _wait_for_results(run, first)  # the first run holds the directory, its third call is held
            second = _start(cfg, "--wait", log=log)
            _wait_until("the second run waits", lambda: "waiting:" in log.read_text(), second)
            res = cli_run(values)  # a third writer refuses
            assert res.exit_code == 4, res.output
            out = " ".join(res.output.split())
            assert f"in use by `mtvbench run`, pid {first.pid}" in out and "--wait" in out
            res = cli("score", run)  # reads a consistent snapshot, writes nothing
            assert res.exit_code == 3 and "run in progress" in res.output and "wrote no file" in res.output
            assert "without a model response" in res.output and not (run / "scores.json").exists()
            gate.open.set()
            first_out, _ = first.communicate(timeout=120)
            second.wait(timeout=120)
        finally:
            gate.open.set()
            for p in (first, second):
                if p is not None and p.poll() is None:
                    p.kill()
    assert first.returncode == 0, first_out
    second_out = log.read_text()
    assert second.returncode == 0, second_out
    assert f"is in use by `mtvbench run`, pid {first.pid}" in " ".join(second_out.split())
    asked = model_requests(state)
    assert len(asked) == 12 and len({r["key"] for r in asked}) == 12  # every paid call made once
    assert (run / "scores.json").exists()


def test_sigkill_releases_the_lock(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=0.3))) as srv:
        cfg = write_settings(tmp_path / "run.yaml", settings(dataset, run, srv.url, tmp_path / "cache",
                                                             judge="offline", concurrency=1))
        proc = _start(cfg)
        try:
            _wait_for_results(run, proc)
            try:
                RunLock(run).acquire()
                raise AssertionError("the lock was not held by the running process")
            except BusyError:
                pass
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    with RunLock(run).acquire():  # the kernel released it with the process
        pass


def test_readers_see_one_snapshot_while_a_run_writes(tmp_path: Path) -> None:
    writer = RunStore(tmp_path)
    key = ResultKey(fingerprint="f" * 32, parts={})
    writer.put_response("t#1", "p", GenerationResult(text="a", raw_text="a"), key)
    reader = RunStore(tmp_path, create=False)
    try:
        with reader.snapshot():
            first = len(reader.response_rows())
            writer.put_response("t#2", "p", GenerationResult(text="b", raw_text="b"), key)
            writer.put_verdict("t#1", JudgeVerdict(run=0, status="ok", verdicts={"A1": "Yes"}), key)
            assert len(reader.response_rows()) == first == 1 and reader.verdict_rows() == []
        assert len(reader.response_rows()) == 2 and len(reader.verdict_rows()) == 1
    finally:
        reader.close()
        writer.close()
