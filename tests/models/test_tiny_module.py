"""The tiny-model builder the tests use is a documented module a user runs for a smoke test:
``python -m mtvbench.models.tiny DEST`` (nothing downloaded)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from mtvbench.models import tiny

HAS_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
SRC = Path(tiny.__file__).resolve().parents[2]


def _module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mtvbench.models.tiny", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": ""}, timeout=600)


def test_the_module_documents_itself() -> None:
    r = _module("--help")
    assert r.returncode == 0, r.stderr
    assert "smoke test" in r.stdout and "--family" in r.stdout
    assert all(f in r.stdout for f in tiny.FAMILIES)
    assert "python -m mtvbench.models.tiny" in (tiny.__doc__ or "")


@pytest.mark.skipif(HAS_TORCH, reason="checks the message given without torch")
def test_without_torch_it_says_what_to_install(tmp_path: Path) -> None:
    r = _module(str(tmp_path / "tiny"))
    assert r.returncode == 2 and "pip install 'mtvbench[hf]'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "tiny").exists()


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch and transformers (the torch test group)")
def test_it_writes_a_model_the_hf_backend_loads(tmp_path: Path) -> None:
    r = _module(str(tmp_path / "tiny"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tiny" / "config.json").is_file() and f"hf:{tmp_path / 'tiny'}" in r.stdout
