"""A build workspace written by an earlier mtvbench (tests/fixtures/workspaces/main-af4e2a6-offline: one
synthetic video, ``mtvbench build all -m offline --no-objects``, then two review decisions each on two
dialogues, made by commit af4e2a6; ``raw/`` holds the video byte for byte) opens and resumes: every stage is
skipped, nothing is asked again, the artifacts and the review decisions are kept; a lost artifact is
rebuilt from the call journal without asking."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.run_helpers import cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "workspaces" / "main-af4e2a6-offline"
BUILD = ("all", "-m", "offline", "--no-objects")


@pytest.fixture
def old_ws(tmp_path: Path) -> tuple[Path, Path]:
    ws = shutil.copytree(FIXTURE / "ws", tmp_path / "ws")
    raw = shutil.copytree(FIXTURE / "raw", tmp_path / "raw")
    return ws, raw


def journal_rows(ws: Path) -> int:
    with sqlite3.connect(ws / "calls.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])


def artifacts(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((ws / "videos" / "match").glob("*.json"))}


def test_an_old_workspace_resumes_without_asking_again(old_ws: tuple[Path, Path]) -> None:
    ws, raw = old_ws
    rows, before = journal_rows(ws), artifacts(ws)
    res = cli("build", *BUILD, "-w", ws, "--videos", raw)
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if line.split()[:2][1:] == ["match"]]
    assert len(lines) == 7 and all(line.split()[2] == "skipped" for line in lines), res.output
    assert "asked" not in res.output
    assert journal_rows(ws) == rows and artifacts(ws) == before
    status = cli("build", "review", "status", "-w", ws, "--format", "csv")
    assert "match/S0/object_reference,Object Reference,single,\"ann1:accept, ann2:reject\",needs_adjudication" \
        in status.output
    assert "match/S0/memory_recall,Memory Recall,single,\"ann1:accept, ann2:accept\",accepted" in status.output


def test_a_lost_artifact_of_an_old_workspace_is_rebuilt_from_its_journal(old_ws: tuple[Path, Path]) -> None:
    ws, raw = old_ws
    rows, before = journal_rows(ws), artifacts(ws)
    (ws / "videos" / "match" / "generate.json").unlink()
    res = cli("build", *BUILD, "-w", ws, "--videos", raw)
    assert res.exit_code == 0, res.output
    assert "asked 0, replayed 36" in " ".join(res.output.split())
    assert journal_rows(ws) == rows
    assert artifacts(ws)["generate.json"] == before["generate.json"]  # the same dialogues, so checklists kept
    assert artifacts(ws)["checklists.json"] == before["checklists.json"]
