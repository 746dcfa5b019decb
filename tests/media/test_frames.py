"""Exact uniform frame sampling: index math, sizes, exactness on awkward files, errors."""

from __future__ import annotations

import functools
import io
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from av.video.reformatter import VideoReformatter
from PIL import Image

from mtvbench.media import frames as fr
from mtvbench.media.frames import (
    FrameSettings,
    VideoError,
    VideoFrames,
    encode_frame,
    probe,
    reference_frames,
    sample_frames,
    sample_rgb,
    uniform_indices,
)

SMALL = FrameSettings(num_frames=17, max_side=None)


@functools.lru_cache(maxsize=64)
def reference(path: Path, settings: FrameSettings) -> tuple[list[bytes], list[float]]:
    """JPEG and time (s, from the first frame) of every frame of a full sequential decode."""
    frames = list(reference_frames(path))
    t0 = frames[0].time
    return [encode_frame(f, settings) for f in frames], [f.time - t0 for f in frames]


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the sampler falls back to the sequential decode."""

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("fell back to the sequential decode")

    monkeypatch.setattr(fr, "_sequential", boom)


# ---------------------------------------------------------------------------- indices


@pytest.mark.parametrize(
    ("total", "num", "expected"),
    [
        (10, 3, [0, 4, 9]),  # linspace gives 4.5: NumPy rounds halves to even
        (11, 3, [0, 5, 10]),
        (100, 5, [0, 25, 50, 74, 99]),  # 24.75 -> 25, 74.25 -> 74
        (7, 7, list(range(7))),
        (5, 10, list(range(5))),
        (1, 4, [0]),
        (50, 1, [0]),
        (8, 2, [0, 7]),
    ],
)
def test_uniform_indices(total: int, num: int, expected: list[int]) -> None:
    assert uniform_indices(total, num) == expected


def test_uniform_indices_properties() -> None:
    for total in range(1, 300, 7):
        for num in (1, 2, 3, 16, 128):
            idx = uniform_indices(total, num)
            assert len(idx) == min(total, num)
            assert idx == sorted(set(idx))
            assert idx[0] == 0
            if num > 1:
                assert idx[-1] == total - 1


@pytest.mark.parametrize(("total", "num"), [(0, 3), (5, 0)])
def test_uniform_indices_rejects(total: int, num: int) -> None:
    with pytest.raises(ValueError, match=r"(total|num) must be >= 1, got 0"):
        uniform_indices(total, num)


# ---------------------------------------------------------------------------- settings and sizes


@pytest.mark.parametrize(
    ("settings", "src", "expected"),
    [
        (FrameSettings(), (1920, 1080), (720, 405)),
        (FrameSettings(), (1080, 1920), (405, 720)),
        (FrameSettings(), (640, 480), (640, 480)),  # never upscale
        (FrameSettings(max_side=320), (48, 80), (48, 80)),
        (FrameSettings(max_side=40), (48, 80), (24, 40)),
        (FrameSettings(max_side=None), (3840, 2160), (3840, 2160)),
        (FrameSettings(size=(448, 448)), (1920, 1080), (448, 448)),
        (FrameSettings(size=(728, 728), max_side=100), (64, 48), (728, 728)),  # size overrides max_side
    ],
)
def test_output_size(settings: FrameSettings, src: tuple[int, int], expected: tuple[int, int]) -> None:
    assert settings.output_size(*src) == expected


def test_output_size_pixel_aspect() -> None:
    # 720x480 with 32:27 pixels displays as 853x480
    assert FrameSettings(max_side=None).output_size(720, 480, Fraction(32, 27)) == (853, 480)


def test_settings_key_and_validation() -> None:
    keys = {
        FrameSettings().key(),
        FrameSettings(num_frames=32).key(),
        FrameSettings(max_side=None).key(),
        FrameSettings(size=(448, 448)).key(),
        FrameSettings(jpeg_quality=80).key(),
    }
    assert len(keys) == 5
    assert FrameSettings().key() == "n128-m720-q90"
    assert FrameSettings(size=(448, 448), num_frames=32).key() == "n32-448x448-q90"
    # a bilinear resize is another entry; the default key is unchanged, so old caches stay valid
    assert FrameSettings(interpolation="BILINEAR").key() == "n128-m720-q90-bilinear"
    with pytest.raises(ValueError, match=r"num_frames\n  Input should be greater than or equal to 1"):
        FrameSettings(num_frames=0)
    with pytest.raises(ValueError, match=r"size: width and height must be 1 to 8192 px, got \(0, 10\)"):
        FrameSettings(size=(0, 10))
    with pytest.raises(ValueError, match="Instance is frozen"):
        FrameSettings().num_frames = 3  # type: ignore[misc]  # frozen


def _jpeg_size(b: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(b)).size


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (FrameSettings(num_frames=4), (160, 120)),  # 720 > 160: kept
        (FrameSettings(num_frames=4, max_side=64), (64, 48)),
        (FrameSettings(num_frames=4, size=(40, 40)), (40, 40)),
    ],
)
def test_sample_sizes(cfr_video: Path, settings: FrameSettings, expected: tuple[int, int]) -> None:
    vf = sample_frames(cfr_video, settings)
    assert (vf.width, vf.height) == expected
    assert (vf.source_width, vf.source_height) == (160, 120)
    assert {_jpeg_size(j) for j in vf.jpegs} == {expected}
    assert {im.size for im in vf.images()} == {expected}


def test_portrait_aspect(portrait_video: Path) -> None:
    vf = sample_frames(portrait_video, FrameSettings(num_frames=3, max_side=40))
    assert (vf.width, vf.height) == (24, 40)


# ---------------------------------------------------------------------------- exactness


def test_awkward_files_are_awkward(videos: dict[str, Path]) -> None:
    """Guard: the generated files really have the properties the exactness tests rely on."""

    def packets(p: Path) -> tuple[av.video.stream.VideoStream, list[av.Packet]]:
        c = av.open(str(p))
        s = c.streams.video[0]
        return s, [pk for pk in c.demux(s) if pk.size]

    s, pk = packets(videos["vfr"])
    steps = np.diff(sorted(p.pts for p in pk))
    assert len(set(steps.tolist())) > 10
    s, pk = packets(videos["mkv_ntsc"])
    assert s.time_base == Fraction(1, 1000)
    assert len(set(np.diff(sorted(p.pts for p in pk)).tolist())) > 1
    for name in ("edit_list", "edit_list_open_gop"):
        s, pk = packets(videos[name])
        assert sum(p.is_discard for p in pk) > 0, name
        assert s.frames > len(list(reference_frames(videos[name]))), name
    s, pk = packets(videos["open_gop"])
    keys = [i for i, p in enumerate(pk) if p.is_keyframe]
    leading = [k for k in keys if k + 1 < len(pk) and pk[k + 1].pts < pk[k].pts]
    assert leading, "no open GOP with leading frames"


KIND_NAMES = ["cfr", "vfr", "mkv_ntsc", "ts", "open_gop", "edit_list", "edit_list_open_gop"]


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("num", [1, 5, 17, 40, 500])
def test_exact_vs_full_decode(videos: dict[str, Path], kind: str, num: int, no_fallback: None) -> None:
    path = videos[kind]
    settings = FrameSettings(num_frames=num, max_side=96)
    ref_jpegs, ref_times = reference(path, settings)
    vf = sample_frames(path, settings)
    assert vf.total_frames == len(ref_jpegs)
    assert vf.indices == uniform_indices(len(ref_jpegs), num)
    assert vf.jpegs == [ref_jpegs[i] for i in vf.indices]  # byte-equal: same pixels
    assert vf.timestamps == pytest.approx([ref_times[i] for i in vf.indices], abs=1e-6)
    if num > 1:  # guard: neighbouring frames differ, so an off-by-one would be caught
        assert ref_jpegs[vf.indices[1]] != ref_jpegs[vf.indices[1] - 1]


@pytest.mark.parametrize("workers", ["1", "3"])
@pytest.mark.parametrize("kind", ["cfr", "edit_list_open_gop", "mkv_ntsc"])
def test_exact_with_any_worker_count(
    videos: dict[str, Path], kind: str, workers: str, monkeypatch: pytest.MonkeyPatch, no_fallback: None
) -> None:
    monkeypatch.setenv("MTVBENCH_DECODE_WORKERS", workers)
    settings = FrameSettings(num_frames=11, max_side=96)
    ref_jpegs, _ = reference(videos[kind], settings)
    vf = sample_frames(videos[kind], settings)
    assert vf.jpegs == [ref_jpegs[i] for i in vf.indices]


def test_decodes_only_up_to_each_runs_last_target(videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every packet fed lies between a run's key frame and its last target; none twice."""
    path = videos["open_gop"]
    monkeypatch.setenv("MTVBENCH_DECODE_WORKERS", "1")
    fed: list[int] = []
    real = fr._decode

    def spy(stream: object, packet: av.Packet | None) -> list:
        if packet is not None:
            fed.append(packet.pts)
        return real(stream, packet)  # type: ignore[arg-type]

    monkeypatch.setattr(fr, "_decode", spy)
    settings = FrameSettings(num_frames=6, max_side=32)
    sample_frames(path, settings)
    container, stream = fr._open(path)
    tl = fr._scan(container, stream)
    container.close()
    pos = {p: i for i, p in enumerate(tl.pts)}
    shown = tl.shown()
    targets = [shown[i] for i in uniform_indices(len(shown), 6)]
    starts = fr._start_keyframes(tl, targets, pos)
    runs = fr._plan_runs(targets, pos, starts)
    allowed = [i for run in runs for i in range(starts[run[0]], max(pos[t] for t in run) + 1)]
    assert sorted(pos[p] for p in fed) == sorted(allowed)
    assert len(runs) > 1 and len(fed) < len(tl.pts)


