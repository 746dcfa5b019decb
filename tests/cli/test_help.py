"""``--help`` reads at 80 columns, a closed stdout ends a command quietly, and ``--version`` is instant.

Every command's help is rendered for real (``COLUMNS=80``, output captured, not a terminal): no
line is wider than the terminal, no option name is cut, options are in panels by topic (``run``'s
from its settings' fields), defaults are shown, metavars are words (no ``<bool>``), docstrings are
re-flowed. The closed-stdout and import checks run ``python -m mtvbench`` as a user does.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import mtvbench.cli as cli
from mtvbench.cli.help import paragraphs, summary
from mtvbench.config.runconfig import RUN_PANELS
from mtvbench.run.flags import run_flags

runner = CliRunner()
NARROW = {"COLUMNS": "80"}
SRC = Path(cli.__file__).resolve().parents[2]


def _commands(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    for name in command.list_commands(None):  # type: ignore[attr-defined]
        sub = command.get_command(None, name)  # type: ignore[attr-defined]
        if hasattr(sub, "list_commands"):
            yield (*path, name), sub
            yield from _commands(sub, (*path, name))
        else:
            yield (*path, name), sub


ALL_COMMANDS = list(_commands(typer.main.get_command(cli.app)))


def _help(path: tuple[str, ...], columns: int = 80) -> str:
    r = runner.invoke(cli.app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, (path, r.output)
    return r.stdout


@pytest.mark.parametrize("path", [p for p, _ in ALL_COMMANDS], ids=" ".join)
def test_every_help_fits_80_columns_with_every_option_name_whole(path: tuple[str, ...]) -> None:
    command = dict(ALL_COMMANDS)[path]
    text = _help(path)
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "…" not in text, text  # nothing cut
    assert not re.search(r"<(bool|str|int|float|path|list\[[a-zA-Z]+\])>", text, re.I), text
    for param in command.params:  # type: ignore[attr-defined]
        if getattr(param, "hidden", False) or param.param_type_name == "argument":
            continue
        for opt in param.opts:
            assert re.search(rf"(^|[\s,\[])({re.escape(opt)}|--\[no-\]{re.escape(opt[2:])})([\s,]|$)", text,
                             re.M), (path, opt, text)


def test_run_help_has_panels_by_topic_in_order_each_flag_in_its_own() -> None:
    text = _help(("run",))
    titles = re.findall(r"^╭─ (.+?) ─", text, re.M)
    assert titles[: len(RUN_PANELS)] == list(RUN_PANELS), titles
    blocks = dict(zip(titles, re.split(r"^╭─ .+$", text, flags=re.M)[1:]))
    flags = run_flags()
    assert all(f.panel in RUN_PANELS for f in flags), [f.name for f in flags if f.panel not in RUN_PANELS]
    for f in flags:
        assert re.search(rf"│ {re.escape(f.name)}[ │]", blocks[f.panel]), (f.name, f.panel)


def test_run_help_shows_every_default() -> None:
    text = " ".join(line.strip("│ ") for line in _help(("run",), columns=250).splitlines())
    with_default = [f for f in run_flags() if f.default is not None]
    assert {f.name for f in with_default} >= {"--frames", "--concurrency", "--judge-runs", "--context"}
    for f in with_default:
        assert re.search(rf"{re.escape(f.name)} .*?\[default: {re.escape(f.default)}\]", text), f.name
    assert "[default: 128]" in text and "[default: 16]" in text and "[default: 3]" in text


def test_docstrings_are_reflowed_not_broken_where_the_source_breaks() -> None:
    """A paragraph of a command's help is one paragraph, wrapped at the terminal's width: at 250 columns
    each paragraph of every command's help is on one line."""
    for path, command in ALL_COMMANDS:
        text = _help(path, columns=250)
        for paragraph in paragraphs(command.help):  # type: ignore[attr-defined]
            if "\n" not in paragraph and len(paragraph) < 240:
                assert paragraph in text.splitlines(), (path, paragraph)


def test_each_option_has_its_own_examples() -> None:
    flags = {f.name: f.help for f in run_flags()}
    examples = {name: h.partition("e.g.")[2] for name, h in flags.items() if "e.g." in h}
    assert examples["--model-option"] and examples["--judge-option"]
    assert examples["--model-option"] != examples["--judge-option"]
    assert "served_name" in examples["--model-option"]


def test_the_command_list_names_each_command_by_its_own_help() -> None:
    """``mtvbench --help`` lists the commands without importing them: its lines are those of each
    command's own help."""
    for name in cli.COMMANDS:
        command = cli.load_command(name)
        assert cli.SUMMARIES[name] == summary(command.help), name
    for name in set(cli.command_names()) - set(cli.COMMANDS):
        if name in cli.SUMMARIES:
            assert cli.SUMMARIES[name] == summary(cli.load_command(name).help), name
    text = " ".join(runner.invoke(cli.app, ["--help"], env={"COLUMNS": "300"}).stdout.split())
    for name in cli.command_names():
        assert name in text


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "80"}


@pytest.mark.parametrize("args", [["run", "--help"], ["models"], ["--version"], ["--help"], ["cache", "--help"]],
                         ids=" ".join)
def test_a_closed_stdout_ends_the_command_quietly(args: list[str]) -> None:
    """``mtvbench run --help | head -3``, ``mtvbench models | true``: the reader goes away; the command
    ends by SIGPIPE (or 0 when all was written first), nothing on stderr."""
    p = subprocess.Popen(_python("-m", "mtvbench", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=_env())
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # before anything is read: every write fails
    err = p.stderr.read()
    code = p.wait(timeout=120)
    assert code in (0, -signal.SIGPIPE), (code, err)
    assert err == b"", err


def _imported(*args: str) -> set[str]:
    r = subprocess.run(_python("-X", "importtime", "-m", "mtvbench", *args), capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}


def test_version_imports_no_heavy_module_and_help_no_media_or_network_module() -> None:
    version = _imported("--version")
    assert version, "python -X importtime printed nothing"
    assert not {"av", "numpy", "httpx", "pydantic", "rich", "yaml"} & version, sorted(version)
    own = sorted(m for m in version if m.startswith("mtvbench."))
    assert all(m.split(".")[1] in ("cli", "errors", "_version") for m in own), own  # no command module
    top_help = _imported("--help")
    assert not {"av", "numpy", "httpx"} & top_help, sorted(top_help)
