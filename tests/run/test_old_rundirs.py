"""A run directory written by an earlier mtvbench (tests/fixtures/rundirs/main-e5b7f5c-oracle: the bundled
sample, oracle model, offline judge x2, made by commit e5b7f5c, before protocols existed; ``data/`` is the
dataset it was made from, videos byte for byte) opens, scores the same and resumes from a moved copy of its
data without asking anything again, as the ``paper`` protocol; it refuses another protocol."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.run_helpers import cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rundirs" / "main-e5b7f5c-oracle"


@pytest.fixture
def old_run(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run, ignore=shutil.ignore_patterns("data"))
    data = shutil.copytree(FIXTURE / "data", tmp_path / "data")
    return run, data


def calls(run: Path) -> int:
    with sqlite3.connect(run / "store.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def test_an_old_run_directory_scores_the_same_and_resumes_as_paper(old_run: tuple[Path, Path]) -> None:
    run, sample = old_run
    before = json.loads((run / "scores.json").read_text())
    res = cli("score", run, "--format", "json")
    assert res.exit_code == 0, res.output
    now = json.loads((run / "scores.json").read_text())
    assert now["protocol"] == "paper" and now["overall"] == pytest.approx(before["overall"], abs=1e-12)
    assert now["tasks"] == pytest.approx(before["tasks"], abs=1e-12)
    n = calls(run)
    res = cli("run", "--data", sample, "--model", "oracle", "--judge", "offline", "--judge-runs", "2", "--out", run,
              "--quiet")
    assert res.exit_code == 0, res.output
    assert calls(run) == n  # nothing stored is asked again
    with sqlite3.connect(run / "store.sqlite") as db:  # a column added since: there, empty
        assert "inputs" in {row[1] for row in db.execute("PRAGMA table_info(responses)")}
        # format 2 -> 3: the table of provider resources (Gemini's caches) added, empty
        assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("3",)
        assert db.execute("SELECT COUNT(*) FROM provider_resources").fetchone() == (0,)
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    assert lines and all(x["inputs"] is None for x in lines)
    config = (run / "config.yaml").read_text()
    assert "protocol: paper" in config and "prompt_style" not in config
    again = cli("run", "--data", sample, "--model", "oracle", "--judge", "offline", "--judge-runs", "2", "--out", run,
                "--protocol", "authors", "--quiet")
    assert again.exit_code == 2 and "protocol" in again.output and "Traceback" not in again.output
    assert calls(run) == n
