"""Optional dependencies of the tests: a test that needs a package outside ``[dev]`` skips, naming
the extra that brings it (``.ci/run`` installs them all, so CI runs every such test).
``needs`` marks a test or a module (``pytestmark``); ``require`` skips from inside a test or, at the
top of a module that imports the package, the whole module."""

from __future__ import annotations

import importlib.util

import pytest


def missing(*modules: str) -> list[str]:
    """The top-level packages of ``modules`` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]


def reason(extra: str, absent: list[str]) -> str:
    """Why a test is skipped: the absent packages and the extra that brings them."""
    return f"needs mtvbench[{extra}] ({', '.join(absent)} not installed): pip install 'mtvbench[{extra}]'"


def needs(extra: str, *modules: str) -> pytest.MarkDecorator:
    """Skip the test unless every one of ``modules`` is installed; the reason names ``mtvbench[extra]``."""
    absent = missing(*modules)
    return pytest.mark.skipif(bool(absent), reason=reason(extra, absent))


def require(extra: str, *modules: str) -> None:
    """Skip now (the test, or the module when called at its top) unless every one of ``modules`` is installed."""
    __tracebackhide__ = True  # the skip is reported at the caller's line
    absent = missing(*modules)
    if absent:
        pytest.skip(reason(extra, absent), allow_module_level=True)
