from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    data = make_dataset(tmp / "data")
    a = make_store_run(data, tmp / "a", model="oracle", judge_runs=2, flip=lambda t, r, k: r == 1 and k == "A2")
    b = make_store_run(data, tmp / "b", model="half", answer=lambda d, k, g: g if k == 3 else "No idea.")
    return tmp, data, a, b


def test_report_command(runs):
    tmp, _, a, b = runs
    r = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp / "rep"), "--thumbnails", "0",
                            "--bootstrap", "50"])
    assert r.exit_code == 0, r.output
    assert (tmp / "rep" / "report.html").exists() and "\noracle\t" in r.output
    assert "No scene counts" in r.output  # stderr is mixed in by CliRunner


def test_report_command_errors_cleanly(tmp_path):
    r = runner.invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "config.yaml: missing" in " ".join(r.output.split())


def test_compare_command(runs):
    tmp, _, a, b = runs
    r = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "500", "--json", str(tmp / "cmp.json")])
    assert r.exit_code == 0, r.output
    comp = json.loads((tmp / "cmp.json").read_text())
    ov = comp["rows"][0]
    sa = json.loads((a / "scores.json").read_text())["overall"]
    sb = json.loads((b / "scores.json").read_text())["overall"]
    assert ov["diff"] == pytest.approx(sb - sa) and ov["n"] == 6
    assert "Paired bootstrap" in r.output


def test_agreement_command(runs):
    tmp, _, a, b = runs
    scores = {json.loads(line)["turn_id"]: json.loads(line)["turn_score"]
              for line in (a / "responses.jsonl").read_text().splitlines() if json.loads(line)["scored"]}
    human = tmp / "human.csv"
    with human.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["turn_id", "score"])
        for i, (tid, s) in enumerate(sorted(scores.items())):
            w.writerow([tid, s - (10 if i % 3 else 0)])
    r = runner.invoke(app, ["agreement", str(a), str(b), "--human", str(human), "--json", str(tmp / "ag.json")])
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp / "ag.json").read_text())["rows"]
    assert [x["n"] for x in rows] == [12, 12]
    assert rows[0]["judge_runs"] == 2 and rows[0]["n_items_all_runs"] == 60
    assert "Kendall-Tau" in r.output


def test_stats_and_scenes_commands(runs):
    pytest.importorskip("scenedetect", reason="PySceneDetect not installed")
    tmp, data, a, _ = runs
    r = runner.invoke(app, ["stats", str(data), "--json", str(tmp / "st.json")])
    assert r.exit_code == 0, r.output
    st = json.loads((tmp / "st.json").read_text())
    assert st[0]["qas"] == 30 and "MTLD" in r.output
    r = runner.invoke(app, ["stats", str(a), "--no-per-task"])  # a run directory works too
    assert r.exit_code == 0 and "\t30\t" in r.output
    r = runner.invoke(app, ["scenes", str(data), "--scene-cache", str(tmp / "sc"), "--out", str(tmp / "sc.json")])
    assert r.exit_code == 0, r.output
    sc = json.loads((tmp / "sc.json").read_text())
    assert len(sc) == 6 and all(v["scenes"] >= 1 for v in sc.values())
    assert "1-5: 6" in r.output


def test_stats_on_bundled_sample(tmp_path, sample_root):
    r = runner.invoke(app, ["stats", str(sample_root), "--json", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "s.json").read_text())[0]
    assert s["qas"] > 0 and s["videos"] >= 1 and s["videos_with_duration"] == s["videos"]
