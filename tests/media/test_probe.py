"""The video check of `validate`/`run`: bad files are named with why, good files of every kind pass."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mtvbench.media.probe import ProbeCache, check_video, check_videos
from tests.support.videogen import write_audio, write_video


@pytest.fixture(scope="module")
def bad_videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    data = write_video(d / "good.mp4", 120, gop=12).read_bytes()
    fast = write_video(d / "fast.mp4", 120, gop=12, faststart=True).read_bytes()
    out = {
        "empty": d / "empty.mp4",
        "truncated": d / "truncated.mp4",  # the index comes last and is cut off
        "truncated_faststart": d / "truncated_faststart.mp4",  # the index promises frames the data lacks
        "cut_in_first_frame": d / "cut_in_first_frame.mp4",
        "text": d / "text.mp4",
        "audio_only": write_audio(d / "audio_only.mp4"),
        "fifo": d / "fifo.mp4",
        "folder": d / "folder.mp4",
        "jpeg_named_mp4": d / "picture.mp4",
        "png_named_mp4": d / "drawing.mp4",
    }
    out["empty"].write_bytes(b"")
    out["truncated"].write_bytes(data[: len(data) // 2])
    out["truncated_faststart"].write_bytes(fast[: int(len(fast) * 0.6)])
    first_packet_end = fast.index(b"mdat") + 4 + 40  # inside the first (key) frame's data
    out["cut_in_first_frame"].write_bytes(fast[:first_packet_end])
    out["text"].write_text("this is a subtitle file, not a video\n" * 20)
    Image.fromarray(np.full((48, 64, 3), 120, np.uint8)).save(out["jpeg_named_mp4"], format="JPEG")
    Image.fromarray(np.full((48, 64, 3), 60, np.uint8)).save(out["png_named_mp4"], format="PNG")
    os.mkfifo(out["fifo"])
    out["folder"].mkdir()
    return out


EXPECTED = {
    "empty": "is empty (0 bytes)",
    "truncated": "cannot be opened as a video",
    "truncated_faststart": "is truncated: its video data ends at",
    "cut_in_first_frame": "cannot be decoded",
    "text": "cannot be opened as a video",
    "audio_only": "has no video stream (streams: audio",
    "fifo": "is not a regular file (a FIFO, device or socket)",
    "folder": "is a folder",
    "jpeg_named_mp4": "is a still image, not a video",
    "png_named_mp4": "is a still image, not a video",
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_bad_video_is_named_with_the_reason(bad_videos: dict[str, Path], kind: str, tmp_path: Path) -> None:
    check = check_video(bad_videos[kind], ProbeCache(tmp_path / "c"))
    assert not check.ok
    assert EXPECTED[kind] in check.problem
    assert str(bad_videos[kind]) not in check.problem  # the caller names the file once


def test_every_kind_of_good_video_passes(videos: dict[str, Path], short_video: Path, tmp_path: Path) -> None:
    checks = check_videos({**videos, "short": short_video}, ProbeCache(tmp_path / "c"))
    assert {k: c.problem for k, c in checks.items() if not c.ok} == {}
    cfr = checks["cfr"]
    assert (cfr.codec, cfr.width, cfr.height, cfr.frames) == ("h264", 160, 120, 96)
    assert cfr.duration_s == pytest.approx(96 / 25, abs=0.05) and cfr.fps == pytest.approx(25, abs=0.5)
    assert checks["mkv_ntsc"].fps == pytest.approx(30000 / 1001, abs=0.1)


def test_verdicts_are_cached_by_content(bad_videos: dict[str, Path], short_video: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "c"
    first = check_video(short_video, ProbeCache(cache_dir))
    assert first.ok and not first.cached
    again = check_video(short_video, ProbeCache(cache_dir))  # a new process: read from disk
    assert again.cached and again.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})
    copy = shutil.copy(short_video, tmp_path / "renamed.mp4")  # same content, other name: same verdict
    assert check_video(Path(copy), ProbeCache(cache_dir)).cached
    bad = check_video(bad_videos["truncated_faststart"], ProbeCache(cache_dir))
    assert check_video(bad_videos["truncated_faststart"], ProbeCache(cache_dir)).problem == bad.problem
    # a file rewritten with other content is checked again
    broken = Path(shutil.copy(short_video, tmp_path / "later_broken.mp4"))
    assert check_video(broken, ProbeCache(cache_dir)).ok
    broken.write_bytes(b"\x00" * 100)
    assert not check_video(broken, ProbeCache(cache_dir)).ok


def test_unwritable_cache_only_costs_speed(short_video: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    assert check_video(short_video, ProbeCache(blocker)).ok
