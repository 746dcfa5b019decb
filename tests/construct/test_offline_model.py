"""`mtvbench build all -m offline --no-objects`: a benchmark-shaped dataset with no API, marked NOT a real benchmark
by the export, `validate` and `run`; the review app opens its workspace. The scripted replies keep every rule."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.checklist_gen.generator import checklist_check
from mtvbench.cli import app
from mtvbench.construct.offline_model import NOT_A_BENCHMARK, caption_reply
from mtvbench.construct.stages.crossscene import Unit
from mtvbench.construct.stages.generate import check_dialogue, generation_prompt, parse_dialogue
from mtvbench.construct.stages.merge import MERGE_PROMPT, parse_same_scene
from mtvbench.construct.stages.suitability import PROBE_UNIT, parse_ratings, suitability_prompt
from mtvbench.data.buildmeta import load_metadata
from mtvbench.data.schema import TASKS, is_model_turn
from mtvbench.models.registry import create_backend
from mtvbench.prompts.generation import render_checklist_prompt
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.review.source import open_source
from tests.support.builds import two_videos

runner = CliRunner()
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "build.md"
CROSS = Unit(id="X1", kind="cross", segments=[0, 2], ranges=[(0.0, 5.0), (10.0, 15.0)],
             captions=["From 00:00:00 to 00:00:05: a bright, still shot with red tones across the frame.",
                       "From 00:00:10 to 00:00:15: a dim, moving shot with blue tones across the frame."],
             objects=["obj001"], object_lines=["- obj001 (dog): A brown dog. Seen at 00:00:01, 00:00:11."])


def _ask(prompt: str) -> GenerationResult:
    model = create_backend("offline")
    return asyncio.run(model.generate(GenerationRequest(id="t", prompt=prompt)))


@pytest.mark.parametrize("unit", [CROSS, PROBE_UNIT], ids=["cross-scene", "probe"])
@pytest.mark.parametrize("whole", [False, True], ids=["clip", "whole-video"])
def test_scripted_dialogues_and_checklists_keep_every_rule(unit: Unit, whole: bool) -> None:
    for task in TASKS:
        prompt = generation_prompt(task, unit, whole)
        rounds = parse_dialogue(_ask(prompt).text)
        assert check_dialogue(task, rounds, require_range=not whole) == [], task
        assert "00:00:00" in rounds[0].user  # the first question names the unit's range
        for r in rounds:
            if not is_model_turn(task, r.ability):
                continue
            for n in (1, 3, 5):
                items = checklist_check(n)(_ask(render_checklist_prompt(r.user, r.assistant, n)).text)
                assert isinstance(items, list) and len(items) == n, (task, r.assistant, items)


def test_scripted_ratings_captions_and_merge_decisions() -> None:
    scores, problems = parse_ratings(_ask(suitability_prompt(CROSS)).text)
    assert problems == [] and set(scores) == set(TASKS) and all(s in (5, 6) for s in scores.values())
    assert _ask(suitability_prompt(CROSS)).text == _ask(suitability_prompt(CROSS)).text  # deterministic
    cap = caption_reply("The frames are from one shot of a video, from 00:00:03 to 00:00:07. Describe", None)
    assert cap.startswith("From 00:00:03 to 00:00:07: a dim, still shot with grey tones")

    def merge(a: str, b: str) -> bool | None:
        return parse_same_scene(_ask(MERGE_PROMPT.format(a_start="00:00:00", a_end="00:00:05", b_start="00:00:05",
                                                         b_end="00:00:09", a_caption=a, b_caption=b)).text)

    red, blue = CROSS.captions
    assert merge(red, red.replace("00:00:00", "00:00:05")) is True
    assert merge(red, blue) is False


def test_the_offline_model_answers_only_build_prompts() -> None:
    out = _ask("Answer the question about the video: what happens?")
    assert out.outcome == "error" and "only answers the prompts of `mtvbench build`" in (out.error or "")


def readme_try_it() -> list[list[str]]:
    """The commands that open the docs' build guide (``mtvbench`` left out)."""
    section = GUIDE.read_text(encoding="utf-8")
    start = section.index("```bash\n") + 8
    block = section[start:section.index("\n```", start)]
    return [shlex.split(line.split("#")[0])[1:] for line in block.splitlines() if line.startswith("mtvbench ")]


