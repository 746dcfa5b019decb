"""Every sink's escaping function, fed the hostile corpus and checked with a real reader of
that sink (rich, a Markdown renderer + html.parser, the csv module, a LaTeX scanner, the
HTML parser on a <script> block, matplotlib)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from rich.console import Console

from mtvbench.util.escape import csv_cell, html, json_for_script, latex, markdown, plot_label, rich_text, terminal
from tests.support.hostile import ALL_IN_ONE, CORPUS, MATH, RAW_CONTROLS, PageReader, latex_unescaped


@pytest.mark.parametrize("text", CORPUS + [ALL_IN_ONE])
def test_terminal_shows_markup_literally_and_no_control_codes(text):
    buf = io.StringIO()
    Console(file=buf, width=400, color_system=None, highlight=False).print(rich_text(text))
    out = buf.getvalue()
    assert not any(c in out for c in RAW_CONTROLS)
    # the visible form of the text is printed whole, markup included
    shown = terminal(text)
    assert shown.replace(" ", "") in out.replace(" ", "").replace("\n", "")
    if "[/x]" in text:
        assert "[/x]" in out and "[bold]" in out


def test_terminal_keeps_lines_only_when_asked():
    assert terminal("a\nb\x1b[2J") == "a\\nb\\x1b[2J"
    assert terminal("a\nb\x1b[2J", multiline=True) == "a\nb\\x1b[2J"


@pytest.mark.parametrize("text", CORPUS + [ALL_IN_ONE])
def test_markdown_cell_renders_as_the_same_text_in_one_cell(text):
    from markdown_it import MarkdownIt  # rich's own Markdown parser, GFM tables enabled

    md = f"| name | n |\n|---|---|\n| {markdown(text)} | 1 |\n"
    assert md.count("\n") == 3  # the row stays one line
    p = PageReader(MarkdownIt("commonmark").enable("table").render(md))
    assert p.rows[1][1] == "1" and len(p.rows[1]) == 2  # no extra cell, the row is not cut
    # the only tags are the table's own and <br> for line breaks: no <script>, <img>, <a>, <em>
    assert set(p.tags) <= {"table", "thead", "tbody", "tr", "th", "td", "br"}
    # shown: the same text, line breaks as <br>, other control characters as visible escapes
    expected = "\n".join(terminal(part) for part in re.split("\r\n|[\n\r\x0b\x0c\x85\u2028\u2029]", text))
    assert p.rows[1][0] == expected


def test_markdown_line_start_cannot_open_a_heading_or_list():
    assert markdown("# title", line_start=True) == "\\# title"
    assert markdown("- item", line_start=True) == "\\- item"
    assert markdown("1. item", line_start=True) == "1\\. item"
    assert markdown("# title") == "# title"  # inside a cell a '#' is just a character


def test_csv_cells_neutralise_formulas_and_keep_numbers():
    row = [csv_cell(x) for x in CORPUS] + [csv_cell(-3.5), csv_cell(-2), csv_cell(None), csv_cell(float("nan"))]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    back = next(csv.reader(io.StringIO(buf.getvalue())))
    assert len(back) == len(row)
    for original, cell in zip(CORPUS, back):
        if original[0] in "=+-@\t\r":
            assert cell == "'" + original.replace("\r", "\n"), original
        else:
            assert cell[0] not in "=+-@\t\r"
    assert back[-4:] == ["-3.5000", "-2", "", ""]  # negative numbers stay numeric


@pytest.mark.parametrize("text", CORPUS + [ALL_IN_ONE])
def test_latex_leaves_no_special_character_unescaped(text):
    out = latex(text)
    assert not latex_unescaped(out), out
    assert "\x1b" not in out and "\u2028" not in out


def test_json_in_script_cannot_end_or_comment_out_the_element():
    payload = {"replies": CORPUS + [ALL_IN_ONE], "key <!--": "</script>"}
    text = json_for_script(payload)
    assert not set(text) & set("<>&\u2028\u2029")
    page = f'<script id="d" type="application/json">{text}</script><p id="after">x</p><script>1</script>'
    p = PageReader(page)
    assert len(p.scripts) == 2 and p.after_script == ["p", "script"]  # the page goes on after the data block
    assert json.loads(p.scripts[0]) == payload


def test_html_escapes_text_and_attributes():
    assert html('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"


def test_plot_labels_are_literal(tmp_path):
    pytest.importorskip("matplotlib")
    from mtvbench.render import plots

    names = {MATH: [10.0, None], "_hidden": [20.0, 30.0], ALL_IN_ONE: [None, 40.0]}
    png = plots.grouped_bars([MATH, "[/x]"], names, title=MATH, errors={MATH: [(5.0, 15.0), None]})
    assert png[:4] == b"\x89PNG"
    png = plots.line_plot([MATH, "b"], names, title=MATH, xlabel=MATH, counts=[1, 2])
    assert png[:4] == b"\x89PNG"
    assert plot_label("_x") == " _x" and len(plot_label("y" * 500)) == 60
