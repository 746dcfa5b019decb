"""Tables that print well anywhere: a terminal of any width, a pipe, a file, a spreadsheet.

A :class:`TextTable` holds raw values (text from anywhere, numbers, ``None``) and how each
column is meant; the renderers do the formatting and the escaping for their sink:

- :func:`to_plain`: plain text for a pipe or a file (what ``grep``, ``cut -f`` and ``awk -F'\t'``
  read): the title and intro lines, then the header and one line per row with the cells
  separated by a tab, then the notes. Nothing is escaped as Markdown and nothing wraps;
  control characters, tabs and line breaks inside a value are shown as ``\x1b``, ``\t``,
  ``\n`` (:func:`mtvbench.util.escape.terminal`), so a value can neither drive the terminal
  nor split a row.
- :func:`to_markdown`: GitHub-flavoured Markdown, one line per row whatever the text
  (:func:`mtvbench.util.escape.markdown`), numbers rounded for display.
- :func:`to_csv`: numbers as numbers, text neutralised against formula injection.
- :func:`to_records`: plain JSON-ready dicts.
- :func:`to_rich`: a rich table for a terminal of ``width`` columns in which an identifier
  (a preset name, a dialogue id, a model name: something a user types or searches for) is
  never cut or wrapped: the other columns wrap instead, and when even that cannot fit, every
  row is shown as a block of ``column: value`` lines.

``intro`` and ``notes`` are plain-text lines shown before and after the table.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from mtvbench.util.escape import csv_cell, markdown, rich_text, terminal

Value = str | int | float | None
Kind = Literal["id", "text", "num"]

#: what an empty or missing value looks like on screen
MISSING = "–"


@dataclass(frozen=True)
class Col:
    """A column: ``kind`` is ``id`` (never cut), ``text`` (may wrap) or ``num`` (right-aligned,
    rounded to ``digits`` for display; ints as they are). ``key`` names it in CSV and JSON.
    An ``optional`` column is left out of a terminal table too narrow for it (a note says so)."""

    name: str
    kind: Kind = "text"
    digits: int = 2
    key: str | None = None
    optional: bool = False
    #: a text column aligned right like the numbers (the Overall, which may say ``partial, 5/6 tasks: x``)
    right: bool = False

    @property
    def field(self) -> str:
        return self.key or self.name

    @property
    def justify(self) -> Literal["left", "right"]:
        return "right" if self.kind == "num" or self.right else "left"


@dataclass
class TextTable:
    columns: list[Col]
    rows: list[list[Value]]
    title: str | None = None
    intro: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: per row, a rich style for the terminal (e.g. "yellow" for an incomplete run)
    row_styles: list[str | None] | None = None
    #: rich style of the notes on a terminal
    note_style: str = "dim"


def display(value: Value, col: Col) -> str:
    """A value as shown to a reader: numbers rounded, ``None``/NaN as ``–``."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and col.kind == "num":
        return f"{value:.{col.digits}f}"
    if isinstance(value, int) and col.kind == "num":
        return f"{value:,}"
    return str(value)


def to_plain(t: TextTable) -> str:
    """The table as plain text, one row per line, cells separated by tabs (see the module docstring)."""
    out = [terminal(t.title)] if t.title else []
    out += [terminal(line) for line in t.intro]
    out.append("\t".join(terminal(c.name) for c in t.columns))
    out += ["\t".join(terminal(display(v, c)) for v, c in zip(row, t.columns)) for row in t.rows]
    if t.notes:
        out += ["", *(terminal(line) for line in t.notes)]
    return "\n".join(out) + "\n"


def to_markdown(t: TextTable) -> str:
    out: list[str] = []
    if t.title:
        out += [f"### {markdown(t.title)}", ""]
    for line in t.intro:
        out += [markdown(line, line_start=True), ""]
    out.append("| " + " | ".join(markdown(c.name) for c in t.columns) + " |")
    out.append("|" + "|".join("---:" if c.justify == "right" else "---" for c in t.columns) + "|")
    for row in t.rows:
        out.append("| " + " | ".join(markdown(display(v, c)) for v, c in zip(row, t.columns)) + " |")
    for line in t.notes:
        out += ["", markdown(line, line_start=True)]
    return "\n".join(out) + "\n"


