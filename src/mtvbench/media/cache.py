"""Process-safe on-disk cache of sampled frames.

A video is decoded once per (content fingerprint, :meth:`FrameSettings.key`). An entry is
a directory ``<root>/<key[:2]>/<key>/`` holding ``0000.jpg``, ``0001.jpg``, ... (``.png`` for
lossless settings) and a ``meta.json``. Settings with an authors' script's rule
(``FrameSettings.rule``) are made by :func:`mtvbench.media.authors_frames.script_frames`; the Qwen
script's entry also holds the script's MP4 (``clip.mp4``), which is what ``hf:`` feeds. Other
derived files of a video are entries of the same kind made by :meth:`FrameCache.file_entry`
(:func:`~mtvbench.media.authors_frames.script_clip`): their own key, the same folder layout,
rename and lock.
Entries are written into a temporary directory beside them and renamed into place, so a
reader sees a whole entry or none. A per-key lock file (:func:`mtvbench.ledger.lock.file_lock`)
(``<root>/.locks/<key>.lock``) makes a second process (or thread) wait for the first
decode instead of decoding again. A small in-process LRU keeps recent
:class:`VideoFrames` objects (with their memoised base64) in memory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

from mtvbench.ledger.lock import file_lock
from mtvbench.media.fingerprint import CACHE_VERSION, fingerprint
from mtvbench.media.frames import FrameSettings, VideoFrames, probe, sample_frames

#: Bump when sampling, resizing or encoding changes so that old entries are not reused.
_META = "meta.json"
_CLIP = "clip.mp4"


class FrameCache:
    """Sampled frames per (video content, settings), on disk under ``root`` (``None``: no cache).

    ``stats`` counts ``hits`` (``memory_hits`` + ``disk_hits``), ``misses`` and ``decodes``.
    """

    def __init__(self, root: Path | None, memory_items: int | None = None) -> None:
        self.root = Path(root) if root is not None else None
        #: size of the in-process LRU; by default 8 with a disk cache, 0 without (decode every time)
        self.memory_items = memory_items if memory_items is not None else (8 if self.root else 0)
        self.stats: dict[str, int] = {"hits": 0, "memory_hits": 0, "disk_hits": 0, "misses": 0, "decodes": 0}
        self._lru: OrderedDict[str, VideoFrames] = OrderedDict()
        self._mutex = threading.Lock()

    # ------------------------------------------------------------------ public

    def key(self, path: Path, settings: FrameSettings) -> str:
        return f"{fingerprint(path)}-{settings.key()}-v{CACHE_VERSION}"

    def entry_dir(self, key: str) -> Path | None:
        return None if self.root is None else self.root / key[:2] / key

    def get(self, path: Path, settings: FrameSettings | None = None) -> VideoFrames:
        """Frames of ``path`` for ``settings``: from memory, from disk, or decoded once."""
        path = Path(path)
        settings = settings or FrameSettings()
        key = self.key(path, settings)
        frames = self._memory_get(key)
        if frames is not None:
            self._count("hits", "memory_hits")
            return _at(frames, path)
        entry = self.entry_dir(key)
        if entry is None:
            self._count("misses", "decodes")
            return self._remember(key, _make(path, settings))
        frames = _load(entry, path, settings)
        if frames is None:
            with file_lock(entry.parent.parent / ".locks" / f"{key}.lock"):
                frames = _load(entry, path, settings)  # another process may have finished meanwhile
                if frames is None:
                    self._count("misses", "decodes")
                    frames = _make(path, settings)
                    _store(entry, frames, key)
                    if frames.clip is not None:
                        frames.clip_path = entry / _CLIP
                    return self._remember(key, frames)
        self._count("hits", "disk_hits")
        return self._remember(key, frames)

    def get_indices(self, path: Path, settings: FrameSettings,
                    indices_for: Callable[[int, float], Sequence[int]]) -> VideoFrames:
        """The frames of ``path`` at the indices ``indices_for(total_frames, duration_s)`` picks (``run --sampling
        clip``: the union of the frames of a video's turns), together with any frames of the video decoded
        before under ``settings``: one entry per (video, settings) that grows, so each frame of a video is
        decoded once, and each turn takes its own with :meth:`VideoFrames.select`. A frame already held is not
        decoded again; the first call learns the frame count with an exact probe (demuxed, not decoded)."""
        path = Path(path)
        key = self.key(path, settings)
        entry = self.entry_dir(key)
        lock = file_lock(entry.parent.parent / ".locks" / f"{key}.lock") if entry is not None else nullcontext()
        with lock:
            have = self._memory_get(key) or (_load(entry, path, settings) if entry is not None else None)
            if have is not None:
                total, duration = have.total_frames, have.duration_s
            else:
                info = probe(path)
                total, duration = info.total_frames, info.duration_s
            wanted = sorted({int(i) for i in indices_for(total, duration)})
            held = set(have.indices) if have is not None else set()
            missing = [i for i in wanted if i not in held]
            if not missing:
                self._count("hits", "memory_hits" if self._memory_get(key) is have else "disk_hits")
                return self._remember(key, _at(have, path))
            self._count("misses", "decodes")
            new = sample_frames(path, settings, indices=lambda _total: missing)
            frames = new if have is None else _merged(have, new)
            if entry is not None:
                _store(entry, frames, key)
            return self._remember(key, frames)

    def file_entry(self, key: str, build: Callable[[Path], None]) -> Path:
        """The folder of entry ``key``, made once by ``build(folder)`` if it is missing.

        ``key`` must start with the video's :func:`fingerprint` and end with ``-v<version>``
        (``mtvbench cache`` recognises it then). ``build`` writes into a temporary folder that
        is renamed into place under the key's lock, and must write ``meta.json`` last: a
        folder without it is rebuilt. Needs a disk cache (``root``).
        """
        entry = self.entry_dir(key)
        if entry is None:
            raise ValueError("FrameCache.file_entry needs a cache folder (root is None)")
        if (entry / _META).is_file():
            self._count("hits", "disk_hits")
            return entry
        with file_lock(entry.parent.parent / ".locks" / f"{key}.lock"):
            if (entry / _META).is_file():  # another process made it meanwhile
                self._count("hits", "disk_hits")
                return entry
            self._count("misses", "decodes")
            _publish(entry, build)
        return entry

    def clear_memory(self) -> None:
        with self._mutex:
            self._lru.clear()

    # ------------------------------------------------------------------ internals

    def _count(self, *names: str) -> None:
        with self._mutex:
            for n in names:
                self.stats[n] += 1

    def _memory_get(self, key: str) -> VideoFrames | None:
        with self._mutex:
            frames = self._lru.get(key)
            if frames is not None:
                self._lru.move_to_end(key)
            return frames

    def _remember(self, key: str, frames: VideoFrames) -> VideoFrames:
        if self.memory_items > 0:
            with self._mutex:
                self._lru[key] = frames
                self._lru.move_to_end(key)
                while len(self._lru) > self.memory_items:
                    self._lru.popitem(last=False)
        return frames


def _make(path: Path, settings: FrameSettings) -> VideoFrames:
    """The frames ``settings`` asks for: uniform sampling, or an authors' script's frames."""
    if settings.rule == "uniform":
        return sample_frames(path, settings)
    from mtvbench.media.authors_frames import script_frames  # that module builds on this one

    return script_frames(path, settings)


def _merged(a: VideoFrames, b: VideoFrames) -> VideoFrames:
    """The frames of ``a`` and ``b`` (of one video and settings) in index order, each index once."""
    by_index = {i: (t, j) for i, t, j in zip(a.indices, a.timestamps, a.jpegs)}
    by_index.update({i: (t, j) for i, t, j in zip(b.indices, b.timestamps, b.jpegs)})
    order = sorted(by_index)
    return dataclasses.replace(a, indices=order, timestamps=[by_index[i][0] for i in order],
                               jpegs=[by_index[i][1] for i in order])


def _at(frames: VideoFrames, path: Path) -> VideoFrames:
    """The same frames reported for ``path`` (same content may live under several names)."""
    if frames.video == path:
        return frames
    out = dataclasses.replace(frames, video=path)
    out.__dict__.update({k: v for k, v in frames.__dict__.items() if k in ("_b64", "_images")})
    return out


def _frame_name(i: int, settings: FrameSettings) -> str:
    return f"{i:04d}.{'png' if settings.lossless else 'jpg'}"


def _publish(entry: Path, fill: Callable[[Path], None]) -> None:
    """Let ``fill`` write the entry into a temp dir beside it, then rename it into place (lock held)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        fill(tmp)
        if entry.exists():  # a broken entry (we hold the lock, so nobody is writing it)
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (entry / _META).exists():
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _store(entry: Path, frames: VideoFrames, key: str) -> None:
    """Write the frames' entry (JPEGs, then ``meta.json``)."""

    def fill(tmp: Path) -> None:
        names = [_frame_name(i, frames.settings) for i in range(len(frames.jpegs))]
        for name, image in zip(names, frames.jpegs):
            (tmp / name).write_bytes(image)
        if frames.clip is not None:
            (tmp / _CLIP).write_bytes(frames.clip)
        meta = {
            "key": key,
            "version": CACHE_VERSION,
            "video": str(frames.video),
            "settings": frames.settings.model_dump(mode="json"),
            "indices": frames.indices,
            "timestamps": frames.timestamps,
            "width": frames.width,
            "height": frames.height,
            "source_width": frames.source_width,
            "source_height": frames.source_height,
            "total_frames": frames.total_frames,
            "duration_s": frames.duration_s,
            "files": names,
            "clip": _CLIP if frames.clip is not None else None,
        }
        (tmp / _META).write_text(json.dumps(meta, indent=1))

    _publish(entry, fill)


def _load(entry: Path, path: Path, settings: FrameSettings) -> VideoFrames | None:
    """The stored entry, or ``None`` when it is missing or incomplete."""
    try:
        meta = json.loads((entry / _META).read_text())
        jpegs = [(entry / name).read_bytes() for name in meta["files"]]
        if len(jpegs) != len(meta["indices"]):
            return None
        clip = entry / meta["clip"] if meta.get("clip") else None
        return VideoFrames(
            video=path,
            settings=settings,
            indices=list(meta["indices"]),
            timestamps=list(meta["timestamps"]),
            width=int(meta["width"]),
            height=int(meta["height"]),
            source_width=int(meta["source_width"]),
            source_height=int(meta["source_height"]),
            total_frames=int(meta["total_frames"]),
            duration_s=float(meta["duration_s"]),
            jpegs=jpegs,
            clip=clip.read_bytes() if clip is not None else None,
            clip_path=clip,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


__all__ = ["CACHE_VERSION", "FrameCache", "fingerprint"]
