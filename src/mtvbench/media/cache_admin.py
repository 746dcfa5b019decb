"""Look into and clear mtvbench's on-disk caches (``mtvbench cache info|clear``).

Three caches hold derived data that is safe to delete (it is recomputed when needed):

- **frames** (:mod:`mtvbench.media.cache`): an entry is ``ROOT/<xx>/<key>/`` (``<key>`` =
  32 hex digits of the video's content fingerprint, the frame settings and the cache
  version; ``<xx>`` its first two characters) holding ``NNNN.jpg`` and ``meta.json`` (or,
  for a script's clip, ``clip.mp4`` and ``meta.json``); a
  writer's temporary folder is ``ROOT/<xx>/.<key>.<random>``. An entry is removed only while
  its lock (``ROOT/.locks/<key>.lock``, the lock the cache itself takes) is held, so an entry
  being written by a running evaluation is skipped, never cut in half.
- **scenes** (:mod:`mtvbench.analysis.metadata`): one ``<video stem>-<16 hex>.json`` per
  video file; written atomically, so removing one is atomic too.
- **reports** (:mod:`mtvbench.run.reportcache`): what a report keeps of a run, one
  ``<xx>/<32 hex>.json`` per run directory and number of bootstrap draws; written atomically
  (a writer's temporary file is ``<xx>/.<32 hex>.json.<random>.tmp``).

Anything else in those folders is not recognised and is left alone (and reported). Ages are
file modification times: when an entry was written.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from mtvbench.ledger.lock import file_lock

Kind = Literal["frames", "scenes", "reports"]
_FRAME_KEY = re.compile(r"^[0-9a-f]{32}-.+-v\d+$")
_FRAME_TMP = re.compile(r"^\.([0-9a-f]{32}-.+-v\d+)\.[^/]+$")
_SCENE_FILE = re.compile(r"^.+-[0-9a-f]{16}\.json$")
_SCENE_TMP = re.compile(r"^\..+-[0-9a-f]{16}\.json\..+\.tmp$")
_REPORT_FILE = re.compile(r"^[0-9a-f]{32}\.json$")
_REPORT_TMP = re.compile(r"^\.[0-9a-f]{32}\.json\..+\.tmp$")
#: a writer's temporary file or folder younger than this may still be in use
_TMP_GRACE_S = 3600.0


class Entry(BaseModel):
    kind: Kind
    path: Path
    bytes: int
    mtime: float
    #: the frame-cache key whose lock guards it (frames only)
    key: str | None = None
    temporary: bool = False


class CacheInfo(BaseModel):
    kind: Kind
    root: Path
    exists: bool
    entries: int = 0
    temporary: int = 0
    bytes: int = 0
    oldest: float | None = None
    newest: float | None = None
    #: names in the folder that are not cache entries (left alone)
    unrecognised: list[str] = []


class ClearReport(BaseModel):
    kind: Kind
    root: Path
    removed: int = 0
    freed_bytes: int = 0
    #: entries being written by another process right now (skipped)
    busy: int = 0
    kept: int = 0


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / f).lstat().st_size
    return total


def _scan_frames(root: Path, unknown: list[str]) -> Iterator[Entry]:
    for shard in sorted(root.iterdir()):
        if shard.name == ".locks":
            continue
        if not (shard.is_dir() and not shard.is_symlink() and re.fullmatch(r"[0-9a-f]{2}", shard.name)):
            unknown.append(shard.name)
            continue
        for item in sorted(shard.iterdir()):
            key, temporary = item.name, False
            if (m := _FRAME_TMP.match(item.name)) is not None:
                key, temporary = m.group(1), True
            if not (_FRAME_KEY.match(key) and key[:2] == shard.name and item.is_dir() and not item.is_symlink()):
                unknown.append(f"{shard.name}/{item.name}")
                continue
            yield Entry(kind="frames", path=item, bytes=_size(item), mtime=item.stat().st_mtime, key=key,
                        temporary=temporary)


def _scan_scenes(root: Path, unknown: list[str]) -> Iterator[Entry]:
    for item in sorted(root.iterdir()):
        if item.is_file() and not item.is_symlink() and (_SCENE_FILE.match(item.name) or
                                                         _SCENE_TMP.match(item.name)):
            st = item.stat()
            yield Entry(kind="scenes", path=item, bytes=st.st_size, mtime=st.st_mtime,
                        temporary=item.name.startswith("."))
        else:
            unknown.append(item.name)


def _scan_reports(root: Path, unknown: list[str]) -> Iterator[Entry]:
    for shard in sorted(root.iterdir()):
        if not (shard.is_dir() and not shard.is_symlink() and re.fullmatch(r"[0-9a-f]{2}", shard.name)):
            unknown.append(shard.name)
            continue
        for item in sorted(shard.iterdir()):
            temporary = bool(_REPORT_TMP.match(item.name))
            name = item.name[1:] if temporary else item.name
            if not ((temporary or _REPORT_FILE.match(item.name)) and name[:2] == shard.name and item.is_file()
                    and not item.is_symlink()):
                unknown.append(f"{shard.name}/{item.name}")
                continue
            st = item.stat()
            yield Entry(kind="reports", path=item, bytes=st.st_size, mtime=st.st_mtime, temporary=temporary)


_SCANS = {"frames": _scan_frames, "scenes": _scan_scenes, "reports": _scan_reports}


def scan(kind: Kind, root: Path) -> tuple[list[Entry], list[str]]:
    """The recognised entries of a cache folder, and the names it does not recognise."""
    root = Path(root)
    unknown: list[str] = []
    if not root.is_dir():
        return [], unknown
    entries = list(_SCANS[kind](root, unknown))
    return entries, unknown


def info(kind: Kind, root: Path) -> CacheInfo:
    entries, unknown = scan(kind, root)
    done = [e for e in entries if not e.temporary]
    return CacheInfo(kind=kind, root=Path(root), exists=Path(root).is_dir(), entries=len(done),
                     temporary=len(entries) - len(done), bytes=sum(e.bytes for e in entries),
                     oldest=min((e.mtime for e in done), default=None),
                     newest=max((e.mtime for e in done), default=None), unrecognised=unknown)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def clear(kind: Kind, root: Path, *, older_than_s: float | None = None, dry_run: bool = False,
          now: float | None = None) -> ClearReport:
    """Remove the recognised entries (written more than ``older_than_s`` ago, when given).

    Frame entries are removed under their lock and skipped while another process holds it;
    temporary files and folders younger than an hour are left to their writer."""
    now = time.time() if now is None else now
    entries, _ = scan(kind, root)
    rep = ClearReport(kind=kind, root=Path(root))
    for e in entries:
        age = now - e.mtime
        if (older_than_s is not None and age < older_than_s) or (e.temporary and age < _TMP_GRACE_S):
            rep.kept += 1
            continue
        if dry_run:
            rep.removed += 1
            rep.freed_bytes += e.bytes
            continue
        if e.key is not None:
            with file_lock(Path(root) / ".locks" / f"{e.key}.lock", wait=False) as held:
                if not held:
                    rep.busy += 1
                    continue
                _remove(e.path)
        else:
            _remove(e.path)
        rep.removed += 1
        rep.freed_bytes += e.bytes
    return rep


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """``90m``, ``12h``, ``30d``, ``2w`` (or plain seconds) -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text.lower())
    if m is None:
        raise ValueError(f"{text!r} is not an age like 90m, 12h, 30d or 2w")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


__all__ = ["CacheInfo", "ClearReport", "Entry", "clear", "info", "parse_age", "scan"]
