"""mtvbench.ledger.lock: one writer per directory across processes, short sections across threads."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mtvbench.construct.workspace import Workspace
from mtvbench.errors import BusyError
from mtvbench.ledger.lock import DirLock, file_lock
from tests.support.run_helpers import subprocess_env

HOLD = """
import sys
from mtvbench.ledger.lock import DirLock
lock = DirLock(sys.argv[1], ".lock", "build", busy="{dir}: held by {holder}", hint="wait").acquire()
print("held", flush=True)
sys.stdin.readline()
"""


def _lock(d: Path) -> DirLock:
    return DirLock(d, ".lock", "test", busy="{dir}: held by {holder}", hint="wait for it")


@pytest.fixture
def holder(tmp_path: Path):  # noqa: ANN201 - a running process
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], env=subprocess_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_process_is_refused_naming_the_holder_exit_4(tmp_path: Path, holder: subprocess.Popen) -> None:
    with pytest.raises(BusyError) as e:
        _lock(tmp_path).acquire()
    assert e.value.exit_code == 4 and e.value.hint == "wait for it"
    assert e.value.message.startswith(f"{tmp_path}: held by `mtvbench build`, pid {holder.pid}, since ")


def test_the_workspace_lock_names_the_other_build(tmp_path: Path, holder: subprocess.Popen) -> None:
    with pytest.raises(BusyError) as e, Workspace(tmp_path).lock():
        pass
    assert f"another mtvbench build is using this workspace (`mtvbench build`, pid {holder.pid}" in str(e.value)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path, holder: subprocess.Popen) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with _lock(tmp_path).acquire() as lock:
        assert lock.fd is not None
    assert lock.fd is None


def test_wait_says_who_it_waits_for_then_takes_the_lock(tmp_path: Path, holder: subprocess.Popen) -> None:
    waiting: list[str] = []

    def on_wait(who: str) -> None:
        waiting.append(who)
        assert holder.stdin is not None
        holder.stdin.write("go\n")  # the holder exits, the kernel releases its lock
        holder.stdin.flush()

    with _lock(tmp_path).acquire(wait=True, on_wait=on_wait):
        assert len(waiting) == 1 and f"pid {holder.pid}" in waiting[0]
        # held now: another open file of this process is refused too
        with pytest.raises(BusyError, match=": held by "):
            _lock(tmp_path).acquire()


def test_an_unreadable_holder_file_still_refuses(tmp_path: Path) -> None:
    with _lock(tmp_path).acquire():
        (tmp_path / ".lock").write_text("not json")
        with pytest.raises(BusyError, match="held by another mtvbench process"):
            _lock(tmp_path).acquire()


def test_file_lock_without_wait_tells_the_block_it_is_held(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "entry.lock"
    with file_lock(path) as first:
        assert first is True and path.exists()
        with file_lock(path, wait=False) as second:
            assert second is False
    with file_lock(path, wait=False) as third:
        assert third is True


def test_file_lock_waits_for_another_thread(tmp_path: Path) -> None:
    path = tmp_path / "entry.lock"
    order: list[str] = []
    waited = threading.Event()
    with file_lock(path):
        worker = threading.Thread(target=lambda: _take(path, order, waited))
        worker.start()
        assert waited.wait(30)  # it found the lock held and waits
        order.append("released")
    worker.join(30)
    assert order == ["released", "taken"]


def _take(path: Path, order: list[str], waited: threading.Event) -> None:
    with file_lock(path, on_wait=waited.set):
        order.append("taken")
