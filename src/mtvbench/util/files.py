"""Files and folders written whole or not at all, with the user's umask; input files that are real files.

Every result file of mtvbench goes through :func:`atomic_write_text` /
:func:`atomic_write_bytes`: the content goes to a temporary file in the same folder, is
flushed, given the permissions a plain ``open(..., "w")`` would give (``0o666 & ~umask``,
not ``mkstemp``'s 0600), and renamed over the target. A full disk or a permission problem
becomes one :class:`~mtvbench.errors.OutputError` naming the file, and nothing
half-written is left behind.

Every result *folder* (a dataset in the released layout, an unpacked archive, a download, a review
export) goes through :class:`FolderSwap`: it is written into a hidden folder beside the target
(``.NAME.partial-PID``) and swapped in only when the writer finished without an error; until then the
previous folder stays as it was, byte for byte, and a failure removes the hidden folder again. A writer
that would leave nothing worth having (an export without a dialogue) raises :class:`NothingWritten`, which
is a failure like any other.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal

from mtvbench.errors import ConfigError, InputError, OutputError
from mtvbench.util.storable import encode_utf8

#: errors that mean "no room": the message says so plainly
_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EFBIG}


def _read_umask() -> int:
    try:  # Linux: read it without changing it (os.umask is process-wide and racy)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode ``open(path, 'w')`` would create a file with."""
    return 0o666 & ~_read_umask()


def describe_os_error(path: Path | str, e: OSError, doing: str = "cannot write") -> str:
    """A one-line message for an ``OSError`` on ``path`` while ``doing`` something: a full disk, a permission problem
    or a read-only file system said plainly, else the system's own words."""
    if e.errno in _NO_SPACE:
        return f"{path}: {doing}: no space left on the device (free some space, or choose another folder)"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{path}: {doing}: permission denied ({e.strerror})"
    if e.errno == errno.ENOTDIR:
        return f"{path}: {doing}: a parent of this path is a file, not a folder"
    if e.errno == errno.EISDIR:
        return f"{path}: {doing}: it is a folder"
    return f"{path}: {doing}: {e.strerror or e}"


def ensure_dir(path: Path) -> Path:
    """Create a folder (and parents); a file in the way is one clear error."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(describe_os_error(path, e, "cannot create the folder")) from e
    return path


@contextlib.contextmanager
def atomic_open(path: Path | str) -> Iterator[BinaryIO]:
    """A binary file that becomes ``path`` when the block ends without an error (see module doc)."""
    path = Path(path)
    ensure_dir(path.parent)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), file_mode())
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise OutputError(describe_os_error(path, e)) from e
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (see the module docstring)."""
    with atomic_open(path) as f:
        f.write(data)


def atomic_write_text(path: Path | str, text: str) -> None:
    """``text`` as UTF-8; a code point UTF-8 cannot encode (a lone surrogate) is written as U+FFFD
    (:mod:`mtvbench.util.storable`), never an error."""
    atomic_write_bytes(path, encode_utf8(text))


def atomic_write_json(path: Path | str, obj: object, indent: int | None = 2) -> None:
    """``obj`` as UTF-8 JSON (non-ASCII kept), written whole or not at all."""
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=indent))


def atomic_copy_file(src: Path | str, dst: Path | str) -> None:
    """Copy ``src`` to ``dst`` whole or not at all (streamed, any size)."""
    with open(src, "rb") as f, atomic_open(dst) as out:
        shutil.copyfileobj(f, out, 1 << 20)


def check_regular_file(path: Path | str, what: str = "file") -> Path:
    """A path that exists and is a regular file (not a FIFO, device, socket or folder)."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError as e:
        raise InputError(f"{path}: {what} not found") from e
    except OSError as e:
        raise InputError(describe_os_error(path, e, "cannot read")) from e
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, device or socket)"
        raise InputError(f"{path}: {what} is {kind}")
    return path


def read_bytes_capped(path: Path | str, max_bytes: int, what: str = "file") -> bytes:
    """Read a regular file of at most ``max_bytes``; anything else is one :class:`InputError`."""
    path = check_regular_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise InputError(describe_os_error(path, e, "cannot read")) from e
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped after the check
            raise InputError(f"{path}: {what} is not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{path}: {what} is larger than {max_bytes // (1 << 20)} MiB")
    return data


VideoMode = Literal["link", "copy"]
#: how an export places a dataset's videos: hard links (no second copy) or copies
VIDEO_MODES: tuple[VideoMode, ...] = ("link", "copy")


def video_mode(value: str, flag: str = "--video-mode") -> VideoMode:
    """``value`` as a video mode, or one error naming the modes."""
    if value not in VIDEO_MODES:
        raise ConfigError(f"{flag} must be link or copy, got {value!r}")
    return value  # type: ignore[return-value]


def place_file(src: Path, dst: Path, mode: VideoMode | str = "copy") -> None:
    """Put ``src`` at ``dst`` as a copy (atomic) or a hard link (a copy where a link is impossible,
    e.g. across file systems); never a symbolic link (a data root holds none). A file already at
    ``dst`` is kept when it is ``src`` itself (or, for a copy, has its size); a link there is replaced."""
    if dst.is_symlink():
        dst.unlink()
    elif dst.exists():
        if os.path.samefile(dst, src) or (dst.stat().st_size == src.stat().st_size and mode == "copy"):
            return
        dst.unlink()
    ensure_dir(dst.parent)
    if mode == "link":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    atomic_copy_file(src, dst)


# ----------------------------------------------------------------------------------- folders

class NothingWritten(OutputError):
    """A folder writer that has nothing to write (an empty export): the previous folder is kept."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


