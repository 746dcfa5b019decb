"""The review app over a `build all` workspace: the web API and `build review` share one store;
`review export` and `build export` apply the senior's revision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.construct.review_queue import load_queue, queue_path
from mtvbench.construct.workspace import Workspace
from mtvbench.data.official import load_official
from tests.review.conftest import item_url, make_client, verdict, who

runner = CliRunner()


@pytest.fixture
def ws(built_ws: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(built_ws, dest)
    return dest


def _cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def test_web_and_cli_share_the_store_and_exports_apply_the_revision(ws: Path, tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    c = make_client(ws)
    items = c.get("/api/items", headers=who("ann1")).json()["items"]
    assert len(items) == 36
    cross = next(i for i in items if i["kind"] == "cross")
    d = c.get(item_url(cross["id"], "?claim=1"), headers=who("ann1")).json()
    assert d["video_url"] and [(r["start"], r["end"]) for r in d["ranges"]][:2] == [(0.0, 5.0), (10.0, 15.0)]
    video = c.get(d["video_url"], headers={"Range": "bytes=0-9"})
    assert video.status_code == 206 and len(video.content) == 10
    r_scored = next(r for r in d["rounds"] if r["scored"])
    q = r_scored["checklist"][0]
    fixed = "Does the model say the square is red?"
    edit = {"round": r_scored["index"], "field": "question", "item": q["key"], "value": fixed}
    assert c.post(item_url(cross["id"], "/review"), headers=who("ann1"),
                  json=verdict("ann1", "accept")).status_code == 200
    assert c.post(item_url(cross["id"], "/review"), headers=who("ann2"),
                  json=verdict("ann2", "revise", edits=[edit])).status_code == 200
    assert c.post(item_url(cross["id"], "/adjudicate"), headers=who("lead", "senior"),
                  json=verdict("lead", "revise", senior=True, edits=[edit])).status_code == 200
    # the command line records into the same store, and sees the web decisions
    other = next(i["id"] for i in items if i["id"] != cross["id"])
    _cli("build", "review", "record", "-w", str(ws), "--id", other, "--annotator", "ann1", "--decision", "accept")
    assert "accepted" in _cli("build", "review", "record", "-w", str(ws), "--id", other, "--annotator", "ann3",
                              "--decision", "accept")
    assert c.get(item_url(other), headers=who("lead", "senior")).json()["status"] == "accepted"
    status = _cli("build", "review", "status", "-w", str(ws))
    assert "ann2:revise" in status and "accepted: 2" in status
    assert load_queue(Workspace(ws)).counts() == {"pending": 34, "accepted": 2, "rejected": 0,
                                                  "needs_adjudication": 0}

    out = tmp_path / "reviewed"
    r = runner.invoke(app, ["review", "export", str(ws), "--out", str(out), "--accepted-only"])
    assert r.exit_code == 3, r.output  # 34 dialogues are not reviewed yet
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    assert len(bench.dialogues) == 2
    audit = json.loads((out / "review.json").read_text())
    changed = [i for i in audit["items"] if i["changes"]]
    assert [(i["id"], i["changes"][0]["after"]) for i in changed] == [(cross["id"], fixed)]
    revised = bench.dialogue(changed[0]["dialogue_id"])
    assert [c_.question for c_ in revised.round(r_scored["index"]).checklist or []][int(q["key"][1:]) - 1] == fixed
    meta = json.loads((out / "metadata.json").read_text())
    assert set(meta["dialogues"]) == {x.id for x in bench.dialogues}
    assert meta["dialogues"][revised.id]["kind"] == "cross"
    # `build export --accepted-only` applies it too; the review queue keeps the generated text
    out2 = tmp_path / "build-export"
    _cli("build", "export", "-w", str(ws), "--out", str(out2), "--accepted-only")
    assert fixed in (out2 / "checklist" / f"{revised.task.official_stem}_CheckList.json").read_text()
    assert fixed not in queue_path(Workspace(ws)).read_text()
    assert load_queue(Workspace(ws)).counts()["accepted"] == 2  # re-exporting kept every decision


def test_blank_names_and_bad_decisions_on_the_command_line(ws: Path) -> None:
    iid = next(iter(load_queue(Workspace(ws)).items))
    for name in ("", "   "):
        r = runner.invoke(app, ["build", "review", "record", "-w", str(ws), "--id", iid, "--annotator", name,
                                "--decision", "accept"])
        assert r.exit_code == 2 and "annotator name is empty" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["build", "review", "adjudicate", "-w", str(ws), "--id", iid, "--senior", " ",
                            "--decision", "accept"])
    assert r.exit_code == 2 and "name is empty" in r.output
    r = runner.invoke(app, ["build", "review", "record", "-w", str(ws), "--id", iid, "--annotator", "a",
                            "--decision", "Accept"])
    assert r.exit_code == 2 and "--decision must be accept or reject" in r.output
    r = runner.invoke(app, ["build", "review", "record", "-w", str(ws), "--id", "x/y/z", "--annotator", "a",
                            "--decision", "accept"])
    assert r.exit_code == 2 and "no dialogue 'x/y/z'" in r.output
    assert load_queue(Workspace(ws)).counts()["pending"] == 36  # nothing was recorded


def test_criteria_changes_and_overwrites_on_the_command_line(ws: Path) -> None:
    from mtvbench.review.store import ReviewStore

    iid = next(iter(load_queue(Workspace(ws)).items))
    base = ["build", "review", "record", "-w", str(ws), "--id", iid]
    r = runner.invoke(app, [*base, "--annotator", "ann1", "--decision", "accept", "--not-met", "grounded"])
    assert r.exit_code == 2 and "accept needs every criterion met (grounded not met)" in r.output
    r = runner.invoke(app, [*base, "--annotator", "ann1", "--decision", "reject", "--not-met", "nonsense"])
    assert r.exit_code == 2 and "--not-met nonsense: the criteria are capability, grounded, coherent" in r.output
    _cli(*base, "--annotator", "ann1", "--decision", "reject", "--note", "blurry", "--not-met", "grounded")
    assert "needs_adjudication" in _cli(*base, "--annotator", "ann2", "--decision", "accept")
    changed = _cli(*base, "--annotator", "ann1", "--decision", "accept")
    assert "goes to the senior annotator as a new disagreement" in changed
    adj = ["build", "review", "adjudicate", "-w", str(ws), "--id", iid, "--decision", "accept"]
    _cli(*adj, "--senior", "lead")
    r = runner.invoke(app, [*adj, "--senior", "lead2"])
    assert r.exit_code == 2 and "overwrites lead's final decision" in r.output and "--overwrite" in r.output
    _cli(*adj, "--senior", "lead2", "--overwrite")
    st = ReviewStore(ws / "review.sqlite").states()[iid]
    assert st.adjudication.annotator == "lead2" and st.referrals[0].previous.criteria["grounded"].met is False
    ann2 = st.review_of("ann2")  # accept on the command line: every criterion met, every checklist item kept
    assert ann2.criteria["capability"].met and set(ann2.checklist.values()) == {"keep"}
