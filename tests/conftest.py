from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.datasets import make_dataset


def pytest_configure(config: pytest.Config) -> None:
    """No terminal size from the environment: ``import readline`` (pytest imports it) exports COLUMNS=80
    and LINES=24 to child processes, and pytest-xdist's workers see them in ``os.environ`` too. Without
    this the output width of a command would differ between ``-n 0`` and ``-n logical``, and between a
    command run in-process and in a subprocess; a test that needs a width sets COLUMNS itself."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)


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
