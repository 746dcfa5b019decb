"""Reports and analyses on runs made end to end by ``evaluate`` against the loopback
OpenAI-compatible server (model under test and judge), and on the bundled sample."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset
from tests.support.explorer import explorer_data
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.runs import evaluate_run

runner = CliRunner()


def _values(data, out, url, cache, **kw):
    v = {"data": data, "model": "openai:test-model", "judge": "openai:test-judge", "out": out, "frames": 4,
         "judge_runs": 2, "concurrency": 4, "cache_dir": cache, "bootstrap": 100,
         "model_settings": {"base_url": url, "extra": {"retry_base_s": 0.01}, "timeout_s": 20},
         "judge_settings": {"base_url": url, "extra": {"retry_base_s": 0.01}, "timeout_s": 20}}
    v.update(kw)
    return v


def test_report_compare_agreement_on_loopback_runs(tmp_path):
    data = make_dataset(tmp_path / "data")
    golden = {}

    def good(prompt: str, n_images: int) -> str:  # echoes the round's facts: high offline scores
        return "The red square moves right and the blue circle stays; the square is red, the circle is blue."

    with LoopbackServer(ServerState(model_reply=good)) as srv:
        a = evaluate_run(_values(data, tmp_path / "good", srv.url, tmp_path / "cache"))
    with LoopbackServer() as srv:  # default replies: "Answer to: <question>"
        b = evaluate_run(_values(data, tmp_path / "echo", srv.url, tmp_path / "cache", model="openai:echo-model"))
    sa = json.loads((a / "scores.json").read_text())
    sb = json.loads((b / "scores.json").read_text())
    assert sa["complete"] and sb["complete"] and sa["overall"] > sb["overall"]

    r = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "openai:test-model" in html and "openai:echo-model" in html
    turns = explorer_data(tmp_path / "rep", "run-0")["object_reference/vid0/0"]
    assert turns["3"]["answer"].startswith("The red square") and len(turns["3"]["judge"]) == 2
    # thumbnails come from the run's frame cache (4 frames sampled per video)
    assert len(explorer_data(tmp_path / "rep", "thumbs")["vid0"]) == 4

    r = runner.invoke(app, ["compare", str(b), str(a), "--bootstrap", "300", "--json", str(tmp_path / "c.json")])
    assert r.exit_code == 0, r.output
    ov = json.loads((tmp_path / "c.json").read_text())["rows"][0]
    assert ov["diff"] == pytest.approx(sa["overall"] - sb["overall"]) and ov["diff"] > 0

    lines = [json.loads(x) for x in (a / "responses.jsonl").read_text().splitlines()]
    for x in lines:
        golden[x["turn_id"]] = x["turn_score"]
    human = tmp_path / "human.json"
    human.write_text(json.dumps([{"turn_id": t, "score": s} for t, s in golden.items() if s is not None]))
    r = runner.invoke(app, ["agreement", str(a), "--human", str(human), "--json", str(tmp_path / "ag.json")])
    assert r.exit_code == 0, r.output
    row = json.loads((tmp_path / "ag.json").read_text())["rows"][0]
    assert row["n"] == 12 and row["judge"] == "openai:test-judge"
    if row["spearman"] is not None:  # identical scores: perfect agreement
        assert row["spearman"] == pytest.approx(1.0)


def test_report_on_bundled_sample(tmp_path, sample_root):
    data = sample_root
    runs = [evaluate_run({"data": data, "model": m, "judge": "offline", "out": tmp_path / m, "frames": 4,
                          "judge_runs": 1, "cache_dir": tmp_path / "cache", "bootstrap": 100})
            for m in ("oracle", "refuse")]
    r = runner.invoke(app, ["report", *map(str, runs), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "rep" / "leaderboard.md").read_text()
    assert md.index("| oracle |") < md.index("| refuse |")
    assert (tmp_path / "rep" / "report.html").stat().st_size > 10_000
