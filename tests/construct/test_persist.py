"""Construction keeps what it paid for: per-call persistence, staleness, loud incompleteness, preflight.

All model calls go to the real OpenAI-compatible loopback server with the scripted replies of
``tests/support/build_replies.py``; the videos are generated (``tests/support/scene_videos.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.construct.journal import CallJournal
from mtvbench.construct.stages.checklists import ChecklistResult
from mtvbench.construct.stages.generate import GenerateResult
from mtvbench.construct.workspace import Workspace
from tests.support.build_replies import Scripted
from tests.support.extras import needs
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.scene_videos import BLUE, RED, Scene, three_scene_video, write_scenes

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _short(path: Path) -> Path:
    return write_scenes(path, [Scene(40, hue=20, obj=("disc", BLUE)),
                               Scene(40, hue=120, sat=140, val=(80, 170), obj=("square", RED))])


def _config(root: Path) -> Path:
    cfg = root / "build.json"
    root.mkdir(parents=True, exist_ok=True)
    cfg.write_text(json.dumps({"crossscene": {"theme_threshold": None}, "backend": {"max_retries": 0}}))
    return cfg


def _args(cmd: str, ws: Path, url: str, *extra: str) -> list[str]:
    return ["build", cmd, "-w", str(ws), "--model", "openai:builder", "--model-base-url", url,
            "--detector", "tests.support.detector:make_detector", "--config", str(_config(ws.parent)), *extra]


def _build(cmd: str, ws: Path, url: str, *extra: str):  # noqa: ANN202
    return runner.invoke(app, _args(cmd, ws, url, *extra))


def _kinds(requests: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in requests:
        k = Scripted.kind(r["text"])
        out[k] = out.get(k, 0) + 1
    return out


def _dataset(ws: Path) -> dict[str, object]:
    out = ws / "dataset"
    return {str(p.relative_to(out)): json.loads(p.read_text()) for p in sorted(out.rglob("*.json"))}


@pytest.fixture(scope="module")
def short_ws(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One video built completely (all stages + export), and the number of calls that took."""
    root = tmp_path_factory.mktemp("persist")
    _short(root / "raw" / "Movie" / "short.mp4")
    ws = root / "ws"
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = _build("all", ws, srv.url, "--videos", str(root / "raw"))
        n = len(srv.state.requests)
    assert res.exit_code == 0, res.output
    return {"ws": ws, "calls": n, "kinds": _kinds(srv.state.requests), "dataset": _dataset(ws)}


