from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sample_root(tmp_path_factory) -> Path:
    """The bundled sample benchmark, materialised once per session."""
    from mtvbench.data.sample import materialize

    return materialize(tmp_path_factory.mktemp("sample") / "sample")
