"""`validate` checks every video and lists every problem at once; `run` refuses the same data
with the same messages before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset, write_video


def _write_audio_only(path: Path) -> None:
    import av
    import numpy as np

    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        for i in range(10):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = 16000, i * 1024
            for p in stream.encode(frame):
                out.mux(p)
        for p in stream.encode(None):
            out.mux(p)


def _broken_dataset(tmp_path: Path) -> Path:
    """vid0 is a 0-byte file, vid1 is audio only."""
    root = make_dataset(tmp_path / "d")
    (root / "videos" / "vid0.mp4").write_bytes(b"")
    _write_audio_only(root / "videos" / "vid1.mp4")
    return root


def test_validate_lists_every_bad_video_at_once(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["validate", str(_broken_dataset(tmp_path))])
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.splitlines() if x.startswith("ERROR")]
    assert lines == [
        "ERROR: videos/vid0.mp4 video='vid0': is empty (0 bytes)",
        "ERROR: videos/vid1.mp4 video='vid1': has no video stream (streams: audio; an audio-only file, "
        "or an incomplete download?)",
    ]
    assert "Traceback" not in res.output


def test_run_refuses_bad_videos_before_writing_anything(tmp_path: Path) -> None:
    root = _broken_dataset(tmp_path)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--data", str(root), "--model", "oracle", "--judge", "offline",
                                   "--out", str(out), "--cache-dir", str(tmp_path / "c"), "--quiet"])
    assert res.exit_code == 2, res.output
    assert "ERROR: videos/vid0.mp4 video='vid0': is empty (0 bytes)" in res.output
    assert "ERROR: videos/vid1.mp4 video='vid1': has no video stream" in res.output
    assert "run again" not in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_truncated_and_fifo_videos_in_validate(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    data = (root / "videos" / "vid0.mp4").read_bytes()
    (root / "videos" / "vid0.mp4").write_bytes(data[: len(data) // 2])  # the index at the end is lost
    (root / "videos" / "vid1.mp4").unlink()
    os.mkfifo(root / "videos" / "vid1.mp4")
    res = CliRunner().invoke(app, ["validate", str(root)])
    assert res.exit_code == 2
    assert "ERROR: videos/vid0.mp4 video='vid0': cannot be opened as a video" in res.output
    assert "ERROR: videos/vid1.mp4 video='vid1': is not a regular file (a FIFO, device or socket)" in res.output


def test_validate_reports_durations(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    write_video(root / "videos" / "vid1.mp4", n_frames=80)  # 10 s at 8 fps; vid0 has 24 frames (3 s)
    res = CliRunner().invoke(app, ["validate", str(root), "--list-videos"])
    assert res.exit_code == 0, res.output
    assert "video='vid0': h264 64x48, 3.0 s, 24 frames" in res.output
    assert "video='vid1': h264 64x48, 10.0 s, 80 frames" in res.output
    assert "videos: 0:00:13 in total; shortest 'vid0' (0:00:03), longest 'vid1' (0:00:10)" in res.output
