"""The protocol of a run is shown wherever its score is: scores.json, leaderboard md/csv/tex, report.html,
`compare` (a caveat when two runs differ in it) and `report` (a note when its runs do); `models` says what
each preset is sent under --protocol authors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.run_helpers import cli


@pytest.fixture(scope="module")
def two_runs(sample_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("protocol-runs")
    runs = []
    for protocol in ("authors", "paper"):
        run = out / protocol
        res = cli("run", "--data", sample_root, "--model", "oracle", "--judge", "offline", "--judge-runs", "1",
                  "--protocol", protocol, "--out", run, "--quiet", "--cache-dir", out / "cache")
        assert res.exit_code == 0, res.output
        runs.append(run)
    return runs[0], runs[1]


def test_scores_and_run_files_name_the_protocol(two_runs: tuple[Path, Path]) -> None:
    authors, paper = two_runs
    a = json.loads((authors / "scores.json").read_text())
    p = json.loads((paper / "scores.json").read_text())
    assert (a["protocol"], a["inference"]) == ("authors", "paper (no released script)")
    assert (p["protocol"], p["inference"]) == ("paper", "paper (Figure 15)")
    assert "protocol: authors" in (authors / "config.yaml").read_text()
    assert "| authors |" in (authors / "leaderboard.md").read_text()


def test_report_and_compare_flag_runs_of_different_protocols(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    authors, paper = two_runs
    res = cli("report", authors, paper, "--out", tmp_path / "rep")
    assert res.exit_code == 0, res.output
    md = (tmp_path / "rep" / "leaderboard.md").read_text()
    assert "| Protocol |" in md and "scored under different protocols" in md
    csv = (tmp_path / "rep" / "leaderboard.csv").read_text().splitlines()
    header = csv[0].split(",")
    assert "protocol" in header and "inference" in header
    assert {row.split(",")[header.index("protocol")] for row in csv[1:]} == {"authors", "paper"}
    tex = (tmp_path / "rep" / "leaderboard.tex").read_text()
    assert "different protocols" in tex
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Protocol" in html and "paper (no released script)" in html
    cmp = cli("compare", authors, paper, "--format", "plain")
    assert "differ in protocol (A: authors, B: paper)" in " ".join(cmp.output.split())
    # the protocol effects of each run (the offline judge moves no value: none), with the paper-parser figure
    assert "Protocol effects" in html and "none; these replies read by the paper" in html
    assert "protocol effects" not in " ".join(cmp.output.split())  # compare notes only a run where a kind fired


def test_the_offline_judge_on_the_sample_has_no_reading_effect(two_runs: tuple[Path, Path]) -> None:
    authors, paper = two_runs
    for run in (authors, paper):
        effects = json.loads((run / "scores.json").read_text())["protocol_effects"]
        assert set(effects) >= {"verdict_not_yes_no", "reply_keys", "rounding"}
        assert {k: n for k, n in effects.items() if n and k not in ("rounding", "placeholder_judged")} == {}
    score = cli("score", authors)
    assert score.exit_code == 0 and "protocol effects: " in " ".join(score.output.split())


def test_models_says_what_each_row_is_sent_under_the_authors_protocol() -> None:
    res = cli("models", "--format", "plain")
    assert res.exit_code == 0
    rows = {line.split("\t")[0]: line for line in res.output.splitlines()}
    assert "eval/infer_qwen25vl.py" in rows["qwen3-vl-8b-instruct"]
    assert "eval/infer_internvl.py" in rows["internvl3.5-8b"]
    assert "Figure 15 (no released script)" in rows["gemini-2.5-pro"]
    one = cli("models", "qwen3-vl-8b-instruct")
    assert "--protocol authors sends: eval/infer_qwen25vl.py" in " ".join(one.output.split())
