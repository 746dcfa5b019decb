"""The only file-lock code of mtvbench (``fcntl.flock``; no locking where it is missing, e.g. Windows).

Two shapes:

- :class:`DirLock`, one writer per directory (a run directory, a build workspace), held for a whole
  command. The lock file records who took it last (command, pid, start time), so a second process
  names the holder: it refuses with :class:`~mtvbench.errors.BusyError` (exit 4) or, with ``wait``,
  calls ``on_wait(holder)`` once and waits. The kernel releases the lock when the process ends in
  any way, SIGKILL included, so a stale lock never outlives its process (the file itself stays).
- :func:`file_lock`, a short critical section on a lock file (a cache entry being written, a dataset
  folder being laid out). The lock belongs to the open file, so threads of one process exclude each
  other too; without ``wait`` the block is told at once that another holder has it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from mtvbench.errors import BusyError, OutputError
from mtvbench.util.files import describe_os_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock: nothing is exclusive there
    fcntl = None  # type: ignore[assignment]


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if it is free; False when another open file holds it."""
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait_lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created with its folders if missing) for the ``with`` block.

    Yields ``True`` once the lock is held. When another holder has it: with ``wait`` the call
    calls ``on_wait`` once and blocks until the lock is free; without ``wait`` it yields ``False``
    at once (the block must then leave the locked thing alone).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        if not _try_lock(f.fileno()):
            if not wait:
                yield False
                return
            if on_wait is not None:
                on_wait()
            _wait_lock(f.fileno())
        yield True  # closing the file releases the lock


class DirLock:
    """One writer per directory (see the module doc); ``busy`` is the refusal, with ``{dir}`` and ``{holder}``."""

    def __init__(self, directory: Path, filename: str, purpose: str, *, busy: str, hint: str):
        self.directory = Path(directory)
        self.path = self.directory / filename
        self.purpose, self.busy, self.hint = purpose, busy, hint
        self.fd: int | None = None

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
            return f"`mtvbench {info['purpose']}`, pid {int(info['pid'])}, since {started}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another mtvbench process"

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as e:
            raise OutputError(describe_os_error(self.path, e, "cannot create the lock file")) from e

    def acquire(self, wait: bool = False, on_wait: Callable[[str], None] | None = None) -> DirLock:
        """Take the lock, or raise :class:`~mtvbench.errors.BusyError` naming the holder; with ``wait``, call
        ``on_wait`` with the holder once and wait for the lock. Records this process as the holder."""
        fd = self._open()
        try:
            if not _try_lock(fd):
                holder = self._holder(fd)
                if not wait:
                    raise BusyError(self.busy.format(dir=self.directory, holder=holder), hint=self.hint)
                if on_wait:
                    on_wait(holder)
                _wait_lock(fd)
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
        """Give the lock back (nothing happens when it is not held)."""
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
