"""Printing for every command: consoles, literal text, tables in the format the user asked for.

- Text from datasets, models, servers and users is never parsed as rich markup here:
  :func:`say`, :func:`note`, :func:`warn` and :func:`print_error` take plain strings and print
  them literally (control characters and ANSI escape codes shown as escapes, see
  :mod:`mtvbench.util.escape`); :func:`emit` writes Markdown, JSON or CSV exactly as it is.
- Tables: every command that prints one takes ``--format table|plain|md|csv|json``
  (:data:`FormatOption`); the default ``auto`` is a rich table on a terminal and plain text
  otherwise (a pipe, a file: one row per line, tab-separated, no Markdown escaping, no
  wrapping, :func:`mtvbench.render.tables.to_plain`); ``--format md`` gives Markdown.
  :func:`print_tables` prints :class:`~mtvbench.render.tables.TextTable` s,
  :func:`print_leaderboard` the Table 2 layout; tables reach stdout only through these two.
- Progress and "wrote" messages go to stderr (:func:`note`), results to stdout.

The command-line package (:mod:`mtvbench.cli`) and the commands of analyses
(:mod:`mtvbench.analysis`) print through these; errors are printed by the error handler of
:mod:`mtvbench.cli.common`.
"""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from mtvbench.util.escape import rich_text, terminal


def make_console(stderr: bool = False) -> Console:
    """A console for the current stream and terminal size (read at each command, not at import)."""
    probe = Console(stderr=stderr)
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    # wide enough for the Table 2 layout when the output goes to a file or a pipe
    return Console(stderr=stderr, width=160, soft_wrap=False)


class _LazyConsole:
    """``console.print(...)`` on a console made for the stream as it is now (tests swap streams)."""

    def __init__(self, stderr: bool):
        self.stderr = stderr

    def __getattr__(self, name: str) -> Any:
        return getattr(make_console(self.stderr), name)


console: Console = _LazyConsole(stderr=False)  # type: ignore[assignment]
err_console: Console = _LazyConsole(stderr=True)  # type: ignore[assignment]


def styled(parts: list[tuple[str, str | None]]) -> Text:
    """A line from (text, style) parts; the text is literal, never markup."""
    t = Text()
    for s, style in parts:
        t.append(terminal(s, multiline=True), style=style or "")
    return t


def say(message: str, style: str | None = None) -> None:
    console.print(Text(terminal(message, multiline=True), style=style or ""), highlight=False, soft_wrap=True)


def emit(text: str) -> None:
    """Text printed exactly as is (Markdown, JSON, CSV): no markup, no wrapping, no highlighting."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def note(label: str, message: str, style: str = "yellow") -> None:
    """``label: message`` on stderr: wrapped at the terminal's width on a terminal, one line in a pipe or file."""
    out = make_console(stderr=True)
    out.print(styled([(f"{label}: ", style), (message, None)]), highlight=False, soft_wrap=not out.is_terminal)


def warn(message: str) -> None:
    note("warning", message)


def dataset_path(value: str | os.PathLike[str]) -> Path:
    """A command's dataset argument as a folder: ``hf:ORG/NAME[@REV]`` is fetched (or read from the
    cache) and laid out once, with progress notes on stderr (:func:`mtvbench.data.hub.resolve_dataset`)."""
    from mtvbench.data.hub import resolve_dataset

    return resolve_dataset(value, note=lambda m: note("dataset", m, style="cyan"))


def print_error(message: str) -> None:
    err_console.print(styled([("error: ", "bold red"), (message, None)]), highlight=False, soft_wrap=True)


class OutputFormat(str, enum.Enum):
    auto = "auto"
    table = "table"
    plain = "plain"
    md = "md"
    csv = "csv"
    json = "json"


FormatOption = Annotated[OutputFormat, typer.Option(
    "--format", case_sensitive=False,
    help="table (terminal), plain (one row per line, tab-separated), md (Markdown), csv or json; auto: table on "
         "a terminal, plain in a pipe or file")]


def resolve_format(fmt: OutputFormat | str) -> str:
    """``auto`` becomes ``table`` when stdout is a terminal and ``plain`` otherwise."""
    value = fmt.value if isinstance(fmt, OutputFormat) else str(fmt)
    if value != "auto":
        return value
    return "table" if make_console().is_terminal else "plain"


def emit_json(obj: Any) -> None:
    """JSON on stdout; non-ASCII and control characters as ``\\u`` escapes (safe on any terminal)."""
    emit(json.dumps(obj, indent=2, ensure_ascii=True, allow_nan=False))


def print_tables(tables: Sequence[Any], fmt: OutputFormat | str, json_obj: Any = None) -> None:
    """Print :class:`~mtvbench.render.tables.TextTable` s in ``fmt``. ``json`` prints
    ``json_obj`` (the command's own records) or else the tables' rows; ``csv`` prints the
    first table only (the command's main table)."""
    from mtvbench.render.tables import to_csv, to_markdown, to_plain, to_records, to_rich

    kind = resolve_format(fmt)
    if kind == "json":
        if json_obj is None:
            json_obj = to_records(tables[0]) if len(tables) == 1 else {
                (t.title or f"table{i + 1}"): to_records(t) for i, t in enumerate(tables)}
        emit_json(json_obj)
    elif kind == "csv":
        emit(to_csv(tables[0]))
    elif kind == "md":
        emit("\n".join(to_markdown(t) for t in tables))
    elif kind == "plain":
        emit("\n".join(to_plain(t) for t in tables))
    else:
        c = make_console()
        for i, t in enumerate(tables):
            if i:
                c.print()
            c.print(to_rich(t, c.width), highlight=False)


def print_leaderboard(rows: Sequence[tuple[str, Any]], fmt: OutputFormat | str, *, title: str,
                      markdown: str | None = None, json_obj: Any = None) -> None:
    """The Table 2 layout of ``rows`` ((name, Scores) pairs) in ``fmt``: a terminal table with
    each run's counts in words, Markdown (``markdown`` when given, else the run directory's
    leaderboard.md layout), CSV (leaderboard.csv), or JSON (``json_obj``, else the scores)."""
    from mtvbench.render.leaderboard import counts_summary, leaderboard_csv, leaderboard_markdown, leaderboard_table
    from mtvbench.render.tables import to_plain

    kind = resolve_format(fmt)
    counts = [f"{name}: {counts_summary(s.counts)}" if len(rows) > 1 else counts_summary(s.counts)
              for name, s in rows]
    if kind == "json":
        emit_json(json_obj if json_obj is not None else
                  [{"name": name, **s.model_dump(mode="json")} for name, s in rows])
    elif kind == "csv":
        emit(leaderboard_csv(rows))
    elif kind == "md":
        emit(markdown if markdown is not None else leaderboard_markdown(rows))
    elif kind == "plain":
        t = leaderboard_table(rows, title=title).table
        emit(to_plain(replace(t, notes=[*t.notes, *counts])))
    else:
        c = make_console()
        c.print(leaderboard_table(rows, title=title), highlight=False)
        for line in counts:
            c.print(rich_text(line, "dim"), highlight=False)