class FolderSwap:
    """A folder written beside ``out`` and swapped in when the block ends without an error.

    ``with FolderSwap(out) as stage:`` yields an empty hidden folder beside ``out``
    (``.NAME.partial-PID``); the writer puts everything into it. On success ``out`` (when it exists)
    is renamed aside, the stage renamed to ``out``, and the old folder removed. On any failure — an
    exception, :class:`NothingWritten`, a full disk — the stage is removed and ``out`` is untouched.
    A swap that fails half-way puts the old folder back.

    ``carry``: names of entries of the old ``out`` that belong to the folder but not to what is written
    (a lock file, a cache of unpacked archives): they are moved into the new folder at the swap (and
    back when the swap fails), so they survive both outcomes. ``resumable``: the stage is named without
    the process id (``.NAME.partial``) and an earlier one is continued (:attr:`resumed`) instead of
    removed; it is kept after a failure only while :attr:`keep_on_failure` is set (the writer sets it once
    the stage holds results that cost something to make, and names the stage in its error). Stages of
    processes that are gone are removed on entry."""

    def __init__(self, out: Path | str, *, carry: Sequence[str] = (), resumable: bool = False) -> None:
        self.out = Path(out)
        self.carry = tuple(carry)
        self.resumable = resumable
        suffix = "" if resumable else f"-{os.getpid()}"
        self.stage = self.out.parent / f".{self.out.name}.partial{suffix}"
        self._old = self.out.parent / f".{self.out.name}.old-{os.getpid()}"
        #: the staging folder had an earlier, stopped attempt (resumable only)
        self.resumed = False
        #: keep the stage after a failure (resumable only): it holds results worth resuming from
        self.keep_on_failure = False

    def _clear_stale(self) -> None:
        """Stages of processes that are gone are removed; the old folder of one killed between its two
        renames (``out`` missing) is put back first."""
        pattern = re.compile(rf"^\.{re.escape(self.out.name)}\.(partial|old)-(\d+)$")
        with contextlib.suppress(OSError):
            for p in sorted(self.out.parent.iterdir()):
                m = pattern.match(p.name)
                if not m or int(m.group(2)) == os.getpid() or _pid_alive(int(m.group(2))):
                    continue
                if m.group(1) == "old" and not self.out.exists():
                    os.rename(p, self.out)
                else:
                    shutil.rmtree(p, ignore_errors=True)

    def __enter__(self) -> Path:
        if self.out.exists() and not self.out.is_dir():
            raise OutputError(f"{self.out}: exists and is not a folder")
        ensure_dir(self.out.parent)
        self._clear_stale()
        if self.resumable and self.stage.is_dir():
            self.resumed = True
        else:
            shutil.rmtree(self.stage, ignore_errors=True)
            ensure_dir(self.stage)
        return self.stage

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            if not (self.resumable and self.keep_on_failure):
                shutil.rmtree(self.stage, ignore_errors=True)
            return
        try:
            self.swap()
        except BaseException:
            shutil.rmtree(self.stage, ignore_errors=True)
            raise

    def swap(self) -> None:
        """Put the stage in place of ``out`` (called by ``__exit__`` on success)."""
        moved: list[str] = []
        renamed = False
        try:
            for name in self.carry:
                if (self.out / name).exists() or (self.out / name).is_symlink():
                    shutil.rmtree(self.stage / name, ignore_errors=True)
                    os.rename(self.out / name, self.stage / name)
                    moved.append(name)
            if self.out.exists():
                os.rename(self.out, self._old)
                renamed = True
            os.rename(self.stage, self.out)
        except OSError as e:
            with contextlib.suppress(OSError):
                if renamed and not self.out.exists():
                    os.rename(self._old, self.out)
                for name in moved:
                    os.rename(self.stage / name, self.out / name)
            raise OutputError(describe_os_error(self.out, e, "cannot move the new folder into place")) from e
        shutil.rmtree(self._old, ignore_errors=True)
