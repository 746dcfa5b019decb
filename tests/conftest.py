from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def _sample_videos_encoded_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The bundled sample's videos are encoded once per session (per worker under pytest-xdist) and copied after
    that: ``materialize()`` spends seconds drawing and encoding them, and a dozen test modules call it, directly or
    through ``mtvbench demo``. Each copy is the real encoder's output for a spec of the same fingerprint, written
    beside and swapped in as the encoder does. tests/data/test_sample.py, which tests the encoding itself, sets
    ``REAL_SAMPLE_VIDEOS = True`` and gets the real encoder (see :func:`_real_sample_videos`)."""
    import mtvbench.data.sample as sample

    real = sample.videos.write_video
    kept_dir = tmp_path_factory.getbasetemp() / "sample-videos"

    def write_once(spec: sample.VideoSpec, path: Path) -> Path:
        kept = kept_dir / f"{spec.name}.{spec.fingerprint()}.mp4"
        if not kept.is_file():
            real(spec, kept)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.copy.mp4")
        shutil.copyfile(kept, tmp)
        os.replace(tmp, path)
        return path

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sample, "write_video", write_once)
        yield


@pytest.fixture(scope="module", autouse=True)
def _real_sample_videos(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module with ``REAL_SAMPLE_VIDEOS = True`` encodes the sample's videos itself (see above)."""
    if not getattr(request.module, "REAL_SAMPLE_VIDEOS", False):
        yield
        return
    import mtvbench.data.sample as sample
    from mtvbench.data.sample import videos

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sample, "write_video", videos.write_video)
        yield


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return make_dataset(tmp_path / "data")
