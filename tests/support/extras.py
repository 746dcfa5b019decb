"""Optional dependencies of the tests: a test that needs a package outside ``[dev]`` skips, naming
the extra that brings it (``.ci/run`` installs them all, so CI runs every such test)."""

from __future__ import annotations

import importlib.util

import pytest


def missing(*modules: str) -> list[str]:
    """The top-level packages of ``modules`` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]


def needs(extra: str, *modules: str) -> pytest.MarkDecorator:
    """Skip the test unless every one of ``modules`` is installed; the reason names ``mtvbench[extra]``."""
    absent = missing(*modules)
    return pytest.mark.skipif(bool(absent), reason=f"needs mtvbench[{extra}] ({', '.join(absent)} not installed): "
                                                   f"pip install 'mtvbench[{extra}]'")
