"""Safe unpacking of the zip and tar archives a dataset release may ship its videos in.

An archive is unpacked into a fresh folder beside the destination and swapped into place when every
member is written (:class:`mtvbench.util.files.FolderSwap`), so ``DEST`` is complete, absent, or what it
was before.
Safety rules, checked before a single byte is written:

- a member name that is absolute, has a drive letter or a ``..`` part is an error naming the
  archive and the member (nothing of that archive is unpacked);
- links (symbolic or hard), devices and FIFOs are skipped and listed, never created;
- macOS metadata (``__MACOSX/``, ``._name``) is skipped;
- the declared sizes of the members to unpack must fit in the free space of the destination
  (plus a margin), and a zip member may not claim to expand more than ``max_ratio`` times;
- while writing, a member that yields more bytes than it declared is an error.

Only members accepted by ``keep`` (a name filter) are unpacked.
"""

from __future__ import annotations

import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from pydantic import BaseModel

from mtvbench.errors import InputError, OutputError
from mtvbench.util.files import FolderSwap, describe_os_error

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
#: pieces of a split archive (``videos.zip.001``, ``videos.z01``, ``videos.tar.gz.part2``)
_SPLIT = re.compile(r"\.(z\d{2}|zip\.\d{2,3}|tar(\.gz|\.bz2|\.xz)?\.\d{2,3}|(zip|tar|tgz|gz)\.part\d+)$",
                    re.IGNORECASE)
_CHUNK = 1 << 20
#: free space kept beyond the unpacked size
FREE_MARGIN = 64 << 20


def archive_kind(path: Path) -> Literal["zip", "tar"] | None:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(ARCHIVE_SUFFIXES):
        return "tar"
    return None


def is_split_part(path: Path) -> bool:
    return bool(_SPLIT.search(path.name))


def is_macos_metadata(name: str) -> bool:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    return "__MACOSX" in parts or (bool(parts) and parts[-1].startswith("._"))


class UnpackReport(BaseModel):
    archive: str
    files: int = 0
    bytes: int = 0
    #: members not unpacked because they are links or special files
    skipped_links: list[str] = []


@dataclass
class _Member:
    name: str
    kind: Literal["file", "dir", "link", "other"]
    size: int
    compressed: int | None
    open: Callable[[], AbstractContextManager[IO[bytes]]]


def safe_member_path(name: str, archive: Path) -> PurePosixPath:
    """The relative path of an archive member, or an error when it could land outside."""
    raw = name.replace("\\", "/")
    if not raw or raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or "\x00" in raw:
        raise InputError(f"{archive}: member {name!r} has an absolute or invalid name; the archive is refused")
    rel = PurePosixPath(raw)
    if ".." in rel.parts:
        raise InputError(f"{archive}: member {name!r} would be written outside the destination (..); "
                         "the archive is refused")
    return rel


@contextmanager
def _members(archive: Path) -> Iterator[list[_Member]]:
    kind = archive_kind(archive)
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                out = []
                for info in zf.infolist():
                    mode = info.external_attr >> 16
                    k: Literal["file", "dir", "link", "other"]
                    if info.is_dir():
                        k = "dir"
                    elif stat.S_ISLNK(mode):
                        k = "link"
                    elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # many zips give no file type
                        k = "other"
                    else:
                        k = "file"
                    out.append(_Member(info.filename, k, info.file_size, info.compress_size,
                                       lambda info=info: zf.open(info)))
                yield out
        elif kind == "tar":
            with tarfile.open(archive, "r:*") as tf:
                out = []
                for ti in tf.getmembers():
                    k = ("file" if ti.isreg() else "dir" if ti.isdir() else
                         "link" if (ti.issym() or ti.islnk()) else "other")
                    out.append(_Member(ti.name, k, ti.size, None, lambda ti=ti: _tar_open(tf, ti)))
                yield out
        else:
            raise InputError(f"{archive}: not an archive this tool unpacks ({', '.join(ARCHIVE_SUFFIXES)})")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as e:
        raise InputError(f"{archive}: damaged or incomplete archive ({e}); delete it and download again") from e


@contextmanager
def _tar_open(tf: tarfile.TarFile, ti: tarfile.TarInfo) -> Iterator[IO[bytes]]:
    f = tf.extractfile(ti)
    if f is None:  # pragma: no cover - only regular files reach here
        raise InputError(f"{tf.name}: member {ti.name!r} cannot be read")
    with f:
        yield f


def unpack(archive: Path, dest: Path, *, keep: Callable[[str], bool] | None = None,
           max_ratio: float = 1000.0) -> UnpackReport:
    """Unpack the accepted members of ``archive`` into ``dest`` (created whole, see module doc)."""
    archive, dest = Path(archive), Path(dest)
    report = UnpackReport(archive=str(archive))
    with _members(archive) as members:
        chosen: list[tuple[_Member, PurePosixPath]] = []
        for m in members:
            if m.kind == "dir" or is_macos_metadata(m.name):
                continue
            rel = safe_member_path(m.name, archive)
            if m.kind != "file":
                report.skipped_links.append(m.name)
                continue
            if keep is not None and not keep(m.name):
                continue
            if m.compressed and m.size > _CHUNK and m.size / m.compressed > max_ratio:
                raise InputError(f"{archive}: member {m.name!r} claims to expand {m.size / m.compressed:.0f}x "
                                 f"(limit {max_ratio:.0f}x); the archive is refused")
            chosen.append((m, rel))
        need = sum(m.size for m, _ in chosen)
        dest.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(dest.parent).free
        if need + FREE_MARGIN > free:
            raise OutputError(f"{dest.parent}: unpacking {archive.name} needs {need / 1e9:.2f} GB, "
                              f"{free / 1e9:.2f} GB free; free some space or choose another folder (--to)")
        try:
            with FolderSwap(dest) as tmp:
                for m, rel in chosen:
                    out = tmp.joinpath(*rel.parts)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    written = _copy_member(m, out, archive)
                    report.files += 1
                    report.bytes += written
        except OutputError:
            raise
        except OSError as e:
            raise OutputError(describe_os_error(getattr(e, "filename", None) or dest, e)) from e
    return report


def _copy_member(m: _Member, out: Path, archive: Path) -> int:
    written = 0
    try:
        with m.open() as src, open(out, "xb") as dst:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > m.size:
                    raise InputError(f"{archive}: member {m.name!r} holds more bytes than it declares "
                                     f"({m.size}); the archive is refused")
                dst.write(chunk)
    except FileExistsError as e:
        raise InputError(f"{archive}: member {m.name!r} appears twice; the archive is refused") from e
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as e:
        raise InputError(f"{archive}: member {m.name!r} is damaged ({e}); delete the archive and download "
                         "again") from e
    return written


__all__ = ["ARCHIVE_SUFFIXES", "UnpackReport", "archive_kind", "is_macos_metadata", "is_split_part",
           "safe_member_path", "unpack"]
