"""Session-scoped synthetic videos (small, a few seconds) for the media tests."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tests.support.videogen import cut_copy, remux, write_audio, write_video

#: name -> what is awkward about it
KINDS = {
    "cfr": "constant 25 fps, time base 1/12800, B-frames, GOP 12",
    "vfr": "irregular pts (variable frame rate), MP4",
    "mkv_ntsc": "29.97 fps in Matroska: time base 1/1000, pts not evenly spaced",
    "ts": "MPEG-TS remux: time base 1/90000, byte-based seeking",
    "open_gop": "open GOPs: leading B-frames need the previous GOP",
    "edit_list": "stream-copied cut starting mid-GOP: MP4 edit list, discarded packets",
    "edit_list_open_gop": "edit-list cut of the open-GOP file",
}


@pytest.fixture(scope="session")
def video_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("videos")


@pytest.fixture(scope="session")
def videos(video_dir: Path) -> dict[str, Path]:
    d = video_dir
    out: dict[str, Path] = {}
    out["cfr"] = write_video(d / "cfr.mp4", 96, time_base=Fraction(1, 12800))
    rng = np.random.default_rng(7)
    vfr_pts = np.cumsum(rng.integers(5, 120, 90)).tolist()
    out["vfr"] = write_video(d / "vfr.mp4", 90, size=(96, 64), time_base=Fraction(1, 1000), pts=vfr_pts)
    ntsc = write_video(d / "ntsc.mp4", 80, size=(120, 90), rate=Fraction(30000, 1001),
                       time_base=Fraction(1, 90000))
    out["mkv_ntsc"] = remux(ntsc, d / "ntsc.mkv")
    out["ts"] = remux(out["cfr"], d / "cfr.ts")
    out["open_gop"] = write_video(d / "open_gop.mp4", 90, bframes=3, open_gop=True)
    out["edit_list"] = cut_copy(out["cfr"], d / "edit_list.mp4", 17)
    out["edit_list_open_gop"] = cut_copy(out["open_gop"], d / "edit_list_open_gop.mp4", 29)
    return out


@pytest.fixture(scope="session")
def cfr_video(videos: dict[str, Path]) -> Path:
    return videos["cfr"]


@pytest.fixture(scope="session")
def short_video(video_dir: Path) -> Path:
    """Seven frames at 64x48."""
    return write_video(video_dir / "short.mp4", 7, size=(64, 48), gop=4)


@pytest.fixture(scope="session")
def portrait_video(video_dir: Path) -> Path:
    return write_video(video_dir / "portrait.mp4", 10, size=(48, 80), gop=5)


@pytest.fixture(scope="session")
def audio_only(video_dir: Path) -> Path:
    return write_audio(video_dir / "audio.wav")