@pytest.fixture(scope="module")
def offline_build(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("offline")
    videos = two_videos(root / "raw")
    build, serve = readme_try_it()
    assert build == ["build", "all", "--videos", "my_videos/", "-w", "try-ws/", "-m", "offline", "--no-objects"]
    assert serve == ["review", "serve", "try-ws/"]

    def ours(args: list[str], ws: str) -> list[str]:
        return [{"my_videos/": str(videos), "try-ws/": str(root / ws)}.get(a, a) for a in args]

    first = runner.invoke(app, ours(build, "ws"))
    again = runner.invoke(app, ours(build, "ws2"))
    return {"root": root, "ws": root / "ws", "first": first, "again": again}


def test_build_all_offline_exports_a_dataset_marked_not_a_benchmark(offline_build: dict) -> None:
    res = offline_build["first"]
    assert res.exit_code == 0, res.output
    assert f"NOT A BENCHMARK: {NOT_A_BENCHMARK}" in " ".join(res.output.split())
    data = offline_build["ws"] / "dataset"
    meta = load_metadata(data)
    assert meta is not None and meta.not_a_benchmark == NOT_A_BENCHMARK
    assert len(meta.dialogues) == 54  # match: 3 scenes + 3 theme units, short: 2 + 1; x 6 tasks
    val = runner.invoke(app, ["validate", str(data)])
    out = " ".join(val.output.split())
    assert val.exit_code == 0, val.output
    assert "WARNING: metadata.json: NOT a real benchmark: built with the scripted offline model" in out
    assert "54 dialogues, 2 videos, 135 scored turns; 0 errors, 1 warnings" in out
    assert runner.invoke(app, ["validate", str(data), "--strict"]).exit_code == 2
    # deterministic: a second build from the same videos exports the same dialogues and checklists
    assert offline_build["again"].exit_code == 0
    other = offline_build["root"] / "ws2" / "dataset"
    for f in sorted((data / "mtqa").glob("*.json")) + sorted((data / "checklist").glob("*.json")):
        assert f.read_text() == (other / f.relative_to(data)).read_text(), f.name


def test_run_on_an_offline_dataset_says_it_is_not_a_benchmark(offline_build: dict, tmp_path: Path) -> None:
    data = offline_build["ws"] / "dataset"
    res = runner.invoke(app, ["run", "--data", str(data), "--model", "oracle", "--judge", "offline", "--out",
                              str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), "--frames", "2",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert f"NOT A BENCHMARK: {data}: {NOT_A_BENCHMARK}" in out
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["overall"] == pytest.approx(100.0)  # the scripted checklists hold for the golden answers


def test_the_review_app_opens_the_offline_workspace(offline_build: dict) -> None:
    source = open_source(offline_build["ws"])
    items = source.load()
    assert source.kind == "workspace" and len(items) == 54
    assert {it.video for it in items} == {"match", "short"} and all(it.checklists for it in items)
    pytest.importorskip("starlette")
    from tests.review.conftest import make_client, who

    listed = make_client(offline_build["ws"]).get("/api/items", headers=who("ann1")).json()["items"]
    assert len(listed) == 54


# ------------------------------------------------------------------------------ the mark travels (issue 25, 5)

def _unmarked_copy(data: Path, dest: Path) -> Path:
    """A copy of the dataset folder without ``metadata.json`` (videos hard-linked)."""
    import os
    import shutil

    shutil.copytree(data, dest, copy_function=os.link)
    (dest / "metadata.json").unlink()
    return dest


def test_every_dialogue_record_carries_the_mark_and_a_copy_without_metadata_is_recognised(
        offline_build: dict, tmp_path: Path) -> None:
    from mtvbench.data.layout import NOT_A_BENCHMARK_KEY
    from mtvbench.data.official import load_official
    from mtvbench.data.schema import NotABenchmark

    data = offline_build["ws"] / "dataset"
    records = [r for f in sorted((data / "mtqa").glob("*.json")) for recs in json.loads(f.read_text()).values()
               for r in recs]
    assert len(records) == 54 and all(r[NOT_A_BENCHMARK_KEY] == NOT_A_BENCHMARK for r in records)
    assert all(set(r) == {"event_index", "mtqa", NOT_A_BENCHMARK_KEY} for r in records)
    copy = _unmarked_copy(data, tmp_path / "copy")
    bench, problems = load_official(copy, check_videos=False)
    assert bench is not None and bench.not_a_benchmark is not None
    assert bench.not_a_benchmark.reason == NOT_A_BENCHMARK and bench.not_a_benchmark.found_in.startswith("mtqa/")
    original, _ = load_official(data, check_videos=False)
    assert original is not None
    assert original.not_a_benchmark == NotABenchmark(reason=NOT_A_BENCHMARK, found_in="metadata.json")
    # the key is read for the mark only: the dialogues are those of the data
    assert [d.model_dump() for d in bench.dialogues] == [d.model_dump() for d in original.dialogues]
    assert [p.message for p in problems] == [f"NOT a real benchmark: {NOT_A_BENCHMARK}"]
    val = runner.invoke(app, ["validate", str(copy)])
    assert val.exit_code == 0 and "NOT a real benchmark: built with the scripted offline model" in " ".join(
        val.output.split())


def test_the_mark_travels_with_every_number_made_from_the_data(offline_build: dict, tmp_path: Path) -> None:
    """A run on a copy without ``metadata.json``: config.yaml records the mark (and still passes back to
    --config), scores.json, leaderboard.md, `score` (every format), `report` (md, csv, tex, html), `compare`,
    `stats`, the review app and the scores.json of an --answers-from run all say it."""
    import yaml

    from tests.review.conftest import make_client, who

    copy = _unmarked_copy(offline_build["ws"] / "dataset", tmp_path / "copy")
    common = ["--cache-dir", str(tmp_path / "cache"), "--frames", "2", "--quiet"]

    def run(model: str, out: str) -> Path:
        res = runner.invoke(app, ["run", "--data", str(copy), "--model", model, "--judge", "offline",
                                  "--out", str(tmp_path / out), *common])
        assert res.exit_code in (0, 3), res.output
        assert f"NOT A BENCHMARK: {copy}: {NOT_A_BENCHMARK}" in " ".join(res.output.split())
        return tmp_path / out

    def flat(text: str) -> str:
        return " ".join(text.split())

    oracle, refuse = run("oracle", "oracle"), run("refuse", "refuse")
    recorded = yaml.safe_load((oracle / "config.yaml").read_text())["not_a_benchmark"]
    assert recorded["reason"] == NOT_A_BENCHMARK and recorded["found_in"].startswith("mtqa/")
    again = runner.invoke(app, ["run", "--config", str(oracle / "config.yaml"), "--quiet"])
    assert again.exit_code == 0, again.output  # the recorded key is no setting: the file is a --config
    assert json.loads((oracle / "scores.json").read_text())["not_a_benchmark"] == recorded
    board = flat((oracle / "leaderboard.md").read_text())
    assert "**NOT A BENCHMARK**" in board and "built with the scripted offline model" in board
    for fmt in ("table", "plain", "md", "csv"):
        res = runner.invoke(app, ["score", str(oracle), "--format", fmt])
        assert "built with the scripted offline model" in flat(res.output), (fmt, res.output)
    assert json.loads(runner.invoke(app, ["score", str(oracle), "--format", "json"]).stdout)[
        "not_a_benchmark"] == recorded
    res = runner.invoke(app, ["report", str(oracle), str(refuse), "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    rep = tmp_path / "report"
    assert flat((rep / "leaderboard.md").read_text()).count("NOT a real benchmark") == 2
    rows = (rep / "leaderboard.csv").read_text().splitlines()
    assert rows[0].endswith(",not_a_benchmark") and all("scripted offline model" in r for r in rows[1:])
    assert (rep / "leaderboard.tex").read_text().count(r"$^\ddagger$") == 3  # both rows and the note
    assert flat((rep / "report.html").read_text()).count("NOT a real benchmark") >= 3  # notes and the runs table
    res = runner.invoke(app, ["compare", str(oracle), str(refuse), "--bootstrap", "50"])
    assert "run A: NOT a real benchmark" in flat(res.output) and "run B: NOT a real benchmark" in flat(res.output)
    for path in (copy, oracle):
        res = runner.invoke(app, ["stats", str(path)])
        assert res.exit_code == 0 and "NOT a real benchmark: built with the scripted offline model" in flat(
            res.output), res.output
    res = runner.invoke(app, ["run", "--answers-from", str(oracle), "--judge", "offline", "--out",
                              str(tmp_path / "rejudged"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "rejudged" / "scores.json").read_text())["not_a_benchmark"] == recorded
    pytest.importorskip("starlette")
    for source in (copy, oracle, offline_build["ws"]):
        job = "rater" if source == oracle else "annotator"
        session = make_client(source, store=tmp_path / f"{source.name}.sqlite").get(
            "/api/session", headers=who("u1", job)).json()
        assert "built with the scripted offline model" in (session["source"]["not_a_benchmark"] or ""), source


def test_build_export_accepted_only_with_nothing_accepted_keeps_the_previous_export(
        offline_build: dict, tmp_path: Path) -> None:
    """Issue 25, 6: exit 3 and FAILED, and ``ws/dataset`` byte for byte as it was (not twelve ``{}`` files), with
    nothing half-written beside it; without an earlier export nothing is written."""
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(offline_build["ws"], ws)
    data = ws / "dataset"

    def tree() -> dict[str, bytes]:
        return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()}

    def beside() -> list[str]:
        return sorted(p.name for p in ws.iterdir() if p.name.startswith(".dataset."))

    before = tree()
    assert sum(len(json.loads(v)) for k, v in before.items() if k.startswith("mtqa/")) > 0
    res = runner.invoke(app, ["build", "export", "-w", str(ws), "--accepted-only"])
    out = " ".join(res.output.split())
    assert res.exit_code == 3, res.output
    assert "FAILED" in out and f"the previous export in {data} is kept as it was" in out
    assert tree() == before and beside() == []
    shutil.rmtree(data)
    res = runner.invoke(app, ["build", "export", "-w", str(ws), "--accepted-only"])
    assert res.exit_code == 3 and "nothing was written" in res.output
    assert not data.exists() and beside() == []


def test_build_prints_the_review_queue_as_a_table(offline_build: dict) -> None:
    """The review queue's counts are a table (tab-separated in a pipe), not a Python dict."""
    out = offline_build["first"].output
    assert "review queue: {" not in out and "{'" not in out
    lines = out.splitlines()
    header = lines.index("status\tdialogues")
    rows = [line.split("\t") for line in lines[header + 1:] if line.count("\t") == 1]
    assert rows and sum(int(n) for _, n in rows) == 54
