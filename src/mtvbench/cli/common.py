"""What every command group shares: the one error handler, the typer app class, the version.

- :class:`MtvbenchGroup` is the click group class of every typer app of mtvbench. Its
  ``invoke`` is the single place where a :class:`~mtvbench.errors.MtvbenchError` becomes
  one message on stderr and its exit code (no traceback), where Ctrl-C becomes exit 130 and SIGTERM
  (:class:`~mtvbench.util.signals.Terminated`) exit 143,
  and where an unexpected exception is reported as an internal error (the traceback is
  shown with ``MTVBENCH_DEBUG=1``). Commands mounted from a registry (analyses, stages of
  other packages) run under it too.
- Printing (literal text, tables in ``--format``) is :mod:`mtvbench.render.console`'s.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, NoReturn

import typer
from rich.markup import escape as rich_escape
from typer.core import TyperGroup

from mtvbench.errors import MtvbenchError
from mtvbench.render.console import emit, note, print_error
from mtvbench.util.files import describe_os_error
from mtvbench.util.signals import Terminated


def fail(message: str, code: int = 2) -> NoReturn:
    print_error(message)
    raise typer.Exit(code)


def handle_exception(e: BaseException) -> int:
    """Print ``e`` for the user and return the exit code (the one policy of every command)."""
    if isinstance(e, MtvbenchError):
        print_error(str(e))
        return e.exit_code
    if isinstance(e, KeyboardInterrupt):  # Ctrl-C (SIGINT), or SIGTERM (Terminated): the same close, the same words
        terminated = isinstance(e, Terminated)
        note("terminated" if terminated else "interrupted",
             "everything finished so far is stored; run the same command again to resume")
        return 143 if terminated else 130
    if isinstance(e, OSError) and e.errno is not None:
        print_error(describe_os_error(getattr(e, "filename", None) or "(file)", e, "failed"))
        return 2
    if isinstance(e, RecursionError):
        print_error("input nested too deeply to process")
        return 2
    if os.environ.get("MTVBENCH_DEBUG"):
        traceback.print_exception(e)
    print_error(f"internal error: {type(e).__name__}: {e}")
    note("hint", "this is a bug of mtvbench; rerun with MTVBENCH_DEBUG=1 for the traceback and report it",
         style="dim")
    return 1


#: click's own signals (usage errors, --help exit, abort) pass through to typer, which prints them and
#: exits 2 / 0 / 1. Typer may use the click package or its own vendored copy; its BadParameter names
#: the ClickException base of whichever it uses.
_CLICK_SIGNALS: tuple[type[BaseException], ...] = (
    typer.Exit, typer.Abort, SystemExit,
    *(c for c in typer.BadParameter.__mro__ if c.__name__ in ("ClickException", "UsageError")),
)


def literal_help(command: Any) -> None:
    """Show a command's help texts as written: typer reads them as rich markup, which would eat
    ``mtvbench[ray]`` or ``hf:ORG/NAME[@REV]`` (and no help text of mtvbench uses markup)."""
    for attr in ("help", "short_help", "epilog"):
        value = getattr(command, attr, None)
        if isinstance(value, str):
            setattr(command, attr, rich_escape(value))
    for param in getattr(command, "params", []):
        if isinstance(getattr(param, "help", None), str):
            param.help = rich_escape(param.help)


class MtvbenchGroup(TyperGroup):
    """The group class of every mtvbench typer app: one error handler for all commands, and help
    texts shown literally (:func:`literal_help`; each group does its own commands)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        literal_help(self)
        for command in self.commands.values():
            if not isinstance(command, TyperGroup):
                literal_help(command)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK_SIGNALS:
            raise
        except BaseException as e:  # noqa: BLE001 - this is the one place that turns errors into exits
            code = handle_exception(e)
            sys.stdout.flush()
            raise typer.Exit(code) from None


def new_app(help: str, **kw: Any) -> typer.Typer:  # noqa: A002 - typer's own name
    return typer.Typer(cls=MtvbenchGroup, add_completion=False, no_args_is_help=True,
                       pretty_exceptions_enable=False, help=help, **kw)


def version_callback(value: bool) -> None:
    if value:
        from mtvbench._version import __version__

        emit(f"mtvbench {__version__}")
        raise typer.Exit(0)
