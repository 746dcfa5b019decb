"""Every script the review pages load parses (``node --check``; skips, saying why, without Node.js).

A syntax error in one page script leaves that page blank in the browser; the browser tests find it only
as a time-out, this says which file and line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import mtvbench.review

STATIC = Path(mtvbench.review.__file__).parent / "static"
SCRIPTS = sorted(STATIC.glob("*.js"))


def test_the_pages_have_scripts() -> None:
    assert {p.name for p in SCRIPTS} >= {"common.js", "annotate.js", "rate.js"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_page_script_parses(script: Path) -> None:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("needs Node.js (node) to check the page scripts' syntax")
    done = subprocess.run([node, "--check", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{script.name} does not parse:\n{done.stderr}"
