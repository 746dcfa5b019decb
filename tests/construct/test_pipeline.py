"""`mtvbench build all` end to end over two generated videos, resume, review queue and export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli.construct import build_app
from mtvbench.construct.review_queue import load_queue
from mtvbench.construct.stages.crossscene import CrossSceneResult
from mtvbench.construct.stages.generate import GenerateResult
from mtvbench.construct.stages.merge import MergeResult
from mtvbench.construct.workspace import Workspace
from mtvbench.data.buildmeta import load_metadata
from mtvbench.data.official import load_official
from mtvbench.data.schema import TASKS
from tests.support.build_replies import Scripted
from tests.support.builds import build_all, two_videos
from tests.support.openai_server import LoopbackServer, ServerState

runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("build")
    videos = two_videos(root / "raw")
    ws = root / "ws"
    script = Scripted()
    with LoopbackServer(ServerState(model_reply=script)) as srv:
        first = build_all(ws, videos, srv.url)
        n_first = len(srv.state.requests)
        kinds_first = dict(script.kinds)
        second = build_all(ws, None, srv.url)
        n_second = len(srv.state.requests)
    return {"ws": ws, "first": first, "second": second, "n_first": n_first, "n_second": n_second,
            "kinds": kinds_first, "requests": srv.state.requests}


def test_build_all_produces_a_valid_dataset(built: dict) -> None:
    assert built["first"].exit_code == 0, built["first"].output
    out = built["ws"] / "dataset"
    bench, problems = load_official(out)
    errors = [p.render() for p in problems if p.level == "error"]
    assert bench is not None and errors == []
    assert not [p for p in problems if "checklist" in p.message.lower()], [p.render() for p in problems]
    assert set(bench.videos) == {"match", "short"}
    # match: 3 single-scene segments + 1 cross-scene unit (red square in scenes 0 and 2);
    # short: 2 segments, no shared object (its objects differ in colour); every unit x 6 tasks
    assert len(bench.dialogues) == (4 + 2) * 6
    for t in TASKS:
        assert len(bench.by_task(t)) == 6
    for d in bench.dialogues:
        assert 5 <= len(d.rounds) <= 8
        assert d.scored_turns, d.id
        assert all(len(r.checklist or []) == 5 for r in d.model_turns)
    meta = load_metadata(out)
    assert meta is not None
    assert meta.videos["match"].category == "Sports" and meta.videos["short"].category == "Movie"
    assert meta.videos["match"].scene_count == 3 and meta.videos["match"].duration_s == pytest.approx(15.0)
    assert meta.videos["short"].clips == [(0.0, 4.0), (4.0, 8.0)]
    kinds = {m.kind for m in meta.dialogues.values()}
    assert kinds == {"single", "cross"}
    cross = [m for m in meta.dialogues.values() if m.kind == "cross"]
    assert all(m.video == "match" and m.segments == [0, 2] and m.ranges == [(0.0, 5.0), (10.0, 15.0)]
               for m in cross)
    assert set(meta.dialogues) == {d.id for d in bench.dialogues}


def test_object_centred_cross_scene_prompt_and_frames(built: dict) -> None:
    gen = [r for r in built["requests"] if r["text"].startswith("You are a Video QA Orchestrator")]
    cross = [r for r in gen if "different scenes of the same video" in r["text"]]
    assert len(cross) == 6
    assert all("from 00:00:00 to 00:00:05 and from 00:00:10 to 00:00:15" in r["text"] for r in cross)
    assert all(r["images"] == 32 for r in gen)
    caps = [r for r in built["requests"] if r["text"].startswith("The frames are from one shot")]
    assert len(caps) == 5 and all(r["images"] == 8 for r in caps)


def test_rerun_skips_finished_work(built: dict) -> None:
    assert built["second"].exit_code == 0, built["second"].output
    assert built["n_second"] == built["n_first"]  # nothing asked again
    assert built["second"].output.count("skipped") >= 20
    ws = Workspace(built["ws"])
    merge = ws.load("match", "merge", MergeResult)
    assert merge is not None and len(merge.decisions) == 4  # two passes over two adjacent pairs
    cross = ws.load("match", "crossscene", CrossSceneResult)
    assert cross is not None and [u.id for u in cross.units] == ["S0", "S1", "S2", "X1"]


def test_lost_artifact_is_rebuilt_from_the_call_journal(tmp_path: Path, built: dict) -> None:
    """A deleted generate artifact is made again from the stored replies: nothing is asked, same content."""
    import shutil

    ws_dir = tmp_path / "ws"
    shutil.copytree(built["ws"], ws_dir)
    ws = Workspace(ws_dir)
    before = ws.load("short", "generate", GenerateResult)
    assert before is not None and before.complete
    ws.path("short", "generate").unlink()
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = runner.invoke(build_app, ["generate", "-w", str(ws_dir), "--model", "openai:builder", "--model-base-url",
                                        srv.url])
        asked = list(srv.state.requests)
    assert res.exit_code == 0, res.output
    assert asked == [] and "replayed 12" in res.output
    again = ws.load("short", "generate", GenerateResult)
    assert again is not None and again.model_dump(exclude={"meta"}) == before.model_dump(exclude={"meta"})


def test_review_queue_and_accepted_only_export(tmp_path: Path, built: dict) -> None:
    import shutil

    ws_dir = tmp_path / "ws"
    shutil.copytree(built["ws"], ws_dir)
    q = load_queue(Workspace(ws_dir))
    assert len(q.items) == 36 and q.counts()["pending"] == 36
    ids = sorted(q.items)
    a, b, c = ids[0], ids[1], ids[2]

    def rev(*args: str) -> str:
        r = runner.invoke(build_app, ["review", *args, "-w", str(ws_dir)])
        assert r.exit_code == 0, r.output
        return r.output

    assert "pending" in rev("record", "--id", a, "--annotator", "ann1", "--decision", "accept")
    assert "accepted" in rev("record", "--id", a, "--annotator", "ann2", "--decision", "accept")
    rev("record", "--id", b, "--annotator", "ann1", "--decision", "accept")
    assert "needs_adjudication" in rev("record", "--id", b, "--annotator", "ann2", "--decision", "reject")
    assert "accepted" in rev("adjudicate", "--id", b, "--senior", "lead", "--decision", "accept")
    rev("record", "--id", c, "--annotator", "ann1", "--decision", "reject")
    assert "rejected" in rev("record", "--id", c, "--annotator", "ann2", "--decision", "reject")
    third = runner.invoke(build_app, ["review", "record", "-w", str(ws_dir), "--id", a, "--annotator", "ann3",
                                      "--decision", "reject"])
    assert third.exit_code == 2 and "two annotators" in third.output
    bad = runner.invoke(build_app, ["review", "adjudicate", "-w", str(ws_dir), "--id", c, "--senior", "lead",
                                    "--decision", "accept"])
    assert bad.exit_code == 2

    out = tmp_path / "accepted"
    r = runner.invoke(build_app, ["export", "-w", str(ws_dir), "--out", str(out), "--accepted-only"])
    assert r.exit_code == 0, r.output
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    got = {(d.video, d.task.value) for d in bench.dialogues}
    queue = load_queue(Workspace(ws_dir))
    assert queue.counts() == {"pending": 33, "accepted": 2, "rejected": 1, "needs_adjudication": 0}
    want = {(queue.items[i].video, queue.items[i].task.value) for i in (a, b)}
    assert got == want
    # event indices are stable between the full and the accepted-only export
    full = json.loads((built["ws"] / "dataset" / "metadata.json").read_text())["dialogues"]
    for d in bench.dialogues:
        assert d.id in full


def test_built_dataset_can_be_evaluated(built: dict, tmp_path: Path) -> None:
    pytest.importorskip("mtvbench.media.cache")
    from mtvbench.config import RunConfig
    from mtvbench.run.evaluate import evaluate

    cfg = RunConfig(data=built["ws"] / "dataset", model="oracle", judge="offline", out=tmp_path / "run",
                    frames=4, cache_dir=tmp_path / "cache", bootstrap=0)
    scores, _ = evaluate(cfg)
    assert scores.complete
    assert set(scores.tasks) == {t.value for t in TASKS}
    assert all(v is not None and 0 <= v <= 100 for v in scores.tasks.values())
    assert scores.overall is not None
    # the report reads the built dataset's metadata.json by itself: categories and scene counts
    from mtvbench.analysis.report import build_report

    build_report([tmp_path / "run"], tmp_path / "report", thumbs=0)
    meta = json.loads((tmp_path / "report" / "metadata.json").read_text())
    assert {m["category"] for m in meta.values()} == {"Sports", "Movie"}
    assert all(m["scenes"] and m["scenes"] >= 1 and m["scenes_source"] == "file" for m in meta.values())
