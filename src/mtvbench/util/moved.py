"""Names that moved to another module keep working for one release, with a warning naming the new place.

A module whose public names moved keeps only a module-level ``__getattr__`` made here::

    __getattr__ = moved_names(__name__, {"CallGate": "mtvbench.dispatch.local",
                                         "OldName": "mtvbench.somewhere:NewName"})

Importing an old name gives the object itself (the same class, not a copy) and a ``DeprecationWarning``
that names its new spelling; the old module imports nothing, so it adds no import arrow.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_names(old: str, new: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old``: each name of ``new`` is looked up where it went (``module``, or
    ``module:new_name`` when it was renamed too)."""

    def __getattr__(name: str) -> Any:
        where = new.get(name)
        if where is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        attr = attr or name
        warnings.warn(f"{old}.{name} is now {module}.{attr}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), attr)

    return __getattr__
