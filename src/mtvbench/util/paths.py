"""Where mtvbench keeps its caches (one rule for every cache).

``$MTVBENCH_CACHE`` when set, else ``$XDG_CACHE_HOME/mtvbench``, else ``~/.cache/mtvbench``.
Under it: ``frames/`` (sampled frames, :mod:`mtvbench.media.cache`), ``probe/`` (video checks,
:mod:`mtvbench.media.probe`), ``scenes/`` (scene counts, :mod:`mtvbench.analysis.metadata`), ``reports/``
(what reports keep of runs, :mod:`mtvbench.run.reportcache`) and ``datasets/`` (datasets laid out from the
Hugging Face Hub, :mod:`mtvbench.data.hub`).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """The folder of mtvbench's caches (see the module docstring for the rule)."""
    env = os.environ.get("MTVBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mtvbench"


def cache_dir(kind: str) -> Path:
    """``frames``, ``probe``, ``scenes``, ``reports`` or ``datasets`` under :func:`cache_home`."""
    return cache_home() / kind
