"""Class 1: a stored result is bound to exactly what produced it; edits ask again only what changed."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from mtvbench.run.evaluate import evaluate
from tests.support.datasets import write_video
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.run_helpers import cfg_for, cli, cli_run, scores_of, settings


def edit_json(path: Path, fn: Any) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def set_round(data_root: Path, stem: str, video: str, k: int, field: str, text: str) -> None:
    edit_json(data_root / "mtqa" / f"{stem}.json", lambda d: d[video][0]["mtqa"][f"Round {k}"].update({field: text}))


def rows(run: Path) -> dict[str, dict[str, Any]]:
    return {r["turn_id"]: r for r in map(json.loads, (run / "responses.jsonl").read_text().splitlines())}


def edit_and_rerun(dataset: Path, tmp_path: Path, edit: Callable[[], None], **kw: Any
                   ) -> tuple[Result, list[dict[str, Any]]]:
    """Run, ``edit`` the data, run the same command again: its result and the requests it made."""
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", **kw))
        before = len(srv.state.requests)
        edit()
        res = cli_run(settings(dataset, tmp_path / "run", srv.url, tmp_path / "cache", **kw))
        assert res.exit_code == 0, res.output
        return res, srv.state.requests[before:]


def said(res: Result) -> str:
    return " ".join(res.output.split())


def test_edited_question_is_asked_again_with_the_turns_that_saw_it(dataset: Path, tmp_path: Path) -> None:
    res, new = edit_and_rerun(dataset, tmp_path, lambda: set_round(dataset, "object_reference", "vid0", 3, "User",
                                                                   "Where did the EDITED square go?"))
    asked = sorted((r["text"] for r in new if not r["judge"]), key=len)
    # round 3 itself, and round 5 whose golden history holds round 3's question; nothing else
    assert len(asked) == 2 and asked[0].endswith("Current question: Where did the EDITED square go?")
    assert "User: Where did the EDITED square go?" in asked[1]
    assert asked[1].endswith("Question 5 about the object_reference clip?")
    # round 3's new answer is judged (two runs); round 5's echo answer came out the same: its verdicts stand
    assert len([r for r in new if r["judge"]]) == 2
    out = said(res)
    assert "2 stored responses no longer match" in out and "question edited: 1" in out
    assert "conversation history edited (an earlier question or golden answer): 1" in out
    row = rows(tmp_path / "run")["object_reference/vid0/0#3"]
    assert row["question"] == "Where did the EDITED square go?" and "EDITED" in row["answer"]
    s = scores_of(tmp_path / "run")
    assert s["complete"] and s["counts"]["superseded_responses"] == 2 and s["counts"]["superseded_verdicts"] == 2


def test_edited_golden_answer_invalidates_the_later_turns_that_saw_it(dataset: Path, tmp_path: Path) -> None:
    res, new = edit_and_rerun(dataset, tmp_path, lambda: set_round(dataset, "summary", "vid0", 4, "Assistant",
                                                                   "An edited golden answer of round 4."),
                              judge="offline")
    # round 5 has round 4 in its golden history; round 3 does not and is kept (the judge is offline: no requests)
    assert len(new) == 1 and "Question 5 about the summary clip" in new[0]["text"]
    assert "Assistant: An edited golden answer of round 4." in new[0]["text"]
    assert "conversation history edited (an earlier question or golden answer): 1" in said(res)


def test_edited_checklist_is_judged_again_without_asking_the_model(dataset: Path, tmp_path: Path) -> None:
    ck = dataset / "checklist" / "memory_recall_CheckList.json"
    res, new = edit_and_rerun(dataset, tmp_path, lambda: edit_json(ck, lambda d: d["vid1"]["1"][0].update(
        {"Q1": "Does the model state that the answer is ok?"})))
    assert not [r for r in new if not r["judge"]]  # the answer is still valid: no model call
    judged = [r for r in new if r["judge"]]
    assert len(judged) == 2 and all("Q1: Does the model state that the answer is ok?" in r["text"] for r in judged)
    assert "checklist items edited: 2" in said(res)


def test_flipped_expected_answer_is_rescored_without_any_call(dataset: Path, tmp_path: Path) -> None:
    ck, before = dataset / "checklist" / "answer_refusal_CheckList.json", {}

    def flip() -> None:
        before.update(rows(tmp_path / "run")["answer_refusal/vid1/3#3"])
        edit_json(ck, lambda d: d["vid1"]["3"][0].update({"A5": "Yes"}))  # the judge never saw A5

    _, new = edit_and_rerun(dataset, tmp_path, flip)
    assert new == []  # nothing asked again
    assert before["turn_score"] == 20.0 and rows(tmp_path / "run")["answer_refusal/vid1/3#3"]["turn_score"] == 0.0


def test_self_context_earlier_answer_change_invalidates_later_turns(dataset: Path, tmp_path: Path) -> None:
    res, new = edit_and_rerun(dataset, tmp_path, lambda: set_round(dataset, "topic_shifting", "vid0", 2, "User",
                                                                   "An edited second question?"),
                              context="self", judge="offline")
    # round 2 changed; its (echo) answer changed, so rounds 3-5, which see it, are asked again; round 1 is kept
    assert sorted(r["text"].rsplit("Current question: ", 1)[1] for r in new) == [
        "An edited second question?", *(f"Question {k} about the topic_shifting clip?" for k in (3, 4, 5))]
    assert all("Assistant: Answer to: An edited second question? [frames=4]" in r["text"] for r in new[1:])
    out = said(res)
    assert "question edited: 1" in out and "an earlier turn of its dialogue is asked again (self context): 3" in out


def test_self_context_ignores_golden_answers_the_model_never_saw(dataset: Path, tmp_path: Path) -> None:
    res, new = edit_and_rerun(dataset, tmp_path, lambda: set_round(dataset, "topic_shifting", "vid0", 2, "Assistant",
                                                                   "An edited golden answer."),
                              context="self", judge="offline")
    assert new == []  # its prompts hold the model's own answers, not this one
    assert "no longer match" not in res.output and scores_of(tmp_path / "run")["complete"]


def test_changed_video_content_asks_its_turns_again(dataset: Path, tmp_path: Path) -> None:
    res, new = edit_and_rerun(dataset, tmp_path, lambda: write_video(dataset / "videos" / "vid1.mp4", n_frames=30),
                              judge="offline")
    # vid1 holds three dialogues (memory_recall, answer_refusal, proactive_interaction), two scored turns each
    assert len(new) == 6 and all("memory_recall" in r["text"] or "answer_refusal" in r["text"]
                                 or "proactive_interaction" in r["text"] for r in new)
    assert "video content changed: 6" in said(res)


def test_stale_answer_is_never_scored_even_when_asking_again_failed(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    set_round(dataset, "summary", "vid0", 3, "User", "A new question 3?")
    with LoopbackServer(ServerState(unauthorized=True)) as bad:  # asking again fails
        res = cli_run(settings(dataset, tmp_path / "run", bad.url, tmp_path / "cache"))
    assert res.exit_code == 3, res.output
    res = cli("score", str(tmp_path / "run"))
    assert res.exit_code == 3, res.output
    out = " ".join(res.output.split())
    # round 3 and round 5 (which has round 3's question in its history) hold only answers to the old data
    assert "INCOMPLETE" in out and "2 scored turns without a model response (2 of them answered only before" in out
    s = scores_of(tmp_path / "run")
    assert not s["complete"] and s["counts"]["stale_turns"] == 2 and s["overall"] is None
    row = rows(tmp_path / "run")["content_summary/vid0/2#3"]
    assert row["question"] == "A new question 3?" and row["answer"] is None and row["outcome"] == "missing"


def test_another_dataset_is_refused_and_a_moved_copy_accepted(dataset: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        evaluate(cfg_for(dataset, tmp_path / "run", srv.url, tmp_path / "cache", judge="offline"))
        n = len(srv.state.requests)
        moved = tmp_path / "moved"
        shutil.copytree(dataset, moved)
        shutil.rmtree(dataset)
        res = cli_run(settings(moved, tmp_path / "run", srv.url, tmp_path / "cache", judge="offline"))
        assert res.exit_code == 0, res.output
        assert len(srv.state.requests) == n  # same dialogues, same content: nothing asked again
        assert "the dataset moved from" in " ".join(res.output.split())
        other = tmp_path / "other"
        shutil.copytree(moved, other)
        for f in [*(other / "mtqa").glob("*.json"), *(other / "checklist").glob("*.json")]:
            f.write_text(f.read_text().replace('"vid0"', '"clip0"').replace('"vid1"', '"clip1"'))
        for v in ("vid0", "vid1"):
            (other / "videos" / f"{v}.mp4").rename(other / "videos" / f"{v.replace('vid', 'clip')}.mp4")
        res = cli_run(settings(other, tmp_path / "run", srv.url, tmp_path / "cache", judge="offline"))
        assert len(srv.state.requests) == n
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "a different dataset" in out and str(moved) in out and "Traceback" not in out
