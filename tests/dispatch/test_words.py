"""The runner's and the dispatchers' words are the field's: no private term (lane, writer, not asked) in
their identifiers, docstrings, comments or messages (the glossary of docs/architecture.md says what each
replacement means: runner / TurnRecorder, video session, pending)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mtvbench

ROOT = Path(mtvbench.__file__).parent
FILES = [*sorted((ROOT / "dispatch").glob("*.py")), ROOT / "run" / "runner.py", ROOT / "run" / "store.py"]
PRIVATE = re.compile(r"\blanes?\b|_lanes?\b|\bLane\b|Lane\b|\bwriters?\b|Writer\b|\bnot[ _]asked\b|NotAsked",
                     re.IGNORECASE)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_private_term(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [f"{path.name}:{i}: {line.strip()}" for i, line in enumerate(lines, 1) if PRIVATE.search(line)]
    assert not hits, "\n".join(hits)
