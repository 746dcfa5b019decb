"""Stages 1 and 4 on synthetic videos with known cuts, a blurred stretch and a frozen stretch."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtvbench.construct.clipframes import sample_clip_frames, sample_ranges_frames
from mtvbench.construct.stages.keyframes import KeyFrameSettings, extract_keyframes
from mtvbench.construct.stages.split import SplitSettings, split_video
from tests.support.scene_videos import FPS, Scene, write_scenes

FRAME = 1 / FPS


def test_split_finds_hard_cuts_within_one_frame(scene_video: Path) -> None:
    r = split_video("three", scene_video)
    assert r.total_frames == 150
    assert r.duration_s == pytest.approx(15.0)
    assert len(r.clips) == 3
    for clip, (start, end) in zip(r.clips, [(0.0, 5.0), (5.0, 10.0), (10.0, 15.0)]):
        assert abs(clip.start_s - start) <= FRAME + 1e-9
        assert abs(clip.end_s - end) <= FRAME + 1e-9
    # clips tile the video exactly
    assert r.clips[0].start_frame == 0 and r.clips[-1].end_frame == 150
    assert all(a.end_frame == b.start_frame for a, b in zip(r.clips, r.clips[1:]))


def test_split_other_cut_positions_and_adaptive(tmp_path: Path) -> None:
    path = write_scenes(tmp_path / "cuts.mp4", [Scene(37, hue=10), Scene(41, hue=100, sat=150),
                                                 Scene(30, hue=40, sat=60, val=(140, 220))])
    for detector in ("content", "adaptive"):
        r = split_video("cuts", path, SplitSettings(detector=detector))
        starts = [c.start_frame for c in r.clips]
        assert len(starts) == 3, (detector, starts)
        assert abs(starts[1] - 37) <= 1 and abs(starts[2] - 78) <= 1


def test_keyframes_drop_blurred_and_frozen_frames(scene_video: Path, tmp_path: Path) -> None:
    kf = extract_keyframes("three", scene_video, tmp_path / "keyframes")
    assert kf.sampled == 30  # 15 s at 2 FPS, one decode pass
    kept = [f.time_s for f in kf.frames]
    blurred = [t for t in (i * 0.5 for i in range(30)) if 6.0 <= t < 7.5]  # scene 1 frames 10-24
    frozen = [t for t in (i * 0.5 for i in range(30)) if 11.0 <= t < 13.0]  # scene 2 frames 10-29
    assert blurred and all(t in kf.dropped_blurry for t in blurred)
    assert not set(kf.dropped_blurry) - set(blurred), "a sharp frame was dropped as blurry"
    assert 11.0 in kept  # the first frozen frame differs from the previous kept one
    assert all(t in kf.dropped_similar for t in frozen[1:])
    assert sum(1 for t in kept if 11.0 <= t < 13.0) == 1
    # sharp, changing frames are kept
    assert {0.0, 0.5, 1.0, 10.0, 13.5} <= set(kept)
    for f in kf.frames:
        assert (tmp_path / f.file).is_file()
    # the default threshold is 0.3 x the median sharpness of the 30 samples: most kept frames are far above it
    assert 0 < kf.sharpness_threshold < min(f.sharpness for f in kf.frames)
    assert sorted(f.sharpness for f in kf.frames)[len(kf.frames) // 2] > 2 * kf.sharpness_threshold


def test_keyframes_absolute_threshold_and_similarity(scene_video: Path, tmp_path: Path) -> None:
    none_sharp = extract_keyframes("three", scene_video, tmp_path / "a", KeyFrameSettings(sharpness_abs=1e9))
    assert none_sharp.frames == [] and len(none_sharp.dropped_blurry) == 30
    everything = extract_keyframes("three", scene_video, tmp_path / "b",
                                   KeyFrameSettings(sharpness_abs=0.0, similarity=1.01))
    assert len(everything.frames) == 30


def test_clip_frames_come_from_the_range_only(scene_video: Path) -> None:
    fr = sample_clip_frames(scene_video, 5.0, 10.0, 8)
    assert len(fr) == 8
    assert all(50 <= i < 100 for i in fr.indices)
    assert fr.indices[0] == 50 and fr.indices[-1] == 99
    assert fr.timestamps[0] == pytest.approx(5.0)
    multi = sample_ranges_frames(scene_video, [(0.0, 5.0), (10.0, 15.0)], 6)
    assert len(multi) == 6
    assert all(i < 50 or i >= 100 for i in multi.indices)
    assert sum(1 for i in multi.indices if i < 50) == 3