def _copy(short_ws: dict, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(short_ws["ws"], ws)
    return ws


# ------------------------------------------------------------------ kill -9 in the middle of a stage


def test_killed_build_asks_only_what_is_missing(tmp_path: Path) -> None:
    """SIGKILL during `build all` (generate stage); the rerun asks only what the killed run had not stored.

    At most the calls in flight at the kill (concurrency 4) are asked twice, and the dataset equals an
    uninterrupted build's."""
    raw = tmp_path / "raw"
    three_scene_video(raw / "Sports" / "match.mp4")
    ref_ws, ws = tmp_path / "ref" / "ws", tmp_path / "killed" / "ws"
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        ref = _build("all", ref_ws, srv.url, "--videos", str(raw))
        n_full = len(srv.state.requests)
    assert ref.exit_code == 0, ref.output

    reached, release = threading.Event(), threading.Event()
    script = Scripted()
    kill_at = 12  # the 12th dialogue request (of 24): the generate stage is half done

    def reply(prompt: str, n_images: int) -> str:
        if Scripted.kind(prompt) == "generate":
            with script.lock:
                script.kinds["killed-generate"] += 1
                nth = script.kinds["killed-generate"]
            if nth == kill_at:
                reached.set()
                release.wait(30)
        return script(prompt, n_images)

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    with LoopbackServer(ServerState(model_reply=reply)) as srv:
        log = (tmp_path / "killed.log").open("w")
        proc = subprocess.Popen([sys.executable, "-m", "mtvbench", *_args("all", ws, srv.url, "--videos", str(raw))],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            assert reached.wait(120), (tmp_path / "killed.log").read_text()
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        n_killed = len(srv.state.requests)
    assert proc.returncode == -signal.SIGKILL
    stored = CallJournal(ws).count()
    assert not (ws / "videos" / "match" / "generate.json").exists()  # killed before the stage wrote its artifact
    assert stored >= n_killed - 4 - 1  # every reply that arrived is stored, but the ones in flight

    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        again = _build("all", ws, srv.url)
        n_again = len(srv.state.requests)
    assert again.exit_code == 0, again.output
    assert n_again == n_full - stored  # exactly what was not stored
    assert n_killed + n_again - n_full <= 4  # asked twice: at most the calls in flight at the kill
    assert _dataset(ws) == _dataset(ref_ws)
    assert "replayed" in again.output


# ------------------------------------------------------------------ staleness


def test_edited_artifact_is_redone_from_the_journal(short_ws: dict, tmp_path: Path) -> None:
    """A hand-edited generate.json makes generate stale: it is rebuilt from the stored replies (nothing asked)
    and the export holds the generated dialogues, consistent with their checklists."""
    ws = _copy(short_ws, tmp_path)
    path = ws / "videos" / "short" / "generate.json"
    data = json.loads(path.read_text())
    key = sorted(data["dialogues"])[0]
    data["dialogues"][key]["rounds"][0]["assistant"] = "EDITED BY HAND"
    path.write_text(json.dumps(data))
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = _build("all", ws, srv.url)
        assert srv.state.requests == []
    assert res.exit_code == 0, res.output
    assert "changed after the stage wrote it" in res.output
    assert "EDITED BY HAND" not in path.read_text()
    assert _dataset(ws) == short_ws["dataset"]


def test_corrupt_generate_with_lost_replies_redoes_checklists(short_ws: dict, tmp_path: Path) -> None:
    """A corrupt generate.json whose replies are gone is generated anew; the checklists made for the old
    dialogues are stale and made again, so the export never pairs new dialogues with old checklists."""
    ws = _copy(short_ws, tmp_path)
    (ws / "videos" / "short" / "generate.json").write_text('{"video": "short", "dialogues": {')
    CallJournal(ws).supersede("short", "generate")  # as if the journal had lost them
    with LoopbackServer(ServerState(model_reply=Scripted(variant="v2"))) as srv:
        res = _build("all", ws, srv.url)
        kinds = _kinds(srv.state.requests)
    assert res.exit_code == 0, res.output
    assert " ".join(res.output.split()).count("generate.json: line 1: not valid JSON") == 1  # reported once
    assert kinds == {"generate": short_ws["kinds"]["generate"], "checklist": short_ws["kinds"]["checklist"]}
    exported = _dataset(ws)
    answers = [r["Assistant"] for f, d in exported.items() if f.startswith("mtqa/")
               for v in d.values() for e in v for r in e["mtqa"].values()]
    assert answers and all(a.startswith("[v2] ") for a in answers)
    questions = [q for f, d in exported.items() if f.startswith("checklist/") for v in d.values()
                 for entries in v.values() for e in entries for k, q in e.items() if k.startswith("Q")]
    assert questions and all("[v2]" in q for q in questions)


def test_force_makes_later_stages_stale(short_ws: dict, tmp_path: Path) -> None:
    """`build generate --force` asks again; the checklists made for the old dialogues are not exported."""
    ws = _copy(short_ws, tmp_path)
    with LoopbackServer(ServerState(model_reply=Scripted(variant="v3"))) as srv:
        forced = _build("generate", ws, srv.url, "--force")
        export = runner.invoke(app, ["build", "export", "-w", str(ws)])
        assert _kinds(srv.state.requests) == {"generate": short_ws["kinds"]["generate"]}
        cks = _build("checklists", ws, srv.url)
        export2 = runner.invoke(app, ["build", "export", "-w", str(ws)])
    assert forced.exit_code == 0, forced.output
    assert export.exit_code == 3, export.output
    assert "not exported" in export.output and "earlier 'generate'" in " ".join(export.output.split())
    assert cks.exit_code == 0 and "earlier generate" in " ".join(cks.output.split())
    assert export2.exit_code == 0, export2.output
    ck = ChecklistResult.model_validate_json((ws / "videos" / "short" / "checklists.json").read_text())
    assert all("[v3]" in it.question for rounds in ck.checklists.values() for items in rounds.values()
               for it in items)


def test_changed_setting_redoes_the_stage_and_reuses_unchanged_calls(short_ws: dict, tmp_path: Path) -> None:
    ws = _copy(short_ws, tmp_path)
    changed = tmp_path / "changed.json"
    cfg = json.loads(_config(ws.parent).read_text())
    changed.write_text(json.dumps({**cfg, "checklists": {"exact_split": False}}))  # a rule setting: replies are re-read
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        args = _args("checklists", ws, srv.url)
        res = runner.invoke(app, args[: args.index("--config")] + ["--config", str(changed)])
        assert srv.state.requests == []
    assert res.exit_code == 0, res.output
    assert "settings changed (exact_split)" in " ".join(res.output.split())


def test_corrupt_upstream_blocks_a_stage_run_alone(short_ws: dict, tmp_path: Path) -> None:
    ws = _copy(short_ws, tmp_path)
    (ws / "videos" / "short" / "generate.json").write_text("[]")
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = _build("checklists", ws, srv.url)
        assert srv.state.requests == []
    out = " ".join(res.output.split())
    assert res.exit_code == 3, res.output
    assert "blocked" in out and "needs 'generate'" in out and "corrupt" in out


# ------------------------------------------------------------------ incomplete is loud


def test_failed_calls_make_the_stage_incomplete_and_block_later_ones(tmp_path: Path) -> None:
    _short(tmp_path / "raw" / "short.mp4")
    ws = tmp_path / "ws"
    state = ServerState()
    script = Scripted()

    def reply(prompt: str, n_images: int) -> str:
        if Scripted.kind(prompt) == "merge":  # from the first merge call on, the server rejects every call
            state.unauthorized = True
        return script(prompt, n_images)

    state.model_reply = reply
    with LoopbackServer(state) as srv:
        first = _build("all", ws, srv.url, "--videos", str(tmp_path / "raw"))
    out = " ".join(first.output.split())
    assert first.exit_code == 3, first.output
    assert "INCOMPLETE" in out and "Incorrect API key provided" in out  # the server's own message
    assert "blocked" in out and "needs 'merge'" in out and "not exported" in out
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        second = _build("all", ws, srv.url)
        kinds = _kinds(srv.state.requests)
    assert second.exit_code == 0, second.output
    assert "caption" not in kinds  # every caption had arrived: nothing asked twice
    gen = GenerateResult.model_validate_json((ws / "videos" / "short" / "generate.json").read_text())
    assert gen.complete and len(gen.dialogues) == 12


# ------------------------------------------------------------------ preflight: one line, exit 2, nothing written


def test_missing_api_key_is_one_line_and_writes_nothing(short_ws: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _short(tmp_path / "raw" / "short.mp4")
    fresh = runner.invoke(app, ["build", "all", "-w", str(tmp_path / "ws"), "--videos", str(tmp_path / "raw"),
                                "--model", "openai:gpt-4o", "--detector", "tests.support.detector:make_detector"])
    assert fresh.exit_code == 2, fresh.output
    lines = [x for x in fresh.output.splitlines() if x.strip()]
    assert len(lines) <= 2 and lines[0].startswith("error: no API key") and "OPENAI_API_KEY" in lines[0]
    assert all(x.startswith("error: ") or "--api-key-env" in x for x in lines)  # one error, at most a hint
    assert not (tmp_path / "ws").exists()
    ws = _copy(short_ws, tmp_path / "copy")
    (ws / "videos" / "short" / "caption.json").unlink()
    before = sorted(p.name for p in (ws / "videos" / "short").iterdir())
    res = runner.invoke(app, ["build", "caption", "-w", str(ws), "--model", "openai:gpt-4o"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert [x for x in res.output.splitlines() if x.strip()][0].startswith("error: no API key")
    assert sorted(p.name for p in (ws / "videos" / "short").iterdir()) == before


@pytest.mark.parametrize(("module", "extra", "stage"), [
    ("scenedetect", "build", "all"), ("cv2", "build", "keyframes"), ("ultralytics", "detect", "all")])
def test_missing_extra_fails_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        module: str, extra: str, stage: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if the package were not installed
    _short(tmp_path / "raw" / "short.mp4")
    ws = tmp_path / "ws"
    args = ["build", stage, "-w", str(ws), "--videos", str(tmp_path / "raw"), "--model", "openai:m",
            "--model-base-url", "http://127.0.0.1:9/v1"]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert not ws.exists()  # nothing written: not even the manifest
    first = res.output.splitlines()[0]
    assert first.startswith("error: ") and f"mtvbench[{extra}]" in first and module in first
    assert "Traceback" not in res.output


# ------------------------------------------------------------------ the workspace itself


def test_manifest_video_name_cannot_leave_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    video = _short(tmp_path / "raw" / "short.mp4")
    (ws / "manifest.json").write_text(json.dumps({"videos": [{"name": "../../outside", "path": str(video)}]}))
    res = runner.invoke(app, ["build", "split", "-w", str(ws)])
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "manifest.json" in out and "videos.0.name" in out and "Traceback" not in out
    assert not (tmp_path / "outside").exists() and not (ws / "videos").exists()


def test_a_video_folder_linked_outside_is_refused(tmp_path: Path) -> None:
    _short(tmp_path / "raw" / "short.mp4")
    ws = tmp_path / "ws"
    (ws / "videos").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (ws / "videos" / "short").symlink_to(tmp_path / "elsewhere")
    res = runner.invoke(app, ["build", "split", "-w", str(ws), "--videos", str(tmp_path / "raw")])
    assert res.exit_code == 2, res.output
    assert "outside" in " ".join(res.output.split())
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_busy_workspace_exits_4(short_ws: dict, tmp_path: Path) -> None:
    ws = _copy(short_ws, tmp_path)
    with Workspace(ws).lock():
        res = runner.invoke(app, ["build", "export", "-w", str(ws)])
    assert res.exit_code == 4, res.output
    assert "another mtvbench build" in res.output


def test_given_up_items_are_kept_until_retry_failed(short_ws: dict, tmp_path: Path) -> None:
    """Dialogues that break the rules up to the re-ask bound are given up: listed, not asked again by a plain
    rerun (their replies are stored), asked again with --retry-failed."""
    ws = _copy(short_ws, tmp_path)
    n = short_ws["kinds"]["generate"]
    with LoopbackServer(ServerState(model_reply=Scripted(bad_dialogues=99))) as srv:
        bad = _build("generate", ws, srv.url, "--force")
        n_bad = len(srv.state.requests)
        plain = _build("generate", ws, srv.url)
        n_plain = len(srv.state.requests)
    assert bad.exit_code == 0, bad.output
    assert n_bad == 3 * n and f"{n} given up" in " ".join(bad.output.split())
    assert plain.exit_code == 0 and n_plain == n_bad and "skipped" in plain.output
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        retried = _build("all", ws, srv.url, "--retry-failed")
        kinds = _kinds(srv.state.requests)
    assert retried.exit_code == 0, retried.output
    assert kinds["generate"] == n and "given up" not in retried.output
    assert _dataset(ws) == short_ws["dataset"]


def test_a_bad_video_fails_its_stage_and_the_others_go_on(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    _short(raw / "short.mp4")
    (raw / "broken.mp4").write_text("not a video")
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        res = _build("split", tmp_path / "ws", srv.url, "--videos", str(raw))
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "failed: split broken:" in out and "broken.mp4" in out and "Traceback" not in out
    assert (tmp_path / "ws" / "videos" / "short" / "split.json").is_file()
    assert not (tmp_path / "ws" / "videos" / "broken" / "split.json").exists()


@needs("detect", "ultralytics")  # no --detector: the default YOLO11 detector's package is checked up front
def test_rerun_without_model_or_detector_keeps_finished_work(short_ws: dict, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ws = _copy(short_ws, tmp_path)
    res = runner.invoke(app, ["build", "all", "-w", str(ws), "--config", str(_config(ws.parent))])
    assert res.exit_code == 0, res.output
    assert res.output.count("skipped") == 10
    assert _dataset(ws) == short_ws["dataset"]
    (ws / "videos" / "short" / "checklists.json").unlink()
    again = runner.invoke(app, ["build", "all", "-w", str(ws), "--config", str(_config(ws.parent))])
    assert again.exit_code == 2 and "no model for the 'checklist' stage" in again.output


def test_a_stage_is_stored_under_its_own_name_and_a_journal_of_another_format_is_refused(
        short_ws: dict, tmp_path: Path) -> None:
    """The suitability stage's artifact and journal rows are named ``suitability``; a workspace whose call journal
    is of another format (format 1 stored that stage as ``score``) is refused with one error naming both
    formats, before anything is asked or written."""
    import sqlite3

    ws = _copy(short_ws, tmp_path)
    video = ws / "videos" / "short"
    assert (video / "suitability.json").is_file() and not (video / "score.json").exists()
    journal = CallJournal(ws)
    try:
        assert journal.count("short", "suitability") > 0 and journal.count("short", "score") == 0
    finally:
        journal.close()
    (video / "generate.json").unlink()  # work to do: the journal is read
    for found in (1, 3):
        with sqlite3.connect(ws / "calls.sqlite") as db:
            db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(found),))
        db.close()
        with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
            res = _build("all", ws, srv.url)
            asked = len(srv.state.requests)
        out = " ".join(res.output.split())
        assert res.exit_code == 2, res.output
        assert f"call-journal format {found}" in out and "reads format 2" in out and "Traceback" not in out
        assert asked == 0 and not (video / "generate.json").exists()
