"""What a report keeps of a run, kept for the next report: a run's scores, its dialogue scores and what the
report's explorer shows of each turn, valid only for exactly what produced them.

Reading a run of 1,000 dialogues (about 5,900 answers, 17,700 judge runs) checks every stored row and scores it
again: about two seconds of CPU. A leaderboard's report reads every run each time a new one is added, so what it
keeps of each run is written to the user cache (``$MTVBENCH_CACHE/reports``, :mod:`mtvbench.util.paths`) and
read instead the next time, when nothing it came from has changed. An entry's **key** is a SHA-256 digest of
everything the scores depend on:

- the bytes of ``config.yaml``, ``benchmark.json``, ``store.sqlite`` and its write-ahead log (any change to any of
  them, by mtvbench, by ``sqlite3`` or by a hex editor, is a new key; a checkpoint that moves the log into the
  file changes nothing stored but is a new key too: that report reads the run again);
- the bootstrap draws the scores used;
- the bytes of every file of the mtvbench package that reads them (a new or edited mtvbench is a new key), and
  the versions of Python, numpy and pydantic.

An entry is written only when the key is the same before and after the run was read (no run wrote to it
meanwhile), so it always describes the bytes its key names. There is one entry per run directory and number of
draws (the next state of the run replaces it), and an entry not used for :data:`STALE_AFTER_S` is removed.
What is not in an entry is read fresh from the run directory every time: its settings and benchmark (checked as
always), and the resources left on a provider's server (whether they expired depends on the time).

The cache is the user's own, like the frame cache: an entry is checked to be one (its format, the run it is
for) but its contents are trusted. A cache that cannot be written (read-only, full) only costs speed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import platform
import stat
import time
from importlib.metadata import version
from pathlib import Path

from pydantic import BaseModel, ValidationError

from mtvbench.errors import MtvbenchError
from mtvbench.run.rundir import RunData, RunDirectory, SnapshotMemo
from mtvbench.scoring.aggregate import DialogueScore, Scores
from mtvbench.util.escape import json_for_script
from mtvbench.util.files import atomic_write_text
from mtvbench.util.paths import cache_dir

log = logging.getLogger(__name__)

#: the format of an entry (an entry of another is not read)
ENTRY_FORMAT = 1
#: an entry not read or written for this long is removed (its run directory was probably deleted)
STALE_AFTER_S = 30 * 24 * 3600.0
#: the store's files whose bytes are part of the key, beside config.yaml and benchmark.json
_STORE_FILES = (RunDirectory.STORE, RunDirectory.STORE + "-wal")


class ReportEntry(BaseModel):
    """What a report keeps of one run (see the module docstring)."""

    format: int = ENTRY_FORMAT
    #: the digest of what produced it
    key: str
    #: the run directory it was read from (resolved), for a reader of the cache
    run_dir: str
    scores: Scores
    #: every dialogue's score, without its turns
    dialogue_scores: list[DialogueScore]
    #: the explorer's file of this run: every dialogue's model turns (answer, outcome, score, each judge run's
    #: verdicts), as JSON text safe in a page (:func:`~mtvbench.util.escape.json_for_script`)
    turns: str


@functools.cache
def _code_digest() -> str:
    """The digest of the files of the mtvbench package that is running (sources and data, not bytecode)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@functools.cache
def _libraries() -> str:
    """Python's version and those of the libraries scores are computed with (the bootstrap's random draws are
    numpy's)."""
    return f"python {platform.python_version()} numpy {version('numpy')} pydantic {version('pydantic')}"


