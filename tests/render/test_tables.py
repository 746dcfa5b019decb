"""Tables on terminals of any width: identifiers whole, numbers whole, Markdown one line per row."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from rich.console import Console

from mtvbench.render.tables import Col, RichTable, TextTable, to_csv, to_markdown, to_plain, to_records
from tests.support.hostile import ALL_IN_ONE, RAW_CONTROLS


def _render(t: TextTable, width: int) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(RichTable(t))
    return buf.getvalue()


def _random_table(rng: random.Random) -> TextTable:
    cols = [Col(f"c{j}" + "x" * rng.randint(0, 10), rng.choice(["id", "text", "num"]))
            for j in range(rng.randint(1, 6))]
    rows = []
    for _ in range(3):
        row = []
        for c in cols:
            if c.kind == "num":
                row.append(rng.choice([rng.random() * 1000, None, 12345678]))
            elif c.kind == "id":
                row.append("id-" + "".join(rng.choice("abcdef/_.") for _ in range(rng.randint(1, 40))))
            else:
                row.append(" ".join("w" * rng.randint(1, 12) for _ in range(rng.randint(1, 6))))
        rows.append(row)
    return TextTable(cols, rows)


@pytest.mark.parametrize("width", [40, 60, 80, 100, 140])
def test_ids_and_numbers_are_never_cut_at_any_width(width):
    rng = random.Random(width)
    for _ in range(60):
        t = _random_table(rng)
        lines = _render(t, width).splitlines()
        assert all(len(line) <= width for line in lines)
        for row in t.rows:
            for c, v in zip(t.columns, row):
                if c.kind == "id" and len(v) <= width:
                    assert any(v in line for line in lines), (v, width)
                if c.kind == "num" and v is not None:
                    shown = f"{v:,}" if isinstance(v, int) else f"{v:.2f}"
                    assert any(shown in line for line in lines), (shown, width)


def test_narrow_terminal_drops_optional_columns_then_shows_blocks():
    t = TextTable([Col("name", "id"), Col("about", optional=True), Col("score", "num")],
                  [["a-very-long-identifier-of-a-model", "some words " * 5, 1.5]])
    wide = _render(t, 120)
    assert "about" in wide and "Not shown" not in wide
    mid = _render(t, 50)
    assert "a-very-long-identifier-of-a-model" in mid and "Not shown at this width: about" in mid
    narrow = _render(t, 38)  # cannot fit even the id and the number as columns: one block per row
    assert "a-very-long-identifier-of-a-model" in narrow and "score: 1.50" in narrow


def test_markdown_rows_stay_one_line_and_csv_json_keep_values():
    t = TextTable([Col("name", "id"), Col("n", "num"), Col("note")],
                  [[ALL_IN_ONE, -3.25, ALL_IN_ONE], ["=1+1", 12345, None]],
                  intro=["# not a heading\nnor | a row"], notes=[ALL_IN_ONE])
    md = to_markdown(t)
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert len(rows) == 4 and all(line.endswith("|") for line in rows)
    assert "| -3.25 |" in rows[2] and "| 12,345 |" in rows[3]
    assert md.splitlines()[0].startswith("\\#")
    back = list(csv.reader(io.StringIO(to_csv(t))))
    assert back[1][1] == "-3.2500" and back[2][0] == "'=1+1" and back[2][1] == "12345"
    assert json.loads(json.dumps(to_records(t)))[0]["name"] == ALL_IN_ONE


def test_plain_text_is_one_tab_separated_line_per_row_with_nothing_escaped_as_markdown():
    """What a pipe gets: ids as typed (``InternVL3_5``, ``<= 720``), never wrapped, and untrusted text
    that can neither split a row (tabs, line breaks) nor drive the terminal (control codes)."""
    long_id = "hf:OpenGVLab/InternVL3_5-38B" + "-x" * 60
    t = TextTable([Col("preset", "id"), Col("frame size"), Col("n", "num")],
                  [[long_id, "longer side <= 720", 1234.5], [ALL_IN_ONE, "a\tb\nc", None]],
                  title="Presets", notes=["a note <= 1", "INCOMPLETE: x"])
    lines = to_plain(t).splitlines()
    assert lines[0] == "Presets" and lines[1] == "preset\tframe size\tn"
    assert lines[2] == f"{long_id}\tlonger side <= 720\t1234.50"
    assert len(lines[3].split("\t")) == 3 and lines[3].endswith("\t–")
    assert lines[3].split("\t")[1] == "a\\tb\\nc"  # shown as escapes: the row stays one line of 3 cells
    assert not any(c in to_plain(t) for c in RAW_CONTROLS)
    assert "[bold]b[/bold]" in lines[3] and "\\_" not in to_plain(t) and "&lt;" not in to_plain(t)
    assert lines[-2:] == ["a note <= 1", "INCOMPLETE: x"] and lines[-3] == ""
