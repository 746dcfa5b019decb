"""Analyses are commands mounted from their registry; a broken or clashing one never breaks the others."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.testing import CliRunner

import mtvbench.cli as cli
from mtvbench.registry import Registry


def count_runs(run_dirs: Annotated[list[Path], typer.Argument(help="run directories")]) -> None:
    """How many run directories were given."""
    print(len(run_dirs))


def test_registered_analyses_become_commands(monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    import mtvbench.analysis.registry as analyses

    reg: Registry = Registry("analysis")
    reg.add("count-runs", count_runs)
    reg.add("broken", "mtvbench_no_such_module:command")
    reg.add("run", count_runs)  # the name of a built-in command
    monkeypatch.setattr(analyses, "ANALYSES", reg)
    runner = CliRunner()
    ok = runner.invoke(cli.app, ["count-runs", str(tmp_path), str(tmp_path)])
    assert ok.exit_code == 0 and ok.output.strip() == "2"
    broken = runner.invoke(cli.app, ["broken"])
    assert broken.exit_code == 2 and "analysis 'broken'" in broken.output and "failed to load" in broken.output
    assert "Traceback" not in broken.output
    clash = runner.invoke(cli.app, ["run", "--help"], env={"COLUMNS": "200"})
    assert clash.exit_code == 0 and "Evaluate a model" in clash.output  # the built-in, not the analysis
    help_text = runner.invoke(cli.app, ["--help"], env={"COLUMNS": "200"}).output
    assert "How many run directories were given." in help_text
    assert "(failed to load" in help_text  # the broken one is listed, saying why


def test_the_built_in_analyses_are_mounted() -> None:
    names = set(cli.command_names())
    assert {"report", "compare", "agreement", "stats", "scenes", "sweep", "estimate"} <= names
