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
README = Path(__file__).resolve().parents[2] / "README.md"
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
    """The commands that open the README's construction section (``mtvbench`` left out)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Building a benchmark"):]
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


def test_build_prints_the_review_queue_as_a_table(offline_build: dict) -> None:
    """The review queue's counts are a table (tab-separated in a pipe), not a Python dict."""
    out = offline_build["first"].output
    assert "review queue: {" not in out and "{'" not in out
    lines = out.splitlines()
    header = lines.index("status\tdialogues")
    rows = [line.split("\t") for line in lines[header + 1:] if line.count("\t") == 1]
    assert rows and sum(int(n) for _, n in rows) == 54
