from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.datasets import make_dataset


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches and settings that default to the user's (video probe verdicts, frames, scenes; ultralytics'
    settings file) go to a temporary folder of this session (of this worker under pytest-xdist)."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("MTVBENCH_CACHE", str(base / "user-cache"))
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(base / "ultralytics"))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return make_dataset(tmp_path / "data")
