"""docs/extending.md as written: its package is installed with pip (no network) and used through
the entry points it declares, in fresh processes: the toy backend answers a run, the analysis is a
command, the stage builds and resumes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mtvbench.data.sample import materialize
from tests.support.build_replies import Scripted
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.scene_videos import three_scene_video

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
_BLOCK = re.compile(r"```(python|toml)\n(# (\S+)\n.*?)```", re.DOTALL)


def doc_files() -> dict[str, str]:
    """Path -> text of every code block of the page that starts with ``# PATH``."""
    return {m.group(3): m.group(2) for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's package, installed into a folder of its own (``pip install --target``)."""
    root = tmp_path_factory.mktemp("extending")
    pkg = root / "mtvbench-toy"
    files = doc_files()
    assert set(files) == {"pyproject.toml", "mtvbench_toy/backend.py", "mtvbench_toy/judge.py",
                          "mtvbench_toy/lengths.py", "mtvbench_toy/summary.py"}
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    (pkg / "mtvbench_toy" / "__init__.py").write_text("")
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--no-build-isolation", "--target", str(target), str(pkg)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "No module named" in done.stderr and "setuptools" in done.stderr:
        pytest.skip("setuptools is not installed (pip needs it to build the example package offline)")
    assert done.returncode == 0, done.stderr
    return target


def mtvbench(site: Path, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT)]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "mtvbench", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_the_backend_runs_through_its_entry_point(site: Path, tmp_path: Path) -> None:
    listed = mtvbench(site, "models", "--backends", "--format", "csv")
    assert listed.returncode == 0, listed.stderr
    toy = next(line for line in listed.stdout.splitlines() if line.startswith("toy,"))
    assert "mtvbench-toy" in toy and "core" in toy  # where it comes from, nothing to install

    data = materialize(tmp_path / "sample")
    run = mtvbench(site, "run", "--data", data, "--model", "toy:echo", "--judge", "offline", "--judge-runs", 1,
                   "--limit", 1, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache", "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [json.loads(x) for x in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    assert lines and all(x["answer"] == x["question"] for x in lines if x["answer"] is not None)
    assert "model: toy:echo" in (tmp_path / "run" / "config.yaml").read_text()

    typo = mtvbench(site, "run", "--data", data, "--model", "tyo:echo", "--judge", "offline",
                    "--out", tmp_path / "typo")
    assert typo.returncode == 2 and "toy" in typo.stderr and "Traceback" not in typo.stderr
    assert not (tmp_path / "typo").exists()

    lengths = mtvbench(site, "answer-lengths", tmp_path / "run", "--format", "csv")
    assert lengths.returncode == 0, lengths.stderr
    header, row = lengths.stdout.splitlines()[:2]
    assert header == "run,OR,MR,CS,AR,TS,PI" and row.startswith("toy:echo,")
    assert "answer-lengths" in mtvbench(site, "--help").stdout


def test_the_judge_runs_through_its_entry_point(site: Path, tmp_path: Path) -> None:
    data = materialize(tmp_path / "sample")
    run = mtvbench(site, "run", "--data", data, "--model", "refuse", "--judge", "agree", "--judge-runs", 1,
                   "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache", "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["judge"] == "agree" and scores["overall"] == 100.0  # a model that always declines: all Yes
    offline = mtvbench(site, "run", "--data", data, "--model", "refuse", "--judge", "offline", "--judge-runs", 1,
                       "--out", tmp_path / "off", "--cache-dir", tmp_path / "cache", "--quiet")
    assert offline.returncode == 0 and json.loads((tmp_path / "off" / "scores.json").read_text())["overall"] < 100
    typo = mtvbench(site, "run", "--data", data, "--model", "refuse", "--judge", "agre", "--out", tmp_path / "typo")
    assert typo.returncode == 2 and "did you mean 'agree'?" in typo.stderr and "Traceback" not in typo.stderr
    assert not (tmp_path / "typo").exists()


def test_the_stage_builds_and_resumes_through_its_entry_point(site: Path, tmp_path: Path) -> None:
    three_scene_video(tmp_path / "raw" / "Sports" / "match.mp4")
    ws = tmp_path / "ws"
    model = ["-m", "openai:builder", "--model-base-url", ""]
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        model[3] = srv.url
        assert "video-summary" in mtvbench(site, "build", "--help").stdout
        for stage, extra in (("split", ["--videos", tmp_path / "raw"]), ("caption", model), ("merge", model)):
            done = mtvbench(site, "build", stage, "-w", ws, *extra)
            assert done.returncode == 0, done.stdout + done.stderr
        asked = len(srv.state.requests)
        first = mtvbench(site, "build", "video-summary", "-w", ws, *model)
        assert first.returncode == 0, first.stdout + first.stderr
        assert len(srv.state.requests) == asked + 1  # one summary per video
        again = mtvbench(site, "build", "video-summary", "-w", ws, *model)
        assert again.returncode == 0 and "skipped" in again.stdout
        assert len(srv.state.requests) == asked + 1  # nothing asked twice
        assert "--video-summary-sentences" in mtvbench(site, "build", "video-summary", "--help").stdout
        longer = mtvbench(site, "build", "video-summary", "-w", ws, *model, "--video-summary-sentences", 2)
        assert longer.returncode == 0 and "settings changed (sentences)" in longer.stdout, longer.stdout
        assert len(srv.state.requests) == asked + 2 and "in 2 sentence(s)" in srv.state.requests[-1]["text"]
    artifact = json.loads((ws / "videos" / "match" / "video-summary.json").read_text())
    assert artifact["complete"] and artifact["summary"] == "I do not know this prompt."
    assert artifact["meta"]["stage"] == "video-summary" and set(artifact["meta"]["upstream"]) == {"merge"}
    assert artifact["meta"]["settings"]["sentences"] == 2
