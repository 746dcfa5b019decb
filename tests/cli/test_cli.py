from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.datasets import make_dataset


def test_validate_ok_and_broken(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    ok = CliRunner().invoke(app, ["validate", str(root)])
    assert ok.exit_code == 0, ok.output
    assert "6 dialogues, 2 videos, 12 scored turns; 0 errors" in ok.output
    (root / "videos" / "vid0.mp4").unlink()
    bad = CliRunner().invoke(app, ["validate", str(root)])
    assert bad.exit_code == 2  # bad input (the exit-code policy: 1 is an internal error)
    assert "video='vid0'" in bad.output and "Traceback" not in bad.output


def test_demo_runs_offline(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "not comparable to the paper" in res.output
    oracle = json.loads((tmp_path / "demo" / "runs" / "oracle" / "scores.json").read_text())
    refuse = json.loads((tmp_path / "demo" / "runs" / "refuse" / "scores.json").read_text())
    assert oracle["overall"] > 90 and refuse["overall"] < oracle["overall"] - 40
    assert oracle["counts"]["dialogues"] >= 12 and oracle["counts"]["unscored_judge_runs"] == 0
    # the sample is valid under `validate`; its one warning is that it is not a real benchmark (synthetic), so
    # `--strict` refuses it, as it refuses a dataset built with `build -m offline`
    ok = CliRunner().invoke(app, ["validate", str(tmp_path / "demo" / "sample")])
    assert ok.exit_code == 0 and "0 errors, 1 warnings" in ok.output, ok.output
    assert "NOT a real benchmark: the bundled synthetic sample" in " ".join(ok.output.split())
    assert CliRunner().invoke(app, ["validate", str(tmp_path / "demo" / "sample"), "--strict"]).exit_code == 2
    assert json.loads((tmp_path / "demo" / "runs" / "oracle" / "scores.json").read_text())["not_a_benchmark"]