def _file_digest(path: Path) -> str | None:
    """The SHA-256 of a regular file's bytes, ``absent`` when there is no file; None when it cannot be read or is
    not a regular file (no key then: the run is read whole, and what is wrong is said by that read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return "absent"
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        try:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        except OSError:
            return None
    return h.hexdigest()


def run_key(run_dir: Path, bootstrap: int, snapshot: bytes | None = None) -> str | None:
    """The key of the run directory's current state scored with ``bootstrap`` draws (module docstring);
    ``snapshot``: the bytes of its ``benchmark.json`` read before (None: read now). None when one of its files
    cannot be read."""
    h = hashlib.sha256(f"mtvbench report entry {ENTRY_FORMAT}\0{_code_digest()}\0{_libraries()}\0"
                       f"bootstrap {bootstrap}\0".encode())
    for name in (RunDirectory.CONFIG, RunDirectory.SNAPSHOT, *_STORE_FILES):
        found = (hashlib.sha256(snapshot).hexdigest() if name == RunDirectory.SNAPSHOT and snapshot is not None
                 else _file_digest(run_dir / name))
        if found is None:
            return None
        h.update(f"{name} {found}\0".encode())
    return h.hexdigest()


class ReportCache:
    """The entries under ``root`` (None: the user cache's ``reports`` folder), one file per run directory and
    number of bootstrap draws."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else cache_dir("reports")

    def _file(self, run_dir: Path, bootstrap: int) -> Path:
        name = hashlib.sha256(f"{run_dir}\0{bootstrap}".encode()).hexdigest()[:32]
        return self.root / name[:2] / f"{name}.json"

    def get(self, run_dir: Path, bootstrap: int, key: str | None) -> ReportEntry | None:
        """The entry of ``run_dir`` when it was made under ``key``; None when there is none, it is of another
        state or format, or it cannot be read (or there is no key)."""
        if key is None:
            return None
        path = self._file(run_dir, bootstrap)
        try:
            entry = ReportEntry.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None
        if entry.format != ENTRY_FORMAT or entry.key != key or entry.run_dir != str(run_dir):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used: not stale
        return entry

    def put(self, bootstrap: int, entry: ReportEntry) -> None:
        """Write ``entry`` over the run directory's earlier one, and remove the entries gone stale."""
        try:
            atomic_write_text(self._file(Path(entry.run_dir), bootstrap), entry.model_dump_json())
            self._remove_stale(time.time() - STALE_AFTER_S)
        except (MtvbenchError, OSError) as e:  # a read-only or full cache only costs speed
            log.debug("report cache not written: %s", e)

    def _remove_stale(self, before: float) -> None:
        for path in self.root.glob("*/*.json"):
            try:
                if path.stat().st_mtime < before:
                    path.unlink()
            except OSError:
                pass


def explorer_turns(run: RunData) -> str:
    """What the explorer shows of one run, as JSON text for the page: per dialogue and round its answer,
    outcome, score and every judge run's verdicts."""
    turn_scores = {t.turn_id: t.score for ds in run.dscores for t in ds.turns}
    turns: dict[str, dict[str, object]] = {}
    for d in run.dialogues:
        per: dict[str, object] = {}
        for r in d.model_turns:
            tid = d.turn_id(r.index)
            rec = run.responses.get(tid)
            judged = run.all_verdicts.get(tid, {})
            ts = turn_scores.get(tid)
            per[str(r.index)] = {
                "answer": rec["text"] if rec else None, "outcome": rec["outcome"] if rec else "missing",
                "score": None if ts is None else 100.0 * ts,
                "judge": [{"run": v.run, "status": v.status, "verdicts": v.verdicts}
                          for _, v in sorted(judged.items())],
            }
        turns[d.id] = per
    return json_for_script(turns)


def read_whole(rundir: RunDirectory, bootstrap: int | None = None, details: bool = False,
               memo: SnapshotMemo | None = None, cache: ReportCache | None = None) -> tuple[RunData, ReportEntry]:
    """:meth:`RunDirectory.load` (same arguments), and the run's report entry, kept in the cache when the run
    directory was in the same state before and after it was read."""
    draws = rundir.config().bootstrap if bootstrap is None else bootstrap
    path = rundir.path.resolve()
    key = run_key(path, draws)
    run = rundir.load(bootstrap=bootstrap, details=details, memo=memo)
    entry = ReportEntry(key=key or "", run_dir=str(path), scores=run.scores,
                        dialogue_scores=[ds.model_copy(update={"turns": []}) for ds in run.dscores],
                        turns=explorer_turns(run))
    if key is not None and run_key(path, draws) == key:
        (cache or ReportCache()).put(draws, entry)
    return run, entry


def load_for_report(rundir: RunDirectory, bootstrap: int | None = None, memo: SnapshotMemo | None = None,
                    cache: ReportCache | None = None) -> tuple[RunData, str]:
    """The run as a report reads it: its :class:`RunData` without answers, verdicts or per-turn scores, and the
    explorer's file of it (:func:`explorer_turns`); from the cache when the run directory is in the state the
    entry was made from, else read whole (and kept). Its settings and benchmark are read and checked every time.

    Raises:
        RunDirError: as :meth:`RunDirectory.load`."""
    cache = cache or ReportCache()
    RunDirectory.open(rundir.path)
    cfg = rundir.config()
    draws = cfg.bootstrap if bootstrap is None else bootstrap
    path = rundir.path.resolve()
    snapshot = rundir.snapshot_bytes()
    found = cache.get(path, draws, run_key(path, draws, snapshot))
    if found is None:
        run, entry = read_whole(rundir, bootstrap=bootstrap, memo=memo, cache=cache)
        run.responses, run.all_verdicts, run.verdicts = {}, {}, {}
        run.dscores = entry.dialogue_scores
        return run, entry.turns
    snap = rundir.snapshot(memo, snapshot, read_before=True)  # its bytes were read strictly for the entry
    store = rundir.store()
    try:
        found.scores.left_on_server = store.resources_left(now=time.time())
    finally:
        store.close()
    run = RunData(run_dir=rundir.path, config=cfg, snapshot=snap, responses={}, all_verdicts={}, verdicts={},
                  scores=found.scores, dscores=found.dialogue_scores)
    return run, found.turns
