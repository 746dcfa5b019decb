"""The numbers a report prints, pinned: a small set of runs written by ``benchmarks/report_scale.py`` (two runs of
36 dialogues, 3 judge runs, each verdict row as an ``authors`` run stores it) gives the scores, CIs, counts,
protocol effects and paper-parser figures recorded in ``tests/fixtures/report_numbers_small.json`` by the report
before its speed work (issue 30): a faster read, scoring or effects count that changes any of them fails here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mtvbench.analysis.report import build_report

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"overall", "perceptivity", "interactivity", "tasks", "ci95", "counts", "judge_run_overall", "judge_run_std",
          "protocol_effects", "paper_reading", "complete"}


def _report_scale():
    spec = importlib.util.spec_from_file_location("report_scale", ROOT / "benchmarks" / "report_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_generated_report_prints_the_numbers_recorded_before(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    runs = _report_scale().make_runs(tmp_path / "runs", 2, 36, 3)
    res = build_report(runs, tmp_path / "report", thumbs=0, bootstrap=200)
    got = [s.model_dump(mode="json", include=FIELDS) for _, s in res.rows]
    expected = json.loads((ROOT / "tests" / "fixtures" / "report_numbers_small.json").read_text(encoding="utf-8"))
    assert got == expected
    assert sum(r["protocol_effects"]["rounding"] for r in got) > 0  # the effects counted are not all zero
