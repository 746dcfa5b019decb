"""The frame cache: fingerprints, hits without decoding, and safety across processes."""

from __future__ import annotations

import json
import multiprocessing as mp
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mtvbench.media import cache as cache_mod
from mtvbench.media.cache import CACHE_VERSION, FrameCache, fingerprint
from mtvbench.media.frames import FrameSettings, VideoError, VideoFrames, sample_frames

SETTINGS = FrameSettings(num_frames=6, max_side=64)


# ---------------------------------------------------------------------------- fingerprint


def test_fingerprint_is_content_based(tmp_path: Path, cfr_video: Path) -> None:
    fp = fingerprint(cfr_video)
    assert len(fp) == 32 and fp == fingerprint(cfr_video)
    copy = tmp_path / "renamed copy.mp4"
    shutil.copy(cfr_video, copy)
    assert fingerprint(copy) == fp
    data = bytearray(copy.read_bytes())
    data[len(data) // 3] ^= 0xFF
    changed = tmp_path / "changed.mp4"
    changed.write_bytes(bytes(data))
    assert fingerprint(changed) != fp


def test_fingerprint_large_file_chunks(tmp_path: Path) -> None:
    size = 5 << 20
    a, b, c = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin"
    base = bytearray(size)
    a.write_bytes(bytes(base))
    base[size // 2] = 1  # inside the middle chunk
    b.write_bytes(bytes(base))
    base[size // 2] = 0
    base[size // 4] = 1  # between the chunks: not sampled, by design
    c.write_bytes(bytes(base))
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(c)
    (tmp_path / "d.bin").write_bytes(bytes(size + 1))
    assert fingerprint(tmp_path / "d.bin") != fingerprint(a)  # the size is part of it


def test_fingerprint_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="nope.mp4"):
        fingerprint(tmp_path / "nope.mp4")


# ---------------------------------------------------------------------------- hits and misses


def test_disk_cache_roundtrip(tmp_path: Path, cfr_video: Path) -> None:
    cache = FrameCache(tmp_path / "cache")
    first = cache.get(cfr_video, SETTINGS)
    assert cache.stats["decodes"] == 1 and cache.stats["misses"] == 1
    again = cache.get(cfr_video, SETTINGS)
    assert again is first and cache.stats["memory_hits"] == 1 and cache.stats["decodes"] == 1
    entry = cache.entry_dir(cache.key(cfr_video, SETTINGS))
    assert entry is not None and (entry / "meta.json").exists()
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["version"] == CACHE_VERSION and meta["indices"] == first.indices
    assert sorted(p.name for p in entry.glob("*.jpg")) == meta["files"]
    assert first == sample_frames(cfr_video, SETTINGS)  # same as decoding directly
    # no temp dirs left behind
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]


def test_disk_hit_does_not_decode(tmp_path: Path, cfr_video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    first = FrameCache(root).get(cfr_video, SETTINGS)
    monkeypatch.setattr(cache_mod, "sample_frames", lambda *a, **k: pytest.fail("decoded on a hit"))
    fresh = FrameCache(root)  # a new process would start like this: empty memory
    hit = fresh.get(cfr_video, SETTINGS)
    assert fresh.stats == {"hits": 1, "memory_hits": 0, "disk_hits": 1, "misses": 0, "decodes": 0}
    assert hit == first
    assert hit.b64() is hit.b64()


def test_same_content_other_path(tmp_path: Path, cfr_video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    cache = FrameCache(root)
    first = cache.get(cfr_video, SETTINGS)
    monkeypatch.setattr(cache_mod, "sample_frames", lambda *a, **k: pytest.fail("decoded on a hit"))
    copy = tmp_path / "copy.mp4"
    shutil.copy(cfr_video, copy)
    other = cache.get(copy, SETTINGS)  # memory hit
    assert other.video == copy and other.jpegs == first.jpegs and first.video == cfr_video
    assert FrameCache(root).get(copy, SETTINGS).video == copy  # disk hit


def test_settings_are_part_of_the_key(tmp_path: Path, cfr_video: Path) -> None:
    cache = FrameCache(tmp_path / "cache")
    a = cache.get(cfr_video, SETTINGS)
    b = cache.get(cfr_video, FrameSettings(num_frames=6, max_side=32))
    c = cache.get(cfr_video, FrameSettings(num_frames=6, size=(48, 48)))
    assert cache.stats["decodes"] == 3
    assert (a.width, b.width, c.width) == (64, 32, 48)


def test_no_root_decodes_every_time(cfr_video: Path) -> None:
    cache = FrameCache(None)
    a = cache.get(cfr_video, SETTINGS)
    b = cache.get(cfr_video, SETTINGS)
    assert cache.stats["decodes"] == 2 and a == b and cache.entry_dir("x") is None


def test_lru_is_bounded(tmp_path: Path, cfr_video: Path) -> None:
    cache = FrameCache(tmp_path / "cache", memory_items=2)
    for n in (2, 3, 4):
        cache.get(cfr_video, FrameSettings(num_frames=n, max_side=32))
    cache.get(cfr_video, FrameSettings(num_frames=2, max_side=32))  # evicted: read from disk
    assert cache.stats["disk_hits"] == 1 and cache.stats["memory_hits"] == 0
    cache.get(cfr_video, FrameSettings(num_frames=4, max_side=32))
    assert cache.stats["memory_hits"] == 1


def test_broken_entry_is_rebuilt(tmp_path: Path, cfr_video: Path) -> None:
    root = tmp_path / "cache"
    first = FrameCache(root).get(cfr_video, SETTINGS)
    cache = FrameCache(root)
    entry = cache.entry_dir(cache.key(cfr_video, SETTINGS))
    assert entry is not None
    (entry / "0003.jpg").unlink()
    again = cache.get(cfr_video, SETTINGS)
    assert cache.stats["decodes"] == 1 and again == first and (entry / "0003.jpg").exists()


def test_errors_are_not_cached(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 1000)
    cache = FrameCache(tmp_path / "cache")
    for _ in range(2):
        with pytest.raises(VideoError, match="bad.mp4"):
            cache.get(bad, SETTINGS)
    assert cache.stats["decodes"] == 2


# ---------------------------------------------------------------------------- concurrency


def _slow_decode(path: Path, settings: FrameSettings) -> VideoFrames:
    time.sleep(0.5)  # make sure the other worker arrives while this one decodes
    return sample_frames(path, settings)


def _worker(root: str, video: str, barrier: Any, out: Any) -> None:
    cache_mod.sample_frames = _slow_decode
    cache = FrameCache(Path(root))
    barrier.wait()
    frames = cache.get(Path(video), SETTINGS)
    out.put((dict(cache.stats), frames.jpegs, frames.indices))


def test_two_processes_decode_once(tmp_path: Path, cfr_video: Path) -> None:
    try:
        ctx = mp.get_context("fork")
    except ValueError:
        pytest.skip("needs fork")
    root = tmp_path / "cache"
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(root), str(cfr_video), barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    stats = [r[0] for r in results]
    assert sum(s["decodes"] for s in stats) == 1
    assert sum(s["disk_hits"] for s in stats) == 1
    assert results[0][1] == results[1][1] and results[0][2] == results[1][2]
    assert results[0][1] == sample_frames(cfr_video, SETTINGS).jpegs
    assert len(list(root.glob("*/*/meta.json"))) == 1


def test_two_threads_decode_once(tmp_path: Path, cfr_video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_mod, "sample_frames", _slow_decode)
    caches = [FrameCache(tmp_path / "cache"), FrameCache(tmp_path / "cache")]
    got: list[VideoFrames] = []
    threads = [threading.Thread(target=lambda c=c: got.append(c.get(cfr_video, SETTINGS))) for c in caches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(c.stats["decodes"] for c in caches) == 1
    assert got[0] == got[1]
