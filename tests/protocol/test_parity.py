"""Parity with the authors' released code: ``mtvbench run`` under the default ``authors`` protocol, fed the
answers the authors' inference script produced and judged by a loopback server that replays the judge
replies eval.py received, gives eval.py's own values: the judge prompts byte for byte, every judge run's
value, every turn's ACC, every dialogue's value (all on eval.py's 0-1 scale, exactly) and each task's
``mean_mtqa`` (x 100, within 1e-9). The fixtures are data recorded from the scripts themselves
(tests/fixtures/authors/README.md); nothing here recomputes eval.py's arithmetic by hand.

The mark of data that is not a benchmark (``mtvbench_not_a_benchmark`` in every dialogue record, which the bundled
sample carries and ``build -m offline`` writes) changes none of these values: eval.py and the inference scripts read
only ``event_index`` and ``mtqa`` of a dialogue record, and the loader reads the key for the mark alone; each case
runs with and without it.

Where mtvbench differs on purpose it is asserted too: a dropped turn or a skipped run is counted and the run
is INCOMPLETE (eval.py is silent); a round key not of the form ``Round k`` is refused by validation (eval.py
skips it; the edge case's only one is the last round of its dialogue, so leaving it out changes no value).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

import pytest

from mtvbench.data.layout import NOT_A_BENCHMARK_KEY
from mtvbench.data.schema import STEM_TO_TASK
from mtvbench.models.registry import BACKENDS, register_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.rundir import RunDirectory
from tests.support.authors_fixtures import AuthorsCase, Case, load_case, load_mix
from tests.support.replay_server import ReplayServer, prompt_digest
from tests.support.run_helpers import cli

PREFIX = "authorsfixture"


class FixtureAnswers:
    """The answers the authors' inference script wrote, by turn id (``task/video/event#round``)."""

    needs_frames = False

    def __init__(self, case: Case | Literal["mix"], options: BackendOptions):
        self.name = f"{PREFIX}:{case}"
        c = load_mix() if case == "mix" else load_case(case)
        self.by_turn: dict[str, str] = {}
        for stem, videos in c.answers.items():
            task = STEM_TO_TASK[stem].value
            mtqa = json.loads(c.dataset_json()[f"mtqa/{stem}.json"])
            for video, events in videos.items():
                for event, answers in events.items():
                    rounds = next(e["mtqa"] for e in mtqa[video] if str(e["event_index"]) == event)
                    for key, answer in zip(rounds, answers):  # the answers list is in file order
                        self.by_turn[f"{task}/{video}/{event}#{key.removeprefix('Round ')}"] = answer

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        text = self.by_turn[request.id]
        return GenerationResult(text=text, raw_text=text)

    async def aclose(self) -> None:
        return None


if PREFIX not in BACKENDS:
    register_backend(PREFIX)(lambda name, options: FixtureAnswers(name, options))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def sample_videos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mtvbench.data.sample import materialize

    return materialize(tmp_path_factory.mktemp("sample") / "sample") / "videos"


def dataset(case: AuthorsCase, dest: Path, videos: Path, marked: bool | None = None) -> Path:
    """The case's dataset folder: its JSON files, and the sample's videos (under the edge's names for edge);
    ``marked``: every dialogue record carries the mark of data that is not a benchmark (True), none does
    (False), or as the case's files have it (None: the bundled sample is marked, edge is not)."""
    for rel, data in case.dataset_json().items():
        if marked is not None and rel.startswith("mtqa/"):
            obj = json.loads(data)
            for records in obj.values():
                for e in records:
                    e.pop(NOT_A_BENCHMARK_KEY, None)
                    if marked:
                        e[NOT_A_BENCHMARK_KEY] = "a test mark"
            data = json.dumps(obj, ensure_ascii=False, indent=2).encode()
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel == "mtqa/topic_shifting.json" and case.name == "edge":
            obj = json.loads(data)
            for e in obj["edge_shift"]:
                e["mtqa"].pop("Round5", None)  # malformed key: refused by validation (asserted below)
            data = json.dumps(obj).encode()
        if rel == "checklist/topic_shifting_CheckList.json" and case.name == "edge":
            obj = json.loads(data)  # and its checklist entry, which eval.py never reaches either
            obj["edge_shift"]["0"] = [e for e in obj["edge_shift"]["0"] if e["round index"] != 5]
            data = json.dumps(obj).encode()
        (dest / rel).write_bytes(data)
    (dest / "videos").mkdir()
    names = case.edge_videos() or {p.stem: p.stem for p in videos.glob("*.mp4")}
    for name, source in names.items():
        os.link(videos / f"{source}.mp4", dest / "videos" / f"{name}.mp4")
    return dest


