"""A corpus of hostile text: whatever reaches an output sink must come out literally.

Each entry attacks one sink: rich markup, HTML inside ``<script>``, spreadsheet formulas,
matplotlib mathtext, Markdown table cells, LaTeX, terminal control codes, layout.
"""

from __future__ import annotations

import re

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