def to_csv(t: TextTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([csv_cell(c.field) for c in t.columns])
    for row in t.rows:
        w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


def to_records(t: TextTable) -> list[dict[str, Value]]:
    return [{c.field: v for c, v in zip(t.columns, row)} for row in t.rows]


# ----------------------------------------------------------------------------- terminal

#: a wrapping column narrower than this is useless; below it, rows become blocks
MIN_TEXT_WIDTH = 8
#: optional columns are left out until every wrapping column can be this wide
COMFORT_TEXT_WIDTH = 16


def _cells(t: TextTable) -> list[list[str]]:
    return [[terminal(display(v, c)) for v, c in zip(row, t.columns)] for row in t.rows]


def _widths(t: TextTable, cells: list[list[str]], text_width: int = MIN_TEXT_WIDTH) -> list[int]:
    """The narrowest each column may be: ids and numbers whole, text down to ``text_width``."""
    out = []
    for j, c in enumerate(t.columns):
        longest = max([cell_len(terminal(c.name))] + [cell_len(r[j]) for r in cells])
        out.append(min(longest, text_width) if c.kind == "text" else longest)
    return out


#: columns of a rich table are separated by a divider and padding: 2 cells each (see to_rich)
_GAP = 2


def _fits(widths: list[int], width: int) -> bool:
    return sum(widths) + _GAP * (len(widths) - 1) <= width


def _drop_optional(t: TextTable, width: int) -> TextTable:
    """``t`` without as many optional columns (rightmost first) as it takes to fit ``width``."""
    keep = list(range(len(t.columns)))
    widths = _widths(t, _cells(t), COMFORT_TEXT_WIDTH)
    for j in reversed(range(len(t.columns))):
        if _fits([widths[k] for k in keep], width):
            break
        if t.columns[j].optional:
            keep.remove(j)
    if len(keep) == len(t.columns) or not _fits([widths[k] for k in keep], width):
        return t
    hidden = ", ".join(c.name for j, c in enumerate(t.columns) if j not in keep)
    return TextTable(columns=[t.columns[k] for k in keep], rows=[[r[k] for k in keep] for r in t.rows],
                     title=t.title, intro=t.intro, row_styles=t.row_styles, note_style=t.note_style,
                     notes=[*t.notes, f"Not shown at this width: {hidden} (--format md, csv or json shows every "
                                      "column)."])


def to_rich(t: TextTable, width: int) -> RenderableType:
    """The table for a terminal ``width`` columns wide (see the module docstring)."""
    t = _drop_optional(t, width)
    cells = _cells(t)
    styles = t.row_styles or [None] * len(t.rows)
    parts: list[RenderableType] = []
    title_first = bool(t.intro and t.title)  # a table with lines before it: its title above them
    if title_first:
        parts.append(rich_text(t.title or "", "bold"))
    if t.intro:
        parts += [rich_text(line) for line in t.intro]
    widths = _widths(t, cells)
    if _fits(widths, width):
        table = Table(title=rich_text(t.title) if t.title and not title_first else None, box=box.SIMPLE_HEAD,
                      pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
        for c, w in zip(t.columns, widths):
            if c.kind == "text":  # wraps, but not narrower than a number or a short word
                table.add_column(rich_text(c.name), overflow="fold", min_width=w, justify=c.justify)
            else:
                table.add_column(rich_text(c.name), justify=c.justify, no_wrap=True, overflow="fold", min_width=w)
        for row, style in zip(cells, styles):
            table.add_row(*(Text(v) for v in row), style=style)
        parts.append(table)
    else:  # too narrow for columns: one block per row, identifiers first and whole, a line per field
        if t.title and not title_first:
            parts.append(rich_text(t.title, "bold"))
        ids = [j for j, c in enumerate(t.columns) if c.kind == "id"] or [0]
        for row, style in zip(cells, styles):
            parts.append(Text(" ".join(row[j] for j in ids), style=f"bold {style or ''}".strip()))
            for j, c in enumerate(t.columns):
                if j not in ids:
                    line = Text("  " + terminal(c.name) + ": ", style="dim")
                    line.append(row[j], style=style or "")
                    parts.append(line)
    if t.notes:
        parts += [rich_text(line, t.note_style) for line in t.notes]
    return Group(*parts)


class RichTable:
    """A :class:`TextTable` as a rich renderable laid out for the width it is printed at
    (``console.print(RichTable(t))`` fits any terminal; see :func:`to_rich`)."""

    def __init__(self, table: TextTable):
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield to_rich(self.table, options.max_width)


