"""A preset run with preset values overridden is marked "modified" in every table and report.

A real `run` of the `qwen3-vl-8b-instruct@openai` preset against the loopback OpenAI-compatible
server, with `--temperature 0` and `--frames 2` (both differ from the preset), next to the same
preset run with only its URL and served name given (not a preset value). Then `score`, `report`
(leaderboard md/csv/tex, report.html), `compare` and `sweep` are read back.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer

runner = CliRunner()
PRESET = "qwen3-vl-8b-instruct@openai"
MARKED = f"{PRESET} (modified: temperature, frames)"


@pytest.fixture(scope="module")
def preset_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("preset-marks")
    data = make_dataset(tmp / "data")
    base = ["run", "--data", str(data), "--model", PRESET, "--judge", "offline", "--judge-runs", "1", "--quiet",
            "--cache-dir", str(tmp / "cache")]
    with LoopbackServer() as srv:
        mod = runner.invoke(app, [*base, "--out", str(tmp / "mod"), "--model-base-url", srv.url,
                                  "--temperature", "0", "--frames", "2"], env={"COLUMNS": "200"})
        plain = runner.invoke(app, [*base, "--out", str(tmp / "plain"), "--model-base-url", srv.url,
                                    "--model-option", "served_name=m", "--model-option", "max_retries=1"],
                              env={"COLUMNS": "200"})
    assert mod.exit_code == 0, mod.output
    assert plain.exit_code == 0, plain.output
    assert MARKED in mod.stdout  # the run's own table
    return tmp, data, tmp / "mod", tmp / "plain"


def test_config_and_scores_record_the_overridden_values(preset_runs):
    _, _, mod, plain = preset_runs
    assert yaml.safe_load((mod / "config.yaml").read_text())["preset_overrides"] == ["temperature", "frames"]
    assert json.loads((mod / "scores.json").read_text())["preset_overrides"] == ["temperature", "frames"]
    assert yaml.safe_load((plain / "config.yaml").read_text())["preset_overrides"] == []
    assert f"| {MARKED} |" in (mod / "leaderboard.md").read_text()
    assert f"| {PRESET} |" in (plain / "leaderboard.md").read_text()


def test_score_marks_the_run_in_every_format(preset_runs):
    _, _, mod, _ = preset_runs
    for fmt in ("plain", "md", "csv", "table"):
        r = runner.invoke(app, ["score", str(mod), "--format", fmt], env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        assert MARKED in r.stdout, (fmt, r.stdout)


def test_report_and_compare_mark_the_modified_run_only(preset_runs):
    tmp, _, mod, plain = preset_runs
    out = tmp / "rep"
    r = runner.invoke(app, ["report", str(mod), str(plain), "--out", str(out), "--thumbnails", "0",
                            "--bootstrap", "20"])
    assert r.exit_code == 0, r.output
    assert f"\n{MARKED}\t" in r.stdout and f"\n{PRESET}\t" in r.stdout
    assert f"| {MARKED} |" in (out / "leaderboard.md").read_text()
    names = [row["model"] for row in csv.DictReader((out / "leaderboard.csv").open())]
    assert sorted(names) == sorted([MARKED, PRESET])
    assert "qwen3-vl-8b-instruct@openai (modified: temperature, frames)" in (out / "leaderboard.tex").read_text()
    assert MARKED in (out / "report.html").read_text()
    c = runner.invoke(app, ["compare", str(plain), str(mod), "--bootstrap", "50"])
    assert f"A = {PRESET}; B = {MARKED}." in c.stdout, c.output


def test_sweep_marks_values_overridden_besides_the_swept_one_and_limit_runs_partial(preset_runs):
    tmp, data, _, _ = preset_runs
    out = tmp / "sweep"
    with LoopbackServer() as srv:
        r = runner.invoke(app, ["sweep", "--data", str(data), "--model", PRESET, "--judge", "offline",
                                "--model-base-url", srv.url, "--out", str(out), "--frames", "2,3",
                                "--judge-runs", "1", "--limit", "1", "--cache-dir", str(tmp / "cache")])
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in r.stdout.splitlines() if line.startswith(("2\t", "3\t"))]
    assert [row[1].split(":")[0] for row in rows] == ["partial, --limit 1"] * 2
    assert all(row[-2] == "complete, partial (--limit 1)" for row in rows)
    assert "PARTIAL: made with --limit 1" in r.stdout
    assert "modified" not in r.stdout  # frames is the swept setting: no other preset value changed
    for f in ("sweep.md", "sweep.html"):
        assert "PARTIAL: made with --limit 1" in (out / f).read_text(), f
    assert {row["limit"] for row in csv.DictReader((out / "sweep.csv").open())} == {"1"}
    assert {row["preset_overrides"] for row in csv.DictReader((out / "sweep.csv").open())} == {"frames"}
