"""``--sampling clip`` frames: :func:`clip_indices`, and the frame cache's union of a video's turns' frames."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtvbench.media import frames as frames_mod
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import FrameSettings, clip_indices, uniform_indices
from tests.support.timed_videos import read_time, write_timed_video


@pytest.mark.parametrize(("total", "duration", "num", "ranges", "share"), [
    (600, 60.0, 16, [(10.0, 20.0)], 0.5),
    (600, 60.0, 16, [(10.0, 20.0), (40.0, 41.0)], 0.25),
    (600, 60.0, 16, [(59.5, 60.0)], 0.5),            # a range smaller than its share: all of its frames
    (600, 60.0, 128, [(0.0, 60.0)], 0.5),             # the whole video
    (40, 4.0, 128, [(1.0, 2.0)], 0.5),               # fewer frames than the budget: every frame once
    (36000, 1200.0, 128, [(186.0, 235.0)], 1.0),
    (36000, 1200.0, 128, [(186.0, 235.0)], 0.0),
])
def test_share_inside_the_ranges_same_total_sorted_no_repeats(total: int, duration: float, num: int,
                                                              ranges: list[tuple[float, float]], share: float) -> None:
    got = clip_indices(total, duration, num, ranges, share)
    assert got == sorted(set(got)) and len(got) == min(num, total)
    assert all(0 <= i < total for i in got)
    inside = {i for a, b in ranges for i in range(total) if a <= i * duration / total <= b + duration / total}
    assert sum(i in inside for i in got) >= min(len(inside), round(share * min(num, total)))
    # the frames outside the ranges are uniform frames (shared by every turn of the video)
    assert {i for i in got if i not in inside} <= set(uniform_indices(total, num))


def test_no_range_is_uniform() -> None:
    assert clip_indices(600, 60.0, 16, [], 0.5) == uniform_indices(600, 16)


def test_union_is_decoded_once_and_each_turn_selects_its_frames(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    video = write_timed_video(tmp_path / "v.mp4", 30)
    settings = FrameSettings(num_frames=8, clip_share=0.5)
    turns = [[(5.0, 8.0)], [(5.0, 8.0), (20.0, 22.0)], []]
    decoded: list[list[int]] = []
    real = frames_mod._sample

    def counting(path, s, rule, rgb):  # noqa: ANN001, ANN202 - records which frames each decode asks for
        out = real(path, s, rule, rgb)
        decoded.append(list(out.indices))
        return out

    monkeypatch.setattr(frames_mod, "_sample", counting)
    cache = FrameCache(tmp_path / "cache")
    union = cache.get_indices(video, settings,
                              lambda t, d: sorted({i for r in turns for i in clip_indices(t, d, 8, r, 0.5)}))
    assert len(decoded) == 1
    for ranges in turns:
        turn = union.select(clip_indices(union.total_frames, union.duration_s, 8, ranges, 0.5))
        times = [read_time(j) for j in turn.jpegs]
        assert times == pytest.approx(turn.timestamps, abs=0.051)  # the frames show the times recorded
        assert len(turn) == 8 and sum(any(a <= t <= b for a, b in ranges) for t in times) >= (4 if ranges else 0)
    # asked again (a new process: memory empty) for frames it holds: nothing decoded; for a new range: only those
    cache2 = FrameCache(tmp_path / "cache")
    cache2.get_indices(video, settings, lambda t, d: union.indices)
    assert len(decoded) == 1
    more = cache2.get_indices(video, settings, lambda t, d: clip_indices(t, d, 8, [(12.0, 13.0)], 0.5))
    assert len(decoded) == 2 and not set(decoded[1]) & set(union.indices)
    assert set(union.indices) < set(more.indices)


def test_clip_frames_have_their_own_cache_key() -> None:
    assert FrameSettings().key() == "n128-m720-q90"  # uniform: the key of every existing entry and run
    assert FrameSettings(clip_share=0.5).key() == "n128-m720-q90-clip0.5"
    assert FrameSettings(clip_share=0.25).key() != FrameSettings(clip_share=0.5).key()
