"""Messages (errors, hints, notes) print untrusted text literally: no markup, no control codes."""

from __future__ import annotations

from typer.testing import CliRunner

from mtvbench.cli.common import new_app
from mtvbench.errors import InputError, MissingExtraError
from mtvbench.render.console import note
from tests.support.hostile import ANSI, MARKUP, RAW_CONTROLS

app = new_app("test")


@app.command("extra")
def _extra() -> None:
    raise MissingExtraError("scene detection", "build", "scenedetect")


@app.command("bad")
def _bad() -> None:
    note("note", f"file {MARKUP} {ANSI}")
    raise InputError(f"data/{MARKUP}.json: record 3, field 'User': {ANSI}")


def test_missing_extra_hint_keeps_the_brackets():
    r = CliRunner().invoke(app, ["extra"])
    assert r.exit_code == 2
    assert "pip install 'mtvbench[build]'" in r.output and "mtvbench[build]" in r.output


def test_error_and_note_text_is_literal():
    r = CliRunner().invoke(app, ["bad"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.count(MARKUP) == 2  # [/x] and [bold] printed as typed, not parsed (no crash)
    assert "\\x1b[31mred" in r.output and not any(c in r.output for c in RAW_CONTROLS)
