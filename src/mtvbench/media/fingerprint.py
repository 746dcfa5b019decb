"""The content key of a video file (:func:`fingerprint`) and the version of the frame cache's entries.

A video is known by its content, not its path: copies and renames share frame-cache entries, and a stored
answer is bound to the content it saw (:mod:`mtvbench.run.identity`). Kept apart from the cache itself so
that what builds cache entries (:mod:`mtvbench.media.authors_frames`) and the cache need not import each other.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from mtvbench.media.frames import VideoError

#: the version of the frame cache's entries (part of every key)
CACHE_VERSION = 1
_CHUNK = 1 << 20
#: (resolved path, size, mtime_ns, inode) -> fingerprint, so repeated lookups do not re-read the file
_FP_MEMO: dict[tuple[str, int, int, int], str] = {}


def fingerprint(path: Path) -> str:
    """Content fingerprint: 32 hex digits of blake2b over the file size and three 1 MiB chunks.

    The chunks are the head, the middle and the tail of the file (the whole file when it is
    at most 3 MiB). It does not depend on the path or mtime, so copies and renames share
    cache entries; it is cheap (3 MiB read) even for multi-GB videos.
    """
    path = Path(path)
    try:
        st = path.stat()
        memo_key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
        if memo_key in _FP_MEMO:
            return _FP_MEMO[memo_key]
        size = st.st_size
        h = hashlib.blake2b(digest_size=16)
        h.update(f"mtvbench-fp1:{size}:".encode())
        with open(path, "rb") as f:
            if size <= 3 * _CHUNK:
                h.update(f.read())
            else:
                for offset in (0, size // 2 - _CHUNK // 2, size - _CHUNK):
                    f.seek(offset)
                    h.update(f.read(_CHUNK))
    except OSError as e:
        raise VideoError(f"{path}: cannot read ({e.strerror or e})") from e
    if len(_FP_MEMO) > 4096:
        _FP_MEMO.clear()
    _FP_MEMO[memo_key] = h.hexdigest()
    return _FP_MEMO[memo_key]
