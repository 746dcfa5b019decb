"""``import mtvbench`` exposes the stable entry points, lazily, each documented."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import mtvbench
from tests.support.source import parsed

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in mtvbench.__all__:
        obj = getattr(mtvbench, name)
        if name == "__version__":
            continue
        assert (obj.__doc__ or "").strip(), f"mtvbench.{name} has no docstring"
        if inspect.isfunction(obj):
            doc = obj.__doc__ or ""
            assert "Args:" in doc and "Returns:" in doc, f"mtvbench.{name}: docstring without Args/Returns"
    assert set(dir(mtvbench)) >= set(mtvbench.__all__)


def test_import_is_cheap_and_typed() -> None:
    code = "import sys, mtvbench; print(sorted(m for m in sys.modules if m.startswith('mtvbench')))"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": SRC}, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['mtvbench']"  # nothing else is imported until it is used
    assert (Path(SRC) / "mtvbench" / "py.typed").is_file()


def test_mtvbench_deprecation_warnings_fail_the_suite_and_others_do_not() -> None:
    """pyproject's filterwarnings: a test that still uses a spelling kept after a rename fails; a third-party
    library's deprecation stays a warning."""
    import warnings

    import pytest

    from mtvbench.errors import MtvbenchDeprecationWarning

    with pytest.raises(MtvbenchDeprecationWarning, match="renamed"):
        warnings.warn("renamed", MtvbenchDeprecationWarning, stacklevel=1)
    with pytest.warns(DeprecationWarning, match="someone else's"):
        warnings.warn("someone else's", DeprecationWarning, stacklevel=1)


def test_nothing_in_src_warns_a_deprecation_but_through_the_project_class() -> None:
    """0.1.0 is unreleased: no spelling is kept after a rename, and a later one warns with
    ``MtvbenchDeprecationWarning`` only."""
    import ast

    found = []
    for path in sorted((Path(SRC) / "mtvbench").rglob("*.py")):
        tree = parsed(path)
        bases = {id(b) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for b in node.bases}
        found += [f"{path.name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Name)
                  and node.id in ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")
                  and id(node) not in bases]
        found += [f"{path.name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Name)
                  and node.id == "MtvbenchDeprecationWarning"]
    assert found == []
