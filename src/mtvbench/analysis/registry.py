"""Analyses as commands: :data:`ANALYSES` maps a command name to its command function.

An analysis is one module with its logic and one ``command`` function whose typer-annotated
parameters are its options (``mtvbench NAME --help`` shows them; the docstring is its help).
The command line mounts every entry as ``mtvbench NAME``, so a new analysis is one new file
plus one entry: here for the built-ins (``"module:attr"``, imported when the command line is
built), the entry-point group ``mtvbench.analyses`` for another package, or
:func:`register_analysis` in code. A command prints through :mod:`mtvbench.render.console` and
raises :class:`~mtvbench.errors.MtvbenchError` for the user's mistakes (one message, exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mtvbench.registry import Registry

Command = Callable[..., Any]


def _as_command(obj: object) -> Command:
    if not callable(obj):
        raise TypeError(f"expected a command function, got {type(obj).__name__}")
    return obj


ANALYSES: Registry[Command] = Registry("analysis", group="mtvbench.analyses", coerce=_as_command)
for _name in ("report", "compare", "agreement", "stats", "scenes", "sweep", "estimate"):
    ANALYSES.add(_name, f"mtvbench.analysis.{_name}:command")


def register_analysis(name: str) -> Callable[[Command], Command]:
    """Decorator: make a command function the analysis ``mtvbench NAME``.

    Args:
        name: the command name; must not be taken.

    Returns:
        The decorator; it returns the function unchanged."""
    return ANALYSES.register(name)


__all__ = ["ANALYSES", "Command", "register_analysis"]
