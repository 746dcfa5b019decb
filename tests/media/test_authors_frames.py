"""The authors' scripts' frame rules, the Qwen script's MP4 and the InternVL tiles, on generated videos."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from mtvbench.errors import OutputError
from mtvbench.media.authors_frames import (
    DECORD_RESIZE,
    ScriptClip,
    internvl_script_frames,
    internvl_script_indices,
    qwen_script_indices,
    qwen_script_size,
    script_bit_rate,
    script_clip,
    script_clip_key,
    write_script_mp4,
    writer_size,
)
from mtvbench.media.cache import FrameCache
from mtvbench.media.frames import FrameSettings, VideoError, reference_frames, sample_rgb, uniform_indices

#: mean absolute difference (0-255) between the clip's decoded frames and the frames written, on the
#: test pattern (sharp bars, 100x74, mpeg4 at OpenCV's bit rate); measured 5.10
MP4_MAD_BOUND = 7.0


# ---------------------------------------------------------------------------- index rules


@pytest.mark.parametrize(
    ("n", "k", "expected"),
    [
        (10, 4, [0, 3, 6, 9]),  # linspace gives whole numbers
        (11, 4, [0, 3, 6, 10]),  # 3.33, 6.67 truncated (rounding would give 7)
        (8, 3, [0, 3, 7]),  # 3.5 truncated (NumPy's rounding would give 4)
        (5, 8, [0, 1, 2, 3, 4]),  # n < k: every frame
        (6, 6, [0, 1, 2, 3, 4, 5]),  # n == k: every frame
    ],
)
def test_qwen_indices_by_hand(n: int, k: int, expected: list[int]) -> None:
    assert qwen_script_indices(n, k) == expected


def test_qwen_indices_at_128() -> None:
    assert qwen_script_indices(128) == list(range(128))
    assert qwen_script_indices(100) == list(range(100))
    # 129 frames: i * 128/127 = i + i/127 truncates to i, except the last (exactly 128)
    assert qwen_script_indices(129) == [*range(127), 128]
    # 385 frames (odd): step 384/127; index 1 is 3.02 -> 3, index 2 is 6.05 -> 6, the last is 384
    idx = qwen_script_indices(385)
    assert (idx[:3], idx[-1], len(idx)) == ([0, 3, 6], 384, 128)
    # the count: for 384 frames, 63 of the 128 indices differ by one from mtvbench's rounding
    diffs = [a - b for a, b in zip(qwen_script_indices(384), uniform_indices(384, 128), strict=True)]
    assert sum(d != 0 for d in diffs) == 63 and set(diffs) == {0, -1}


@pytest.mark.parametrize(
    ("n", "fps", "k", "expected"),
    [
        (9, 1.0, 4, [1, 3, 5, 7]),  # segments of 2 frames: their middles
        (10, 1.0, 4, [1, 3, 5, 8]),  # seg 2.25; round(4.5) is 4 (halves to even), round(6.75) is 7
        (100, 12.0, 8, [6, 18, 31, 43, 56, 68, 80, 93]),  # seg 12.375
        (50, 0.00001, 4, [0, 0, 0, 1]),  # the +-100000 s bound: round(100000 * fps) = 1 is the last index
    ],
)
def test_internvl_indices_by_hand(n: int, fps: float, k: int, expected: list[int]) -> None:
    assert internvl_script_indices(n, fps, k) == expected


def test_internvl_indices_short_and_exact_videos() -> None:
    short = internvl_script_indices(100, 12.0)  # fewer frames than 128: still 128, some repeated
    assert len(short) == 128 and short[:8] == [0, 1, 2, 2, 3, 4, 5, 5]
    assert len(set(short)) == 99  # 29 repeats; frame 99 (the last) is never taken
    exact = internvl_script_indices(128, 30.0)  # n == k: seg 127/128, so neither 127 nor all frames
    assert (len(exact), exact[0], exact[-1]) == (128, 0, 126)


@pytest.mark.parametrize("bad", [(0, 4), (4, 0)])
def test_index_rules_reject_empty(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match=rf"need n >= 1 and k >= 1, got n={bad[0]}, k={bad[1]}"):
        qwen_script_indices(*bad)
    with pytest.raises(ValueError, match=rf"need n >= 1 and k >= 1, got n={bad[0]}, k={bad[1]}"):
        internvl_script_indices(bad[0], 25.0, bad[1])


# ---------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ((1280, 720), (720, 405)),
        ((1920, 1080), (720, 405)),
        ((720, 1280), (405, 720)),  # portrait
        ((721, 400), (720, 399)),  # 399.44 truncated
        ((1000, 1000), (720, 720)),
        ((720, 480), (720, 480)),  # exactly 720 is not more than 720: kept
        ((720, 720), (720, 720)),
        ((480, 270), (480, 270)),  # smaller: kept (never upscaled)
    ],
)
def test_qwen_size(src: tuple[int, int], expected: tuple[int, int]) -> None:
    assert qwen_script_size(*src) == expected


def test_writer_size_and_bit_rate() -> None:
    assert writer_size(720, 405) == (720, 404)  # OpenCV drops the odd last row
    assert writer_size(405, 720) == (404, 720)
    assert writer_size(480, 270) == (480, 270)
    assert script_bit_rate(480, 270) == 3_888_000  # 15*480*270, plus half of it twice
    assert script_bit_rate(101, 75) == 113_625 + 2 * 56_812  # odd base: the halves are truncated


# ---------------------------------------------------------------------------- the clip


def _clip_stream(path: Path) -> dict[str, object]:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return {"codec": s.codec_context.name, "tag": s.codec_tag, "size": (s.codec_context.width,
                                                                          s.codec_context.height),
                "fps": s.average_rate, "frames": sum(1 for _ in c.decode(s))}


def test_script_mp4(cfr_video: Path, tmp_path: Path) -> None:
    clip = write_script_mp4(cfr_video, tmp_path / "out" / "clip.mp4", frames=16, max_side=100)
    want = qwen_script_indices(96, 16)
    assert clip.indices == want
    assert (clip.source_frames, clip.source_size, clip.resized_size, clip.size) == (96, (160, 120), (100, 75),
                                                                                     (100, 74))
    assert (clip.frame_count, clip.fps, clip.codec) == (16, 15, "mpeg4")
    assert clip.bytes == clip.path.stat().st_size > 0
    assert _clip_stream(clip.path) == {"codec": "mpeg4", "tag": "mp4v", "size": (100, 74), "fps": 15, "frames": 16}
    assert not [p for p in clip.path.parent.iterdir() if p.name != "clip.mp4"]  # no temporary file left

    # the clip holds the sampled frames, in order, close to what was written
    written = sample_rgb(cfr_video, lambda n: qwen_script_indices(n, 16),
                         FrameSettings(size=(100, 75), interpolation=DECORD_RESIZE)).frames
    decoded = [f.to_ndarray(format="rgb24").astype(int) for f in reference_frames(clip.path)]
    diffs = [[float(np.abs(d - w[:74].astype(int)).mean()) for w in written] for d in decoded]
    assert [int(np.argmin(row)) for row in diffs] == list(range(16))
    assert float(np.mean([row[k] for k, row in enumerate(diffs)])) < MP4_MAD_BOUND


def test_script_mp4_short_portrait_video(portrait_video: Path, tmp_path: Path) -> None:
    clip = write_script_mp4(portrait_video, tmp_path / "p.mp4", frames=16, max_side=50)
    assert clip.indices == list(range(10))  # 10 frames < 16: every frame
    assert (clip.resized_size, clip.size, clip.frame_count) == ((30, 50), (30, 50), 10)
    assert _clip_stream(clip.path)["size"] == (30, 50)


def test_script_mp4_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "notavideo.mp4"
    bad.write_text("hello")
    with pytest.raises(VideoError, match="notavideo.mp4"):
        write_script_mp4(bad, tmp_path / "clip.mp4")
    assert not (tmp_path / "clip.mp4").exists()


def test_script_mp4_unwritable_destination(cfr_video: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="file"):
        write_script_mp4(cfr_video, tmp_path / "file" / "clip.mp4", frames=4, max_side=64)


def test_script_clip_is_cached(cfr_video: Path, tmp_path: Path) -> None:
    cache = FrameCache(tmp_path / "cache")
    first = script_clip(cfr_video, cache, frames=16, max_side=100)
    assert cache.stats["decodes"] == 1 and cache.stats["hits"] == 0
    assert first.path.is_relative_to(tmp_path / "cache") and first.path.is_file()
    second = script_clip(cfr_video, cache, frames=16, max_side=100)
    assert cache.stats["decodes"] == 1 and cache.stats["hits"] == 1
    assert second == first and isinstance(second, ScriptClip)
    # another copy of the same content shares the entry; another max side is another entry
    copy = tmp_path / "copy.mp4"
    copy.write_bytes(cfr_video.read_bytes())
    assert script_clip(copy, cache, frames=16, max_side=100).path == first.path
    other = script_clip(cfr_video, cache, frames=16, max_side=64)
    assert other.path != first.path and other.size == (64, 48)
    assert script_clip_key(cfr_video, 16, 100) != script_clip_key(cfr_video, 16, 64)
    assert cache.stats["decodes"] == 2


def test_script_clip_needs_a_cache_folder(cfr_video: Path) -> None:
    with pytest.raises(ValueError, match="cache folder"):
        script_clip(cfr_video, FrameCache(None), frames=4)


# ---------------------------------------------------------------------------- InternVL tiles


def test_internvl_tiles(cfr_video: Path) -> None:
    d = internvl_script_frames(cfr_video, frames=8, input_size=32)
    assert d.indices == internvl_script_indices(96, 25.0, 8)
    assert (d.width, d.height, len(d.frames)) == (32, 32, 8)
    ref = [f.to_image() for f in reference_frames(cfr_video)]
    for tile, i in zip(d.frames, d.indices, strict=True):
        expected = np.asarray(ref[i].resize((32, 32), Image.Resampling.BICUBIC))
        assert np.array_equal(tile, expected)


def test_internvl_tiles_short_video_repeat(short_video: Path) -> None:
    d = internvl_script_frames(short_video, frames=16, input_size=16)
    assert len(d.frames) == 16 and len(set(d.indices)) < 16
    first = d.indices.index(d.indices[1])
    assert all(np.array_equal(d.frames[j], d.frames[first]) for j, i in enumerate(d.indices) if i == d.indices[1])


def test_script_clip_entry_is_a_frame_cache_entry(cfr_video: Path, tmp_path: Path) -> None:
    from mtvbench.media.cache_admin import clear, scan

    root = tmp_path / "cache"
    clip = script_clip(cfr_video, FrameCache(root), frames=4, max_side=64)
    entries, unknown = scan("frames", root)
    assert [e.path for e in entries] == [clip.path.parent] and unknown == []
    assert clear("frames", root).removed == 1 and not clip.path.exists()


# ---------------------------------------------------------------------------- a run's frames (FrameSettings.rule)


def _decoded(images: list[bytes]) -> list[np.ndarray]:
    import io

    return [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in images]


def test_qwen_script_frames_through_the_frame_cache(cfr_video: Path, tmp_path: Path) -> None:
    settings = FrameSettings(num_frames=16, max_side=100, rule="qwen-script")
    cache = FrameCache(tmp_path / "cache")
    frames = cache.get(cfr_video, settings)
    clip = write_script_mp4(cfr_video, tmp_path / "clip.mp4", frames=16, max_side=100)
    assert frames.clip == clip.path.read_bytes()  # the script's MP4, byte for byte as write_script_mp4 makes it
    assert frames.clip_path is not None and frames.clip_path.read_bytes() == frames.clip
    assert frames.indices == clip.indices and (frames.width, frames.height) == clip.size
    assert (frames.total_frames, frames.source_width, frames.source_height) == (96, 160, 120)
    # the images are the MP4's own frames, every one in order: exact as PNG, JPEG at the run's quality (the
    # sharp test pattern loses about 4.5 per channel to JPEG 90)
    with av.open(str(clip.path)) as c:
        mp4 = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    images = _decoded(frames.jpegs)
    assert len(images) == len(mp4) == 16 and images[0].shape == (74, 100, 3)
    assert all(np.abs(a.astype(int) - b).mean() < MP4_MAD_BOUND for a, b in zip(images, mp4, strict=True))
    png = FrameCache(None).get(cfr_video, settings.model_copy(update={"lossless": True}))
    assert all(np.array_equal(a, b) for a, b in zip(_decoded(png.jpegs), mp4, strict=True))
    # read back from disk: the same, the clip in the entry; another rule or plain sampling is another entry
    again = FrameCache(tmp_path / "cache").get(cfr_video, settings)
    assert (again.clip, again.clip_path, again.jpegs, again.indices) == (frames.clip, frames.clip_path, frames.jpegs,
                                                                         frames.indices)
    uniform = cache.get(cfr_video, FrameSettings(num_frames=16, max_side=100))
    assert uniform.clip is None and cache.key(cfr_video, settings) != cache.key(cfr_video, uniform.settings)
    assert settings.key() == "n16-m100-q90-qwen-script1"
    # without a cache folder the clip travels in memory
    memory = FrameCache(None).get(cfr_video, settings)
    assert memory.clip == frames.clip and memory.clip_path is None


def test_internvl_script_frames_are_the_scripts_tiles(cfr_video: Path, tmp_path: Path) -> None:
    exact = FrameSettings(num_frames=8, size=(32, 32), rule="internvl-script", lossless=True)
    frames = FrameCache(tmp_path / "cache").get(cfr_video, exact)
    tiles = internvl_script_frames(cfr_video, frames=8, input_size=32)
    assert frames.indices == tiles.indices and (frames.width, frames.height) == (32, 32)
    assert frames.settings.media_type == "image/png" and frames.data_urls()[0].startswith("data:image/png;base64,")
    assert all(np.array_equal(a, b) for a, b in zip(_decoded(frames.jpegs), tiles.frames, strict=True))  # exact
    stored = FrameCache(tmp_path / "cache").get(cfr_video, exact)
    assert stored.jpegs == frames.jpegs and frames.clip is None
    served = FrameCache(tmp_path / "cache").get(cfr_video, exact.model_copy(update={"lossless": False}))
    assert served.jpegs[0][:2] == b"\xff\xd8" and served.data_urls()[0].startswith("data:image/jpeg;base64,")
    assert exact.key() == "n8-32x32-q90-internvl-script1-png"
    assert served.settings.key() == "n8-32x32-q90-internvl-script1"


@pytest.mark.parametrize(("rule", "size", "max_side", "match"), [
    ("qwen-script", (448, 448), 720, "longer side"),
    ("internvl-script", None, 720, "square"),
    ("internvl-script", (448, 400), None, "square"),
])
def test_script_rules_check_their_size(rule: str, size: tuple[int, int] | None, max_side: int | None,
                                       match: str) -> None:
    with pytest.raises(ValueError, match=match):
        FrameSettings(rule=rule, size=size, max_side=max_side)  # type: ignore[arg-type]
