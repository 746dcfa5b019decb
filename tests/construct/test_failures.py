"""`build all` never reports success on failure: a video that gives nothing usable because the model's replies
broke the rules gets one line saying why and the build exits 3; a video whose units were all validly rated below 5
gets its line without failing the build, unless nothing at all is exported."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mtvbench.data.official import load_official
from mtvbench.data.schema import TASKS
from tests.support.build_replies import Scripted
from tests.support.builds import build_all, two_videos
from tests.support.openai_server import LoopbackServer, ServerState

Reply = Callable[[str, int], str]
VIDEOS = ("match", "short")


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_videos(tmp_path_factory.mktemp("raw") / "raw")


def _build(tmp_path: Path, videos: Path, reply: Reply):  # noqa: ANN202
    with LoopbackServer(ServerState(model_reply=reply)) as srv:
        return build_all(tmp_path / "ws", videos, srv.url)


def _lines(output: str, label: str) -> dict[str, str]:
    """``{video: why}`` of the summary lines ``<label>: <video>: <why>`` (one per video)."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        m = re.match(rf"^{label}: (\w+): (.*)$", line)
        if m:
            assert m.group(1) not in found, f"two lines for {m.group(1)}:\n{output}"
            found[m.group(1)] = m.group(2)
    return found


def _exported(ws: Path) -> dict[str, int]:
    """(dialogues, checklist entries) of the export."""
    out = ws / "dataset"
    dialogues = sum(len(v) for f in (out / "mtqa").glob("*.json") for v in json.loads(f.read_text()).values())
    entries = sum(len(e) for f in (out / "checklist").glob("*.json")
                  for ev in json.loads(f.read_text()).values() for e in ev.values())
    return {"dialogues": dialogues, "checklists": entries}


def _scores_where(low: Callable[[str], bool], script: Scripted) -> Reply:
    """Scripted replies, with every task rated 3 for units whose suitability prompt ``low`` picks."""

    def reply(prompt: str, n_images: int) -> str:
        if Scripted.kind(prompt) == "score" and low(prompt):
            return json.dumps({t.value: 3 for t in TASKS})
        return script(prompt, n_images)

    return reply


def test_garbage_replies_exit_3_with_one_line_per_video(tmp_path: Path, videos: Path) -> None:
    res = _build(tmp_path, videos, lambda prompt, n: "I am a teapot.")
    assert res.exit_code == 3, res.output
    why = _lines(res.output, "unusable")
    assert set(why) == set(VIDEOS), res.output
    assert why["match"] == "no unit rated 5-6: 4 of 4 suitability ratings broke the rules after 2 re-asks"
    assert why["short"] == "no unit rated 5-6: 2 of 2 suitability ratings broke the rules after 2 re-asks"
    assert "FAILED: 2 video(s) gave no usable dialogue" in res.output and "Traceback" not in res.output
    assert re.search(r"^suitability\s+match\s+unusable\b", res.output, re.MULTILINE)  # the stage's own line says it
    assert _exported(tmp_path / "ws") == {"dialogues": 0, "checklists": 0}
    # progress (not a terminal here): one line per stage at the end, with the replies of the LLM stages
    assert re.search(r"^suitability \(18 replies\)\s.*2/2", res.output, re.MULTILINE), res.output
    assert re.search(r"^split\s.*2/2", res.output, re.MULTILINE)


def test_malformed_suitability_scores_exit_3(tmp_path: Path, videos: Path) -> None:
    res = _build(tmp_path, videos, Scripted(score=9))  # every task rated 9: outside 1-6
    assert res.exit_code == 3, res.output
    why = _lines(res.output, "unusable")
    assert set(why) == set(VIDEOS)
    assert why["short"] == "no unit rated 5-6: 2 of 2 suitability ratings broke the rules after 2 re-asks"
    assert _exported(tmp_path / "ws")["dialogues"] == 0


def test_malformed_dialogues_exit_3(tmp_path: Path, videos: Path) -> None:
    res = _build(tmp_path, videos, Scripted(bad_dialogues=99))
    assert res.exit_code == 3, res.output
    why = _lines(res.output, "unusable")
    assert why == {"match": "24 of 24 dialogues failed the rule checks after 2 re-asks",
                   "short": "12 of 12 dialogues failed the rule checks after 2 re-asks"}, res.output
    assert _exported(tmp_path / "ws")["dialogues"] == 0


def test_malformed_checklists_exit_3_although_dialogues_export(tmp_path: Path, videos: Path) -> None:
    res = _build(tmp_path, videos, Scripted(bad_checklists=99))
    assert res.exit_code == 3, res.output
    why = _lines(res.output, "unusable")
    assert set(why) == set(VIDEOS)
    assert re.fullmatch(r"no checklist for (\d+) of \1 scored rounds after 2 re-asks \(24 dialogues without any\)",
                        why["match"]), why
    assert _exported(tmp_path / "ws") == {"dialogues": 36, "checklists": 0}


def test_a_video_validly_rated_below_5_gets_its_line_and_the_build_passes(tmp_path: Path, videos: Path) -> None:
    # the short video's units are the only ones whose ranges name 00:00:04 (its clips are 0-4 s and 4-8 s)
    res = _build(tmp_path, videos, _scores_where(lambda prompt: "00:00:04" in prompt, Scripted()))
    assert res.exit_code == 0, res.output
    assert _lines(res.output, "unusable") == {}
    assert _lines(res.output, "shortfall") == {"short": "no unit rated 5-6 (all 2 rated below 5)"}
    assert re.search(r"^suitability\s+short\s+done\b.*no unit rated 5-6", res.output, re.MULTILINE)
    bench, problems = load_official(tmp_path / "ws" / "dataset", require_scored=True)
    assert bench is not None, [p.render() for p in problems]
    assert set(bench.videos) == {"match"} and len(bench.dialogues) == 24


def test_every_video_validly_below_5_exports_nothing_and_exits_3(tmp_path: Path, videos: Path) -> None:
    res = _build(tmp_path, videos, Scripted(score=4))
    assert res.exit_code == 3, res.output
    assert _lines(res.output, "unusable") == {}
    assert set(_lines(res.output, "shortfall")) == set(VIDEOS)
    assert "FAILED: the export holds no dialogue" in res.output


def test_some_dialogues_given_up_get_a_line_without_failing_the_build(tmp_path: Path, videos: Path) -> None:
    script = Scripted()

    def reply(prompt: str, n_images: int) -> str:
        if Scripted.kind(prompt) == "generate" and "# Object Reference #" in prompt:
            return "Round 1\nUser: What is this?\nAssistant: A square."
        return script(prompt, n_images)

    res = _build(tmp_path, videos, reply)
    assert res.exit_code == 0, res.output
    assert _lines(res.output, "shortfall") == {"match": "4 of 24 dialogues failed the rule checks after 2 re-asks",
                                               "short": "2 of 12 dialogues failed the rule checks after 2 re-asks"}
    assert _exported(tmp_path / "ws")["dialogues"] == 30
