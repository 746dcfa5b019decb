"""`mtvbench cache info|clear` on a real frame cache and a scene cache."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.ledger.lock import file_lock
from mtvbench.media.cache import FrameCache
from mtvbench.media.cache_admin import clear, info, parse_age, scan
from mtvbench.media.frames import FrameSettings
from tests.support.datasets import write_video


@pytest.fixture
def caches(tmp_path: Path) -> tuple[Path, Path]:
    frames, scenes = tmp_path / "frames", tmp_path / "scenes"
    fc = FrameCache(frames)
    for i, n in enumerate((12, 16)):
        fc.get(write_video(tmp_path / f"v{i}.mp4", n_frames=n), FrameSettings(num_frames=4))
    (frames / "README.txt").write_text("not ours")
    scenes.mkdir()
    (scenes / "v0-0123456789abcdef.json").write_text(json.dumps({"content-t27-m15|all": 3}))
    (scenes / "keep.me").write_text("not ours")
    return frames, scenes


def _age(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def test_info_counts_entries_and_leaves_unknown_names_alone(caches: tuple[Path, Path]) -> None:
    frames, scenes = caches
    fi, si = info("frames", frames), info("scenes", scenes)
    assert fi.entries == 2 and fi.bytes > 0 and fi.unrecognised == ["README.txt"]
    assert si.entries == 1 and si.unrecognised == ["keep.me"]
    r = CliRunner().invoke(app, ["cache", "info", "--cache-dir", str(frames), "--scene-cache", str(scenes)])
    assert r.exit_code == 0, r.output
    assert "frames" in r.output and "2" in r.output and "unrecognised name(s) left alone" in r.output


def test_clear_older_than_and_busy_entries(caches: tuple[Path, Path]) -> None:
    frames, scenes = caches
    entries, _ = scan("frames", frames)
    old, busy = entries
    _age(old.path, 40)
    _age(busy.path, 40)
    keep = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(frames), "--scene-cache", str(scenes),
                                    "--older-than", "60d"])
    assert keep.exit_code == 0 and "frames: removed 0 entries" in keep.output and "2 kept (newer)" in keep.output
    with file_lock(frames / ".locks" / f"{busy.key}.lock"):  # a run is writing this entry right now
        r = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(frames), "--scene-cache", str(scenes),
                                     "--older-than", "30d", "--keep-scenes"])
    assert r.exit_code == 0, r.output
    assert "frames: removed 1 entries" in r.output and "1 skipped (being written by another process)" in r.output
    assert not old.path.exists() and busy.path.exists()
    assert (frames / "README.txt").exists() and (scenes / "v0-0123456789abcdef.json").exists()
    # the remaining entry still serves the cache
    assert FrameCache(frames).get(Path(json.loads((busy.path / "meta.json").read_text())["video"]),
                                  FrameSettings(num_frames=4)).indices


def test_clear_everything_and_dry_run(caches: tuple[Path, Path]) -> None:
    frames, scenes = caches
    dry = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(frames), "--scene-cache", str(scenes),
                                   "--dry-run"])
    assert "frames: would remove 2 entries" in dry.output and len(scan("frames", frames)[0]) == 2
    r = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(frames), "--scene-cache", str(scenes)])
    assert r.exit_code == 0 and "scenes: removed 1 entries" in r.output
    assert scan("frames", frames)[0] == [] and scan("scenes", scenes)[0] == []
    assert (frames / "README.txt").exists() and (scenes / "keep.me").exists()


def test_an_unfinished_write_is_left_to_its_writer(tmp_path: Path) -> None:
    key = "0" * 32 + "-n4-s720-q90-v1"
    tmp = tmp_path / "00" / f".{key}.abc123"
    tmp.mkdir(parents=True)
    (tmp / "0000.jpg").write_bytes(b"partial")
    assert clear("frames", tmp_path).kept == 1 and tmp.exists()
    _age(tmp, 1)
    assert clear("frames", tmp_path).removed == 1 and not tmp.exists()


def test_bad_age_is_a_usage_error(tmp_path: Path) -> None:
    assert parse_age("90m") == 5400 and parse_age("2w") == 14 * 86400
    r = CliRunner().invoke(app, ["cache", "clear", "--cache-dir", str(tmp_path), "--older-than", "soon"])
    assert r.exit_code == 2 and "--older-than" in r.output and "Traceback" not in r.output
