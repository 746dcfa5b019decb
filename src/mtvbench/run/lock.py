"""One writer per run directory: ``<run dir>/run.lock``, held for the whole run.

``run`` takes the lock (:class:`mtvbench.ledger.lock.DirLock`) before it touches anything else in the
directory and holds it until it exits. A second process on the same directory refuses with
:class:`~mtvbench.errors.BusyError` (exit 4) naming the holder, or waits for it with ``wait=True``
(``--wait``). ``score`` takes the same lock without waiting: when a run holds it, ``score`` prints the
scores of a consistent snapshot and writes no file.
"""

from __future__ import annotations

from pathlib import Path

from mtvbench.ledger.lock import DirLock


class RunLock(DirLock):
    FILENAME = "run.lock"

    def __init__(self, run_dir: Path, purpose: str = "run"):
        super().__init__(run_dir, self.FILENAME, purpose, busy="{dir}: the run directory is in use by {holder}",
                         hint="wait for it to finish, or pass --wait to wait for it")
        self.run_dir = self.directory
