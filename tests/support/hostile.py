"""A corpus of hostile text: whatever reaches an output sink must come out literally.

Each entry attacks one sink: rich markup, HTML inside ``<script>``, spreadsheet formulas,
matplotlib mathtext, Markdown table cells, LaTeX, terminal control codes, layout.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

MARKUP = "[/x] [bold]b[/bold] [link=http://x]l[/link]"
SCRIPT = "<!--<script> </script><b>bold</b> & <img src=x onerror=alert(1)>"
FORMULA = "=cmd|' /C calc'!A0"
MATH = "$\\foo$ $x^2$"
PIPE = "a | b \\| c"
NEWLINE = "line1\nline2\r\nline3"
SEPARATORS = "para\u2028graph\u2029end"
ANSI = "\x1b[31mred\x1b[0m\x07\rback"
LATEX = "# $ % & ~ _ ^ \\ { } [x]"
LONG = "x" * 300

CORPUS = [MARKUP, SCRIPT, FORMULA, MATH, PIPE, NEWLINE, SEPARATORS, ANSI, LATEX, LONG,
          "+1+2", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "![img](http://x/y.png)", "**bold** _it_ `code`"]

#: one string with most attacks at once (a model name, a reply)
ALL_IN_ONE = " ".join([MARKUP, SCRIPT, FORMULA, MATH, PIPE, NEWLINE, SEPARATORS, ANSI, LATEX])

#: control characters that must never reach a terminal raw
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\u2028", "\u2029")

_LATEX_ESCAPES = re.compile(r"\\textasciitilde\{\}|\\textasciicircum\{\}|\\textbackslash\{\}|\\textless\{\}"
                            r"|\\textgreater\{\}|\\textbar\{\}|\\[&%$#_{}]|\{\[\}|\{\]\}")


def latex_unescaped(text: str) -> set[str]:
    """LaTeX special characters left in ``text`` once every escape sequence is removed."""
    return set(_LATEX_ESCAPES.sub("", text)) & set("&%$#_{}~^\\[]\n\r")


def markdown_rows(text: str) -> list[list[str]]:
    """Cells of every Markdown table row in ``text`` (split on unescaped pipes); a row cut
    by wrapping would show up as a line with fewer cells."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.replace("\\\\", "\0"))
            rows.append([c.strip().replace("\0", "\\\\") for c in cells[1:-1]])
    return rows


class PageReader(HTMLParser):
    """What a browser would see: table rows (cells as text, ``<br>`` as a newline), every
    start tag, the text of every ``<script>``, and the tags that follow the first script."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self.after_script: list[str] = []
        self._in_script = False
        self._cell: list[str] | None = None
        self.feed(page)
        self.close()

    @property
    def cells(self) -> list[str]:
        return [c for row in self.rows for c in row]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if self.scripts and not self._in_script:
            self.after_script.append(tag)
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        elif self._cell is not None:
            self._cell.append(data)
