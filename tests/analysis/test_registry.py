"""Analyses are commands mounted from their registry; a broken or clashing one never breaks the others."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.testing import CliRunner

import mtvbench.cli as cli
from mtvbench.cli.common import new_app
from mtvbench.registry import Registry


def count_runs(run_dirs: Annotated[list[Path], typer.Argument(help="run directories")]) -> None:
    """How many run directories were given."""
    print(len(run_dirs))


def test_registered_analyses_become_commands(monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    reg: Registry = Registry("analysis")
    reg.add("count-runs", count_runs)
    reg.add("broken", "mtvbench_no_such_module:command")
    reg.add("run", count_runs)  # the name of a built-in command
    monkeypatch.setattr(cli, "ANALYSES", reg)
    app = new_app("test")
    app.command("run")(lambda: print("built-in"))
    monkeypatch.setattr(cli, "BUILT_IN", frozenset({"run"}))
    cli.mount_analyses(app)
    runner = CliRunner()
    ok = runner.invoke(app, ["count-runs", str(tmp_path), str(tmp_path)])
    assert ok.exit_code == 0 and ok.output.strip() == "2"
    broken = runner.invoke(app, ["broken"])
    assert broken.exit_code == 2 and "analysis 'broken'" in broken.output and "failed to load" in broken.output
    assert "Traceback" not in broken.output
    clash = runner.invoke(app, ["run"])
    assert clash.exit_code == 0 and clash.output.strip() == "built-in"  # not the analysis of that name
    help_text = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "How many run directories were given." in help_text


def test_the_built_in_analyses_are_mounted() -> None:
    names = {c.name for c in cli.app.registered_commands}
    assert {"report", "compare", "agreement", "stats", "scenes", "sweep"} <= names
