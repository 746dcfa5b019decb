"""Output that fits an 80-column terminal, and plain text a person can grep in a pipe.

The commands run for real with ``COLUMNS=80`` and their output captured (not a terminal):
without ``--format`` they print plain text, one tab-separated line per table row, nothing
escaped as Markdown and nothing wrapped; ``--format md`` gives Markdown, one line per row;
with ``--format table`` no line is wider than the terminal and no identifier a user types is cut.
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


def plain_rows(stdout: str) -> list[list[str]]:
    """The cells of every tab-separated line (the header and the rows of plain tables)."""
    return [line.split("\t") for line in stdout.splitlines() if "\t" in line]


def _plain_table(stdout: str, n_rows: int) -> list[list[str]]:
    """Plain text: ``n_rows`` lines (header included) with the same number of tab-separated cells,
    nothing escaped as Markdown."""
    rows = plain_rows(stdout)
    assert len(rows) == n_rows, stdout
    assert len({len(r) for r in rows}) == 1, stdout  # a wrapped row would have fewer cells
    assert not any(line.startswith("|") for line in stdout.splitlines()) and "\\_" not in stdout, stdout
    return rows


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
        # the checkpoint id whole on one line: the row wraps, not the id
        assert any(p.spec() in line for line in lines), p.spec()


def test_models_piped_is_plain_text_a_person_can_grep():
    """`mtvbench models | grep -c InternVL3_5` counts the InternVL3.5 rows: checkpoint ids and rules are
    printed as typed (no ``InternVL3\\_5``, no ``&lt;= 720``) and never wrapped, at 80 columns too."""
    presets = list_presets()
    r = runner.invoke(app, ["models"], env=NARROW)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("preset\t")  # no title line above the header
    rows = _plain_table(r.stdout, len(presets) + 1)
    assert rows[0][:3] == ["preset", "paper row", "backend : checkpoint"]
    assert [row[0] for row in rows[1:]] == [p.name for p in presets]
    internvl = [p for p in presets if "InternVL3_5" in p.spec()]
    assert internvl and sum("InternVL3_5" in line for line in r.stdout.splitlines()) == len(internvl)
    assert all(row[2].startswith(p.spec()) for row, p in zip(rows[1:], presets))  # whole, never wrapped
    assert "longer side <= 720" in r.stdout and "&lt;" not in r.stdout
    md = runner.invoke(app, ["models", "--format", "md"], env=NARROW)
    _one_line_rows(md.stdout, len(presets) + 2)
    assert [row[0] for row in markdown_rows(md.stdout)[2:]] == [p.name for p in presets]
    assert "InternVL3\\_5" in md.stdout and "&lt;= 720" in md.stdout  # Markdown escapes, on request
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
    _plain_table(r.stdout, 1 + 7)
    md = runner.invoke(app, ["stats", str(data), "--format", "md"], env=NARROW)
    _one_line_rows(md.stdout, 2 + 7)
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
    rows = plain_rows(r.stdout)
    assert len(rows) == 6 and rows[0][0] == "Judge" and rows[3][0] == "Judge"  # two tables: a header, two judges
    md = runner.invoke(app, ["agreement", str(a), str(b), "--human", str(human), "--format", "md"], env=NARROW)
    assert len(markdown_rows(md.stdout)) == 8  # two tables of a header, a rule and two judges
    assert all(line.endswith("|") for line in md.stdout.splitlines() if line.startswith("|"))
    c = list(csv.DictReader(io.StringIO(runner.invoke(app, ["agreement", str(a), str(b), "--human", str(human),
                                                            "--format", "csv"]).stdout)))
    assert len(c) == 2 and c[0]["judge"] and c[0]["n"] == "12" and c[0]["level"] == "turn"


def test_report_leaderboard_piped_and_as_table(two_runs):
    tmp, _, a, b = two_runs
    r = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp / "rep"), "--thumbnails", "0"], env=NARROW)
    assert r.exit_code == 0, r.output
    rows = _plain_table(r.stdout, 3)
    assert rows[0][:2] == ["Model", "Overall"] and "a-model-with-a-rather-long-name/of-some-org" in r.stdout
    assert "wrote" not in r.stdout  # messages go to stderr: the table can be redirected as is
    md = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp / "rep"), "--thumbnails", "0", "--format",
                             "md"], env=NARROW)
    _one_line_rows(md.stdout, 4)
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
    _plain_table(r.stdout, 3)


def _commands(group, path=()):  # noqa: ANN001, ANN202 - click objects
    import typer.core

    for name, cmd in group.commands.items():
        if isinstance(cmd, typer.core.TyperGroup):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_help_text_shows_brackets_as_written():
    """Typer reads help as rich markup, which ate `mtvbench[ray]` in `run --help` and `[@REV]` in
    `download --help`: every bracketed word of every option's help is shown as written."""
    import typer.main

    r = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "250"})
    assert "pip install 'mtvbench[ray]'" in r.stdout
    assert "hf:ORG/NAME[@REV]" in runner.invoke(app, ["download", "--help"], env={"COLUMNS": "250"}).stdout
    checked = 0
    for path, cmd in _commands(typer.main.get_command(app)):
        words = {w for p in cmd.params for w in re.findall(r"\S*\[[^\]\s]+\]\S*", getattr(p, "help", None) or "")}
        if not words:
            continue
        shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "250"}).stdout
        for w in words:
            assert w.replace("\\[", "[") in shown, (path, w)
            checked += 1
    assert checked >= 2