def run_case(case: AuthorsCase, tmp_path: Path, videos: Path, marked: bool | None = None
             ) -> tuple[Path, ReplayServer, Any]:
    data = dataset(case, tmp_path / "data", videos, marked)
    tasks = ",".join(STEM_TO_TASK[stem].abbr for stem in case.tasks)
    with ReplayServer(case.script) as srv:
        res = cli("run", "--data", data, "--tasks", tasks, "--model", f"{PREFIX}:{case.name}",
                  "--judge", "openai:gemini-2.5-flash",
                  "--judge-base-url", srv.url, "--judge-runs", "3", "--judge-concurrency", "1", "--quiet",
                  "--judge-option", "retry_base_s=0.001", "--judge-option", "breaker_threshold=100000",
                  "--out", tmp_path / "run")
    return tmp_path / "run", srv, res


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "unmarked"])
@pytest.mark.parametrize("name", ["sample", "edge"])
def test_scores_equal_eval_py(name: Case, marked: bool, tmp_path: Path, sample_videos: Path) -> None:
    case = load_case(name)
    run_dir, srv, res = run_case(case, tmp_path, sample_videos, marked)
    assert res.exit_code in (0, 3), res.output
    # the judge was asked exactly eval.py's prompts, as eval.py sent them
    sent = {rq.digest: rq.body for rq in case.requests}
    assert srv.requests and {r.digest for r in srv.requests} <= set(sent)
    asked = {rq.digest for rq in case.requests}
    assert {r.digest for r in srv.requests} == asked
    for r in srv.requests:
        assert r.body["messages"] == sent[r.digest]["messages"]
        assert r.body["model"] == "gemini-2.5-flash" and set(r.body) == {"model", "messages"}
    run = RunDirectory.open(run_dir).load(bootstrap=0, details=True)
    by_id = {t.turn_id: t for ds in run.dscores for t in ds.turns}
    dscore = {ds.dialogue_id: ds.score for ds in run.dscores}
    for stem, exp in case.tasks.items():
        task = STEM_TO_TASK[stem].value
        for t in exp.turns:
            got = by_id[f"{task}/{t.video}/{t.event_index}#{t.round}"]
            assert got.score == t.acc, t.label
            assert got.per_run == {r.run_id - 1: r.acc for r in t.runs}, t.label
            assert got.unscored_runs == len(t.skipped_runs), t.label
            if t.requests == t.attempts:  # no transport retry involved: the same asks, the 5-ask bound included
                assert sum(1 for r in srv.requests if r.digest == t.digest) == t.attempts, t.label
        for d in exp.dropped_turns:  # eval.py drops them silently; here they are counted, unscored
            got = by_id[f"{task}/{d.video}/{d.event_index}#{d.round}"]
            assert got.score is None and got.unscored_runs == 3
        for d in exp.dialogues:
            assert dscore[f"{task}/{d.video}/{d.event_index}"] == d.value, (stem, d)
        assert run.scores.tasks[task] == pytest.approx(100 * exp.mean_mtqa, abs=1e-9), stem
        assert sum(1 for i in by_id if i.startswith(task + "/")) == len(exp.turns) + len(exp.dropped_turns)
    s = run.scores
    assert s.protocol == "authors" and s.judge_runs == 3
    assert (s.not_a_benchmark is not None) == marked  # the key is read for the mark and for nothing else
    dropped = sum(len(e.dropped_turns) for e in case.tasks.values())
    skipped = sum(len(t.skipped_runs) for e in case.tasks.values() for t in e.turns)
    assert s.complete == (dropped == skipped == 0 and s.counts.checklists_not_judged == 0
                          and s.counts.dialogues_without_score == 0)
    if not s.complete:
        assert res.exit_code == 3 and any("judge runs without a verdict" in r for r in s.incomplete_reasons)


def test_edge_drops_are_counted_and_loud(tmp_path: Path, sample_videos: Path) -> None:
    case = load_case("edge")
    run_dir, _, res = run_case(case, tmp_path, sample_videos)
    s = RunDirectory.open(run_dir).load(bootstrap=0, details=True).scores
    mr = case.tasks["memory_recall"]
    assert len(mr.dropped_turns) == 3 and s.counts.unscored_turns == 3  # edge_formats R8, edge_drop R2 and R3
    # eval.py's unasked entries: text round index, no answer at the position (counted here), a duplicate entry
    # (a validation warning: the last one is used, as eval.py does), and the two the test dataset leaves out
    kinds = [u.reason for e in case.tasks.values() for u in e.unasked]
    counted = [r for r in kinds if "superseded" not in r and "Round5" not in r and "event" not in r]
    assert s.counts.checklists_not_judged == len(counted) == 2
    assert "INCOMPLETE" in res.output and res.exit_code == 3
    reasons = " ".join(s.incomplete_reasons)
    assert "given as text" in reasons and "no answer at position 5" in reasons


def test_a_malformed_round_key_is_refused(tmp_path: Path, sample_videos: Path) -> None:
    case = load_case("edge")
    data = dataset(case, tmp_path / "data", sample_videos)
    shutil.copy(case.root / "mtqa" / "topic_shifting.json", data / "mtqa" / "topic_shifting.json")
    res = cli("validate", data)
    assert res.exit_code == 2 and "'Round5' is not of the form 'Round k'" in res.output


def test_placeholder_and_digest_helpers_agree_with_the_fixtures() -> None:
    from mtvbench.prompts import placeholder_answer, render_authors_judge_prompt

    case = load_case("edge")
    assert case.expected_raw["placeholder"] == placeholder_answer()
    rq = case.requests[0]
    assert prompt_digest(rq.prompt) == rq.digest
    assert rq.prompt.startswith("\n    Given a current model-generated answer") and rq.prompt.endswith("```\n    ")
    assert render_authors_judge_prompt("A", [("Q1", "x?")]).count("\n    ### ") == 2
