"""Files written whole or not at all, with the user's umask; input files that are real files.

Every result file of mtvbench goes through :func:`atomic_write_text` /
:func:`atomic_write_bytes`: the content goes to a temporary file in the same folder, is
flushed, given the permissions a plain ``open(..., "w")`` would give (``0o666 & ~umask``,
not ``mkstemp``'s 0600), and renamed over the target. A full disk or a permission problem
becomes one :class:`~mtvbench.errors.OutputError` naming the file, and nothing
half-written is left behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
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
