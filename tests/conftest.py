from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.datasets import make_dataset


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches that default to the user's (video probe verdicts, frames, scenes) go to a temporary folder."""
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "user-cache"))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return make_dataset(tmp_path / "data")
