"""``import mtvbench`` exposes the stable entry points, lazily, each documented."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import mtvbench

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
