"""One escaping function per output sink, for text mtvbench does not control.

Model and judge names, run names, file paths, annotator names, questions, answers, judge
replies and error messages come from users, datasets and providers. Whatever they contain,
they are shown as the literal text they are, in every sink:

==================  ===================================================================
sink                function
==================  ===================================================================
terminal (rich)     :func:`rich_text` (a :class:`rich.text.Text`: never parsed as markup)
                    built on :func:`terminal` (control characters and ANSI escape codes
                    shown as ``\\x1b``-style escapes, so they cannot drive the terminal)
Markdown            :func:`markdown` (HTML specials as entities; ``|``, backslash and
                    inline-markup characters backslash-escaped; newlines as ``<br>``)
CSV                 :func:`csv_cell` (OWASP: a text cell starting with ``= + - @``, tab or
                    CR gets a leading ``'``; numbers stay numbers)
LaTeX               :func:`latex` (the ten specials, plus ``< > | [ ]``; newlines as spaces)
HTML text/attrs     :func:`html`
JSON in ``<script>`` :func:`json_for_script` (``< > &`` and U+2028/2029 as ``\\uXXXX``)
plot labels         :func:`plot_label` (mathtext is switched off by the plotting code;
                    this makes controls visible and caps the length)
==================  ===================================================================

Our own markup (bold marks, ``<br>``, table pipes) is added *around* escaped text, never
inside it.
"""

from __future__ import annotations

import html as _html
import json
import math
import re
from typing import Any

from rich.text import Text

# C0 and C1 control characters, DEL, the invisible characters that reorder or break text (bidi
# embeddings/overrides/isolates, line and paragraph separators), and lone surrogates (no terminal or file
# can encode them: shown as their escape, as mtvbench.util.storable explains)
_UNICODE_INVISIBLE = "\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
_INVISIBLE = "\x00-\x08\x0b-\x1f\x7f-\x9f" + _UNICODE_INVISIBLE
_CONTROL_ALL = re.compile(f"[\t\n{_INVISIBLE}]")
_CONTROL_KEEP_LINES = re.compile(f"[{_INVISIBLE}]")
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x85\u2028\u2029]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object, *, multiline: bool = False) -> str:
    """Text for a terminal: control characters (ESC of ANSI codes, CR, BEL, bidi overrides,
    U+2028, ...) become visible escapes such as ``\\x1b``. Newlines and tabs are kept only
    with ``multiline`` (a message, a system prompt); otherwise they show as ``\\n``/``\\t``."""
    s = str(text)
    if multiline:
        s = s.replace("\r\n", "\n")
        return _CONTROL_KEEP_LINES.sub(_visible, s)
    return _CONTROL_ALL.sub(_visible, s)


def rich_text(text: object, style: str | None = None, *, multiline: bool = False) -> Text:
    """A rich ``Text`` showing ``text`` literally: ``[bold]``/``[/x]`` are characters, not markup."""
    return Text(terminal(text, multiline=multiline), style=style or "")


# characters that start inline Markdown (emphasis, code, links, images, strikethrough, table
# cells, GitHub's $math$) and the backslash that escapes them
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~!$])")
_MD_LINE_START = re.compile(r"^([#+=-]|\d+(?=[.)]))")


def markdown(text: object, *, line_start: bool = False) -> str:
    """Text for a Markdown table cell or inside a line: shown literally by any CommonMark/GFM
    renderer and kept on one line (a newline becomes ``<br>``), so it can never end a table
    row or open an HTML element, a link, an image or math. With ``line_start`` (the text
    begins a paragraph) it cannot start a heading or a list either."""
    s = _html.escape(str(text), quote=False)
    s = _MD_PUNCT.sub(r"\\\1", s)
    if line_start:
        s = _MD_LINE_START.sub(lambda m: m.group() + "\\" if m.group()[0].isdigit() else "\\" + m.group(), s)
    s = _LINE_BREAK.sub("<br>", s)
    return _CONTROL_ALL.sub(_visible, s)


#: first characters that make a spreadsheet read a cell as a formula (OWASP CSV injection)
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CSV_CONTROL = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_UNICODE_INVISIBLE}]")  # not tab, CR, LF


def csv_cell(value: object, digits: int = 4) -> str:
    """A CSV cell: ``None`` is empty, numbers are written as numbers (``digits`` decimals for
    floats; a negative number stays numeric), and text that a spreadsheet would run as a
    formula gets a leading ``'`` (OWASP). Control characters other than tab and line breaks
    are made visible, line breaks become LF; the csv module quotes the rest."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.{digits}f}"
    s = _CSV_CONTROL.sub(_visible, str(value))
    s = "'" + s if s.startswith(_CSV_FORMULA_START) else s
    # a lone CR is not quoted by csv writers ending lines with LF: make every line break LF
    return s.replace("\r\n", "\n").replace("\r", "\n")


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
                  # a "[" right after \\ or \midrule would be read as their optional argument
                  "[": "{[}", "]": "{]}"}


def latex(text: object) -> str:
    """Text for LaTeX: the ten special characters escaped, ``< > |`` as text symbols,
    brackets braced; line breaks and controls become spaces (a blank line would end the
    paragraph inside a table)."""
    s = _LINE_BREAK.sub(" ", str(text))
    s = _CONTROL_ALL.sub(" ", s)
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in s)


def html(text: object) -> str:
    """Text for HTML element content or a quoted attribute value."""
    return _html.escape(str(text), quote=True)


_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(obj: Any) -> str:
    """JSON to embed in ``<script type="application/json">``: no ``<``, ``>`` or ``&`` at all
    (so neither ``</script>`` nor ``<!--`` can change how the HTML parser reads the page) and
    no raw U+2028/2029. ``JSON.parse`` of the element's text gives ``obj`` back unchanged."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # these characters occur only inside JSON strings, where \\uXXXX means the same character
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)


def plot_label(text: object, max_len: int = 60) -> str:
    """Text for a plot title, tick or legend label. The plotting code draws every such text
    with mathtext and usetex off (``$\\foo$`` is shown as typed); here control characters
    become visible, very long labels are shortened with an ellipsis, and a leading ``_``
    (which hides a legend entry in matplotlib) is kept visible."""
    s = terminal(text)
    s = s if len(s) <= max_len else s[: max_len - 1] + "…"
    return " " + s if s.startswith("_") else s
