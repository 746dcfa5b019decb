"""Advisory file locks between processes (``fcntl.flock``; no locking where it is missing)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block.

    Yields ``True`` once the lock is held. When another process holds it: with ``wait`` the
    call calls ``on_wait`` once and blocks until the lock is free; without ``wait`` it yields
    ``False`` at once (the block must then leave the locked thing alone).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        if fcntl is None:  # pragma: no cover
            yield True
            return
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            if on_wait is not None:
                on_wait()
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
