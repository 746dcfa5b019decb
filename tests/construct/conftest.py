from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.detector import ColourBlobDetector
from tests.support.scene_videos import three_scene_video


@pytest.fixture(scope="session")
def scene_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_scene_video(tmp_path_factory.mktemp("vids") / "three.mp4")


@pytest.fixture
def blob_detector() -> ColourBlobDetector:
    return ColourBlobDetector()