def test_edit_list_counts_only_shown_frames(videos: dict[str, Path]) -> None:
    path = videos["edit_list"]
    cut = sample_frames(path, FrameSettings(num_frames=1000, max_side=None))
    full = sample_frames(videos["cfr"], FrameSettings(num_frames=1000, max_side=None))
    assert cut.total_frames == 96 - 17
    assert cut.jpegs == full.jpegs[17:]  # the cut shows exactly frames 17.. of the source
    assert cut.timestamps[0] == 0.0
    info = probe(path)
    assert info.total_frames == 79 and info.reported_frames > 79


def test_vfr_timestamps(videos: dict[str, Path]) -> None:
    vf = sample_frames(videos["vfr"], FrameSettings(num_frames=90, max_side=None))
    assert len(set(np.round(np.diff(vf.timestamps), 4).tolist())) > 10
    assert vf.duration_s > vf.timestamps[-1]


@pytest.mark.parametrize("kind", ["cfr", "vfr", "edit_list"])
def test_sequential_fallback_is_exact(
    videos: dict[str, Path], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = FrameSettings(num_frames=9, max_side=64)
    fast = sample_frames(videos[kind], settings)
    monkeypatch.setattr(fr._Timeline, "problem", lambda self: "forced by test")
    slow = sample_frames(videos[kind], settings)
    assert slow.jpegs == fast.jpegs
    assert slow.indices == fast.indices and slow.total_frames == fast.total_frames
    assert slow.timestamps == pytest.approx(fast.timestamps, abs=1e-6)
    assert slow.duration_s == pytest.approx(fast.duration_s, abs=1e-3)


def test_without_nonref_skipping(videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    settings = FrameSettings(num_frames=13, max_side=64)
    fast = sample_frames(videos["open_gop"], settings)
    monkeypatch.setattr(fr, "SKIP_NONREF", False)
    assert sample_frames(videos["open_gop"], settings).jpegs == fast.jpegs


def test_short_video_gives_every_frame(short_video: Path) -> None:
    for num in (7, 8, 128):
        vf = sample_frames(short_video, FrameSettings(num_frames=num))
        assert vf.indices == list(range(7)) and len(vf.jpegs) == 7 and vf.total_frames == 7
    vf = sample_frames(short_video, FrameSettings(num_frames=3))
    assert vf.indices == [0, 3, 6]


# ---------------------------------------------------------------------------- the VideoFrames object


def test_video_frames_object(cfr_video: Path) -> None:
    vf = sample_frames(cfr_video, FrameSettings(num_frames=5, max_side=80))
    assert len(vf) == 5 and vf.video == cfr_video
    assert vf.timestamps == pytest.approx([i * 0.04 for i in vf.indices])
    assert vf.duration_s == pytest.approx(96 / 25)
    b = vf.b64()
    assert b is vf.b64() and len(b) == 5
    import base64

    assert base64.b64decode(b[2]) == vf.jpegs[2]
    ims = vf.images()
    assert ims is vf.images() and ims[0].mode == "RGB" and ims[0].size == (80, 60)
    assert "jpegs" not in repr(vf)


def test_pydantic_field_keeps_the_object(cfr_video: Path) -> None:
    """A pydantic model (like ``GenerationRequest``) can hold VideoFrames without copying it."""
    from pydantic import BaseModel, ConfigDict

    class Request(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        frames: VideoFrames | None = None

    vf = sample_frames(cfr_video, FrameSettings(num_frames=2, max_side=32))
    vf.b64()
    req = Request(frames=vf)
    assert req.frames is vf and req.frames.b64() is vf.b64()
    from mtvbench.records import GenerationRequest

    assert GenerationRequest(id="x", prompt="p", frames=vf).frames is vf


def test_probe(videos: dict[str, Path]) -> None:
    info = probe(videos["cfr"])
    assert (info.total_frames, info.width, info.height, info.codec) == (96, 160, 120, "h264")
    assert info.duration_s == pytest.approx(3.84) and info.avg_fps == pytest.approx(25.0)
    info = probe(videos["mkv_ntsc"])
    assert info.total_frames == 80 and info.avg_fps == pytest.approx(29.97, abs=0.05)
    assert probe(videos["cfr"], exact=False).total_frames == 96


# ---------------------------------------------------------------------------- errors


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory, cfr_video: Path, audio_only: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    out = {
        "garbage": d / "garbage.mp4",
        "empty": d / "empty.mp4",
        "text": d / "notes.txt",
        "truncated": d / "truncated.mp4",
        "audio": audio_only,
        "missing": d / "missing.mp4",
        "directory": d,
    }
    out["garbage"].write_bytes(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    out["empty"].write_bytes(b"")
    out["text"].write_text("this is not a video\n" * 50)
    data = cfr_video.read_bytes()
    out["truncated"].write_bytes(data[: len(data) // 2])  # moov is at the end: unreadable
    return out


@pytest.mark.parametrize("kind", ["garbage", "empty", "text", "truncated", "audio", "missing", "directory"])
def test_bad_file_raises_video_error(bad_files: dict[str, Path], kind: str) -> None:
    path = bad_files[kind]
    with pytest.raises(VideoError) as err:
        sample_frames(path, FrameSettings(num_frames=4))
    assert str(path) in str(err.value)
    with pytest.raises(VideoError, match=str(path.name)):
        probe(path)


def test_truncated_download_gives_the_frames_that_exist(tmp_path: Path) -> None:
    from tests.support.videogen import write_video

    full = write_video(tmp_path / "full.mp4", 96, faststart=True)
    cut = tmp_path / "partial.mp4"
    data = full.read_bytes()
    cut.write_bytes(data[: int(len(data) * 0.6)])  # index says 96 frames, the data stops early
    settings = FrameSettings(num_frames=8, max_side=64)
    vf = sample_frames(cut, settings)
    ref_jpegs, _ = reference(cut, settings)
    assert 10 < vf.total_frames == len(ref_jpegs) < 96
    assert vf.jpegs == [ref_jpegs[i] for i in vf.indices]


def test_corrupt_packets_never_leak_av_errors(tmp_path: Path, cfr_video: Path) -> None:
    """Garbage in the middle of the media data: frames (maybe concealed) or VideoError, nothing else."""
    data = bytearray(cfr_video.read_bytes())
    rng = np.random.default_rng(3)
    for start in range(2000, len(data) - 5000, 1500):
        data[start : start + 200] = rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    path = tmp_path / "damaged.mp4"
    path.write_bytes(bytes(data))
    try:
        vf = sample_frames(path, FrameSettings(num_frames=8))
    except VideoError as e:
        assert str(path) in str(e)
    else:
        assert isinstance(vf, VideoFrames) and 1 <= len(vf.jpegs) <= 8


# ---------------------------------------------------------------------------- explicit index rules


def _reference_rgb(path: Path, settings: FrameSettings) -> list[np.ndarray]:
    """Every frame of a full decode, resized and converted the way the sampler does."""
    out = []
    for f in reference_frames(path):
        w, h = settings.output_size(f.width, f.height)
        out.append(VideoReformatter().reformat(f, width=w, height=h, format="rgb24",
                                               interpolation=settings.interpolation).to_ndarray())
    return out


def _picky(total: int) -> list[int]:
    """Unsorted, with a repeat: the rule decides order and repeats."""
    return [total - 1, 0, 5, 5, total // 2]


@pytest.mark.parametrize("kind", ["cfr", "open_gop", "edit_list"])
def test_sample_frames_with_an_index_rule(videos: dict[str, Path], kind: str, no_fallback: None) -> None:
    settings = FrameSettings(max_side=64)
    vf = sample_frames(videos[kind], settings, indices=_picky)
    ref, _ = reference(videos[kind], settings)
    want = _picky(len(ref))
    assert vf.indices == want
    assert vf.jpegs == [ref[i] for i in want]


@pytest.mark.parametrize("interpolation", ["BICUBIC", "BILINEAR"])
def test_sample_rgb_is_exact(cfr_video: Path, interpolation: str, no_fallback: None) -> None:
    settings = FrameSettings(size=(100, 75), interpolation=interpolation)
    d = sample_rgb(cfr_video, _picky, settings)
    ref = _reference_rgb(cfr_video, settings)
    assert d.indices == _picky(len(ref))
    assert (d.width, d.height, d.source_width, d.source_height) == (100, 75, 160, 120)
    for got, i in zip(d.frames, d.indices, strict=True):
        assert got.shape == (75, 100, 3)
        assert np.array_equal(got, ref[i])


def test_bilinear_and_bicubic_resize_differ(cfr_video: Path) -> None:
    a = sample_rgb(cfr_video, lambda n: [3], FrameSettings(size=(100, 75))).frames[0]
    b = sample_rgb(cfr_video, lambda n: [3], FrameSettings(size=(100, 75), interpolation="BILINEAR")).frames[0]
    assert not np.array_equal(a, b)


def test_sample_rgb_sequential_fallback_same_frames(cfr_video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = sample_rgb(cfr_video, _picky, FrameSettings(max_side=None))
    monkeypatch.setattr(fr._Timeline, "problem", lambda self: "forced by test")
    slow = sample_rgb(cfr_video, _picky, FrameSettings(max_side=None))
    assert slow.indices == fast.indices
    assert all(np.array_equal(a, b) for a, b in zip(slow.frames, fast.frames, strict=True))


@pytest.mark.parametrize("rule", [lambda n: [n], lambda n: [-1], lambda n: []])
def test_index_rule_out_of_range_is_one_clear_error(cfr_video: Path, rule: fr.IndexRule) -> None:
    with pytest.raises(VideoError, match=str(cfr_video)):
        sample_rgb(cfr_video, rule)


def test_sample_rgb_transform_keeps_only_its_result(cfr_video: Path) -> None:
    settings = FrameSettings(max_side=None)
    full = sample_rgb(cfr_video, _picky, settings)
    cut = sample_rgb(cfr_video, _picky, settings, transform=lambda a: a[:2, :3].copy())
    assert [f.shape for f in cut.frames] == [(2, 3, 3)] * len(full.frames)
    assert all(np.array_equal(c, f[:2, :3]) for c, f in zip(cut.frames, full.frames, strict=True))
    assert (cut.width, cut.height) == (160, 120)  # the resize before the transform
