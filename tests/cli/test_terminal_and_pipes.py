"""Output that fits an 80-column terminal and stays valid Markdown in a pipe.

The commands run for real with ``COLUMNS=80`` and their output captured (not a terminal):
without ``--format`` they print plain Markdown, one line per table row; with ``--format
table`` no line is wider than the terminal and no identifier a user types is cut.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from typer.testing import CliRunner

from mtvbench import __version__
from mtvbench.cli import app
from mtvbench.models.presets import list_presets
from tests.support.datasets import make_dataset
from tests.support.hostile import markdown_rows
from tests.support.openai_server import LoopbackServer
from tests.support.runs import make_store_run

runner = CliRunner()
NARROW = {"COLUMNS": "80"}


def _one_line_rows(stdout: str, n_rows: int) -> None:
    rows = markdown_rows(stdout)
    assert len(rows) == n_rows, stdout
    assert len({len(r) for r in rows}) == 1, stdout  # a wrapped row would have fewer cells
    assert all(line.endswith("|") for line in stdout.splitlines() if line.startswith("|"))


def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout == f"mtvbench {__version__}\n"


def test_models_at_80_columns_keeps_every_preset_name_whole():
    r = runner.invoke(app, ["models", "--format", "table"], env=NARROW)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    for p in list_presets():
        assert any(re.match(rf"{re.escape(p.name)}\s", line) for line in lines), p.name
    assert "Not shown at this width" in r.stdout  # detail columns left out, and said so


def test_models_piped_is_markdown_and_csv_json_are_complete():
    presets = list_presets()
    r = runner.invoke(app, ["models"], env=NARROW)
    _one_line_rows(r.stdout, len(presets) + 2)
    assert [row[0] for row in markdown_rows(r.stdout)[2:]] == [p.name for p in presets]
    c = list(csv.DictReader(io.StringIO(runner.invoke(app, ["models", "--format", "csv"]).stdout)))
    assert [x["name"] for x in c] == [p.name for p in presets] and c[0]["generation"]
    j = json.loads(runner.invoke(app, ["models", "--format", "json"]).stdout)
    assert [x["name"] for x in j] == [p.name for p in presets]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipes")
    data = make_dataset(tmp / "data")
    a = make_store_run(data, tmp / "a", model="a-model-with-a-rather-long-name/of-some-org", judge_runs=2,
                       bootstrap=20)
    b = make_store_run(data, tmp / "b", model="b", answer=lambda d, k, g: g if k == 3 else "No idea.", bootstrap=20)
    return tmp, data, a, b


def test_stats_piped_and_at_80_columns(two_runs):
    _, data, _, _ = two_runs
    r = runner.invoke(app, ["stats", str(data)], env=NARROW)
    assert r.exit_code == 0, r.output
    _one_line_rows(r.stdout, 2 + 7)
    t = runner.invoke(app, ["stats", str(data), "--format", "table"], env=NARROW)
    assert all(len(line) <= 80 for line in t.stdout.splitlines()) and "MT-Video-Bench (all)" in t.stdout


def test_agreement_piped_and_csv(two_runs):
    tmp, _, a, b = two_runs
    human = tmp / "human.csv"
    lines = [json.loads(x) for x in (a / "responses.jsonl").read_text().splitlines()]
    human.write_text("turn_id,score\n" + "".join(f"{x['turn_id']},{x['turn_score'] - 10 * (i % 3)}\n"
                                                  for i, x in enumerate(lines) if x["scored"]))
    r = runner.invoke(app, ["agreement", str(a), str(b), "--human", str(human)], env=NARROW)
    assert r.exit_code == 0, r.output
    rows = markdown_rows(r.stdout)
    assert len(rows) == 8  # two tables of a header, a rule and two judges
    assert all(line.endswith("|") for line in r.stdout.splitlines() if line.startswith("|"))
    c = list(csv.DictReader(io.StringIO(runner.invoke(app, ["agreement", str(a), str(b), "--human", str(human),
                                                            "--format", "csv"]).stdout)))
    assert len(c) == 2 and c[0]["judge"] and c[0]["n"] == "12" and c[0]["level"] == "turn"


def test_report_leaderboard_piped_and_as_table(two_runs):
    tmp, _, a, b = two_runs
    r = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp / "rep"), "--thumbnails", "0"], env=NARROW)
    assert r.exit_code == 0, r.output
    _one_line_rows(r.stdout, 4)
    assert "wrote" not in r.stdout  # messages go to stderr: the Markdown can be redirected as is
    t = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp / "rep"), "--thumbnails", "0", "--format",
                            "table"], env=NARROW)
    lines = t.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any("a-model-with-a-rather-long-name/of-some-org" in line for line in lines)


def test_sweep_prints_rounded_numbers(tmp_path):
    data = make_dataset(tmp_path / "data")
    with LoopbackServer() as srv:  # echo answers: every turn scores 1/5, i.e. 20.000000000000004 unrounded
        r = runner.invoke(app, ["sweep", "--data", str(data), "--model", "openai:m", "--judge", "offline",
                                "--model-base-url", srv.url,
                                "--out", str(tmp_path / "sw"), "--frames", "2,3", "--judge-runs", "1",
                                "--cache-dir", str(tmp_path / "cache")], env=NARROW)
    assert r.exit_code == 0, r.output
    assert not re.search(r"\d\.\d{5,}", r.output), r.output
    assert "frames=2: Overall 20.00 (complete" in r.output
    _one_line_rows(r.stdout, 4)
