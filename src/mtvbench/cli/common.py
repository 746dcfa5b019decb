"""What every command group shares: the error handler, the typer app class, the version.

- :class:`MtvbenchGroup` is the click group class of every typer app of mtvbench. Its
  ``invoke`` is the single place where a :class:`~mtvbench.errors.MtvbenchError` becomes
  one message on stderr and its exit code (no traceback), where Ctrl-C becomes exit 130 and SIGTERM
  (:class:`~mtvbench.util.signals.Terminated`) exit 143,
  and where an unexpected exception is reported as an internal error (the traceback is
  shown with ``MTVBENCH_DEBUG=1``), and where a closed stdout (``| head``) ends a command
  quietly. Commands mounted from a registry (analyses, stages of other packages) run under it too.
- Help: every command's and group's ``--help`` is :mod:`mtvbench.cli.help`'s.
- Printing (literal text, tables in ``--format``) is :mod:`mtvbench.render.console`'s.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from mtvbench.errors import MtvbenchError

#: the exit status of a command whose stdout was closed, where the process cannot end by SIGPIPE
#: itself (in-process, e.g. under a test runner): 128 + SIGPIPE, as a shell reports it
CLOSED_STDOUT_EXIT = 128 + signal.SIGPIPE


def fail(message: str, code: int = 2) -> NoReturn:
    from mtvbench.render.console import print_error

    print_error(message)
    raise typer.Exit(code)


def closed_stdout(e: BaseException) -> bool:
    """``e`` says that the reader of stdout went away (``mtvbench models | head -1``)."""
    return isinstance(e, BrokenPipeError) or (isinstance(e, OSError) and e.errno == errno.EPIPE)


def end_on_closed_stdout() -> NoReturn:
    """Stop quietly because stdout's reader went away, as a Unix tool does: nothing on stderr, and the
    process ends by SIGPIPE (in-process: :data:`CLOSED_STDOUT_EXIT`). stdout is pointed at
    ``/dev/null`` first so that the interpreter's last flush raises nothing."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if sys.stdout is sys.__stdout__ and hasattr(signal, "SIGPIPE"):
        sys.stderr.flush()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    raise typer.Exit(CLOSED_STDOUT_EXIT)


@contextlib.contextmanager
def quiet_on_closed_stdout() -> Iterator[None]:
    """Printing inside ends the command quietly when stdout is closed (:func:`end_on_closed_stdout`)."""
    try:
        yield
        sys.stdout.flush()
    except OSError as e:
        if not closed_stdout(e):
            raise
        end_on_closed_stdout()


def handle_exception(e: BaseException) -> int:
    """Print ``e`` for the user and return the exit code (every command ends through it). A closed
    stdout ends the command quietly (:func:`end_on_closed_stdout`)."""
    from mtvbench.render.console import note, print_error
    from mtvbench.util.files import describe_os_error
    from mtvbench.util.signals import Terminated

    if closed_stdout(e):
        end_on_closed_stdout()
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


def _show_help(ctx: Any, param: Any, value: bool) -> None:
    """``--help``: the help on stdout; a closed stdout (``--help | head -3``) ends it quietly."""
    if not value or ctx.resilient_parsing:
        return
    with quiet_on_closed_stdout():
        typer.echo(ctx.get_help(), color=ctx.color)
    ctx.exit()


def _format_help(command: Any, ctx: Any, formatter: Any) -> None:
    """The help text of a command or group, laid out by :mod:`mtvbench.cli.help`."""
    from mtvbench.cli.help import render

    formatter.write(render(command, ctx))


def _get_help_option(command: Any, ctx: Any) -> Any:
    """click's ``--help``, shown by :func:`_show_help`."""
    option = TyperCommand.get_help_option(command, ctx)
    if option is not None:
        option.callback = _show_help
    return option


class MtvbenchCommand(TyperCommand):
    """The command class of every mtvbench command: its help laid out by :mod:`mtvbench.cli.help`, and a
    ``--help`` that a closed stdout ends quietly."""

    format_help = _format_help
    get_help_option = _get_help_option


class MtvbenchGroup(TyperGroup):
    """The group class of every mtvbench typer app: one error handler for all commands, and the help
    of the group and of each of its commands laid out by :mod:`mtvbench.cli.help` (texts shown literally)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for command in self.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = MtvbenchCommand

    format_help = _format_help
    get_help_option = _get_help_option

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """A group given no command shows its help (on stdout, exit 2)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            with quiet_on_closed_stdout():
                typer.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK_SIGNALS:
            raise
        except BaseException as e:  # noqa: BLE001 - errors become exit codes here and only here
            code = handle_exception(e)
            with quiet_on_closed_stdout():
                sys.stdout.flush()
            raise typer.Exit(code) from None


def new_app(help: str, **kw: Any) -> typer.Typer:  # noqa: A002 - typer's own name
    return typer.Typer(cls=MtvbenchGroup, add_completion=False, no_args_is_help=True,
                       pretty_exceptions_enable=False, help=help, **kw)


def version_callback(value: bool) -> None:
    if value:
        from mtvbench._version import __version__  # and nothing else: --version stays instant

        with quiet_on_closed_stdout():
            sys.stdout.write(f"mtvbench {__version__}\n")
        raise typer.Exit(0)
