"""One writer per run directory: an OS file lock held for the whole run.

``run`` takes an exclusive ``fcntl.flock`` on ``<run dir>/run.lock`` before it touches
anything else there and holds it until it exits. The kernel releases the lock when the
process ends in any way, SIGKILL included, so a stale lock cannot outlive its process (the
file itself stays; it holds only who took the lock last, for the message). A second
process on the same directory refuses with :class:`~mtvbench.errors.BusyError` (exit 4)
naming the holder, or waits for it with ``wait=True`` (``--wait``). ``score`` takes the
same lock without waiting: when a run holds it, ``score`` prints the scores of a
consistent snapshot and writes no file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from mtvbench.errors import BusyError, OutputError
from mtvbench.util.files import describe_os_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock; runs are then not exclusive
    fcntl = None  # type: ignore[assignment]


class RunLock:
    FILENAME = "run.lock"

    def __init__(self, run_dir: Path, purpose: str = "run"):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / self.FILENAME
        self.purpose = purpose
        self.fd: int | None = None

    def _holder(self, fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
            return f"`mtvbench {info['purpose']}`, pid {int(info['pid'])}, since {started}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another mtvbench process"

    def acquire(self, wait: bool = False, on_wait: Callable[[str], None] | None = None) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as e:
            raise OutputError(describe_os_error(self.path, e, "cannot create the run lock")) from e
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = self._holder(fd)
                    if not wait:
                        raise BusyError(f"{self.run_dir}: the run directory is in use by {holder}",
                                        hint="wait for it to finish, or pass --wait to wait for it") from None
                    if on_wait:
                        on_wait(holder)
                    fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        info = json.dumps({"purpose": self.purpose, "pid": os.getpid(), "started": time.time()})
        try:  # only for the message another process prints; a full disk must not stop us here
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode("utf-8"), 0)
        except OSError:
            pass
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
