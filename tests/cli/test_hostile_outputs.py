"""The real commands on runs whose model name, questions and answers are hostile text.

``run`` evaluates a model served by the loopback OpenAI-compatible server under a hostile
name, on a dataset with hostile questions, answering hostile replies; then ``score``,
``report``, ``compare`` and ``build review status`` print and write every sink, and each
output is read back with a real reader (html.parser, csv, a Markdown renderer, a LaTeX
scanner, the PNG signature).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.util.escape import terminal
from tests.support.datasets import make_dataset
from tests.support.explorer import explorer_data
from tests.support.hostile import MARKUP, MATH, RAW_CONTROLS, SCRIPT, PageReader, latex_unescaped, markdown_rows
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.runs import make_store_run

runner = CliRunner()

#: the model's name on the command line: markup, mathtext, HTML comment + script, a pipe, ANSI
NAME = "hostile [/x] $\\foo$ <!--<script> | \x1b[31mred\u2028end"
MODEL = "openai:" + NAME
#: a second run's name starts a spreadsheet formula
FORMULA_NAME = "=HYPERLINK(\"http://x\")|[/x] $\\foo$"
REPLY = f"The red square moves right. {SCRIPT} {MARKUP} {MATH} =cmd|' /C calc'!A0 \x1b[2J"
QUESTION = f"Question with {SCRIPT} and {MARKUP} | pipe\nnew line?"


def _hostile_dataset(root: Path) -> Path:
    data = make_dataset(root)
    for f in (data / "mtqa").glob("*.json"):
        obj = json.loads(f.read_text())
        for dialogues in obj.values():
            for d in dialogues:
                d["mtqa"]["Round 1"]["User"] = QUESTION
                d["mtqa"]["Round 2"]["Assistant"] = REPLY
        f.write_text(json.dumps(obj))
    return data


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    data = _hostile_dataset(tmp / "data")
    with LoopbackServer(ServerState(model_reply=lambda text, n: REPLY)) as srv:
        r = runner.invoke(app, ["run", "--data", str(data), "--model", MODEL, "--judge", "offline",
                                "--out", str(tmp / "a"), "--frames", "2", "--judge-runs", "1", "--quiet",
                                "--model-base-url", srv.url, "--cache-dir", str(tmp / "cache")],
                          env={"COLUMNS": "200"})
    b = make_store_run(data, tmp / "b", model=FORMULA_NAME, answer=lambda d, k, g: g if k == 3 else REPLY,
                       bootstrap=20)
    return tmp, data, r, tmp / "a", b


def test_run_prints_the_hostile_name_literally(runs):
    _, _, r, a, _ = runs
    assert r.exit_code == 0, r.output
    assert terminal(NAME) in r.stdout  # one table row, the name whole and literal
    assert not any(c in r.output for c in RAW_CONTROLS)
    assert json.loads((a / "scores.json").read_text())["model"] == MODEL


@pytest.mark.parametrize("columns", ["80", "200"])
def test_score_table_and_counts(runs, columns):
    _, _, _, a, _ = runs
    r = runner.invoke(app, ["score", str(a), "--format", "table"], env={"COLUMNS": columns})
    assert r.exit_code == 0, r.output
    assert terminal(MODEL) in r.stdout.replace("\n", "") or terminal(MODEL) in r.stdout
    assert "6 dialogues" in r.stdout and "{" not in r.stdout  # counts in words, not a dict
    assert not any(c in r.stdout for c in RAW_CONTROLS)
    assert all(len(line) <= int(columns) for line in r.stdout.splitlines())


def test_score_markdown_csv_json(runs):
    from markdown_it import MarkdownIt

    _, _, _, a, _ = runs
    plain = runner.invoke(app, ["score", str(a)])  # captured: not a terminal, so plain text
    assert plain.exit_code == 0, plain.output
    rows = [line.split("\t") for line in plain.stdout.splitlines() if "\t" in line]
    assert len(rows) == 2 and len({len(r) for r in rows}) == 1 and rows[1][0] == terminal(MODEL)
    assert not any(c in plain.stdout for c in RAW_CONTROLS) and "status: complete" in plain.stdout
    md = runner.invoke(app, ["score", str(a), "--format", "md"])
    assert md.exit_code == 0, md.output
    rows = markdown_rows(md.stdout)
    assert len(rows) == 3 and len({len(r) for r in rows}) == 1  # header, rule, one row: nothing cut
    html = MarkdownIt("commonmark").enable("table").render(md.stdout)
    assert "<script" not in html and "<!--" not in html and "&lt;!--&lt;script&gt;" in html
    c = runner.invoke(app, ["score", str(a), "--format", "csv"])
    (row,) = list(csv.DictReader(io.StringIO(c.stdout)))
    assert row["model"] == terminal(MODEL) and row["status"] == "complete"
    j = runner.invoke(app, ["score", str(a), "--format", "json"])
    assert json.loads(j.stdout)["model"] == MODEL


def test_report_every_sink(runs):
    tmp, _, _, a, b = runs
    out = tmp / "rep"
    r = runner.invoke(app, ["report", str(a), str(b), "--out", str(out), "--thumbnails", "1", "--bootstrap", "20",
                            "--format", "md"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    # stdout is the Markdown leaderboard: every row one line with every cell
    rows = markdown_rows(r.stdout)
    assert len(rows) == 4 and len({len(x) for x in rows}) == 1
    # HTML: two scripts (data, code), the payload is valid JSON, names in cells; the explorer's files beside the
    # page hold the reply and the question, escaped for a script as the payload is
    page = PageReader((out / "report.html").read_text())
    assert len(page.scripts) == 2
    payload = json.loads(page.scripts[0])
    answers = [t["answer"] for run in payload["runs"] for turns in explorer_data(out, run["file"]).values()
               for t in turns.values()]
    assert REPLY in answers
    assert explorer_data(out, "dialogues")[payload["dialogues"][0]["id"]][0]["user"] == QUESTION
    assert NAME.join(["openai:", ""]) in page.cells and FORMULA_NAME in page.cells
    # CSV: read back, the formula-like name is neutralised, numbers stay numbers
    lb = {x["model"]: x for x in csv.DictReader((out / "leaderboard.csv").open())}
    assert "'" + FORMULA_NAME in lb and float(lb["'" + FORMULA_NAME]["Overall"]) > 0
    assert terminal(MODEL) in lb
    for row in csv.DictReader((out / "breakdowns.csv").open()):
        assert row["run"][0] not in "=+-@"
    # LaTeX: the name lines have no special character left unescaped
    tex = (out / "leaderboard.tex").read_text().splitlines()
    name_lines = [line for line in tex if line.startswith(("openai:", "="))]
    assert len(name_lines) == 2
    for line in name_lines:
        name_cell = line.split(" & ")[0]
        assert not latex_unescaped(name_cell), name_cell
    # plots: PNGs written although every label would be mathtext
    pngs = list((out / "plots").glob("*.png"))
    assert len(pngs) >= 2 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json"])
def test_compare_every_format(runs, fmt):
    _, _, _, a, b = runs
    r = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "50", "--format", fmt], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert not any(c in r.stdout for c in RAW_CONTROLS)
    if fmt == "json":
        assert json.loads(r.stdout)["run_a"] == MODEL
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(r.stdout)))
        assert rows[0][0] == "measure" and len(rows) == 10
    elif fmt == "md":
        rows = markdown_rows(r.stdout)
        assert len(rows) == 11 and len({len(x) for x in rows}) == 1
        assert "\\[/x\\]" in r.stdout and "&lt;\\!--&lt;script&gt;" in r.stdout
    else:
        assert "[/x]" in r.stdout and all(len(line) <= 80 for line in r.stdout.splitlines())


def test_review_status_hostile_annotators_and_long_ids(tmp_path):
    from mtvbench.construct.review_queue import record_review, save_queue
    from mtvbench.construct.workspace import Workspace
    from mtvbench.review.decisions import ReviewItem, ReviewQueue

    ids = [f"a_video_with_a_rather_long_file_name_2024_05_{i:02d}/unit_000{i}/proactive_interaction"
           for i in range(3)]
    q = ReviewQueue(items={i: ReviewItem(
        id=i, task="proactive_interaction", video="v", event="0", unit="u", kind="cross", ranges=[(0.0, 1.0)],
        rounds=[], content_hash="h") for i in ids})
    ws = Workspace(tmp_path)
    save_queue(ws, q)
    for i in ids:  # decisions live in the review store; names there are checked (markup is refused)
        record_review(ws, i, "ann.one", "accept")
        record_review(ws, i, "ann-two", "reject")
    bad = runner.invoke(app, ["build", "review", "record", "-w", str(tmp_path), "--id", ids[0], "--annotator",
                              NAME, "--decision", "accept"])
    assert bad.exit_code == 2 and "[/x]" in bad.output and "Traceback" not in bad.output
    assert not any(c in bad.output for c in RAW_CONTROLS)  # the refused name is shown, control codes escaped
    for columns in ("80", "120"):
        r = runner.invoke(app, ["build", "review", "status", "-w", str(tmp_path), "--format", "table"],
                          env={"COLUMNS": columns})
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()
        assert all(any(i in line for line in lines) for i in ids)  # every id whole on one line
        assert all(len(line) <= int(columns) for line in lines)
        assert "ann.one:accept" in r.stdout and "needs adjudication: 3" in r.stdout
        assert not any(c in r.stdout for c in RAW_CONTROLS)
    plain = runner.invoke(app, ["build", "review", "status", "-w", str(tmp_path)], env={"COLUMNS": "80"})
    assert [line.split("\t")[0] for line in plain.stdout.splitlines() if line.startswith(tuple(ids))] == ids
    md = runner.invoke(app, ["build", "review", "status", "-w", str(tmp_path), "--format", "md"],
                       env={"COLUMNS": "80"})
    rows = markdown_rows(md.stdout)
    assert len(rows) == 5 and len({len(x) for x in rows}) == 1 and rows[2][0] == ids[0].replace("_", "\\_")
    js = json.loads(runner.invoke(app, ["build", "review", "status", "-w", str(tmp_path), "--format", "json"]).stdout)
    assert js["counts"]["needs_adjudication"] == 3 and js["items"][0]["annotations"][1]["annotator"] == "ann-two"
