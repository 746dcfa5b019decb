"""The source of mtvbench as syntax trees, parsed once per session (per xdist worker): a handful of test modules
walk every file of src/ (which module spells a file name, which class derives from which), and parsing all of it
takes a second each time."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


def parsed(path: Path) -> ast.Module:
    """The syntax tree of the Python file ``path`` (shared: a test must not change it)."""
    st = path.stat()
    return _parse(str(path.resolve()), st.st_mtime_ns, st.st_size)


@cache
def _parse(path: str, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))
