"""Stages 9-10: task scoring and dialogue generation — parsing, rule checks, bounded re-asks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mtvbench.construct.calls import StageModel
from mtvbench.construct.journal import CallJournal
from mtvbench.construct.stages.crossscene import Unit
from mtvbench.construct.stages.generate import GenRound, check_dialogue, generate_dialogues, parse_dialogue
from mtvbench.construct.stages.suitability import SuitabilityResult, UnitRatings, parse_ratings, rate_units
from mtvbench.data.schema import TASKS, Task
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from tests.support.build_replies import Scripted, good_dialogue
from tests.support.openai_server import LoopbackServer, ServerState


def _model(url: str) -> StageModel:
    return StageModel(create_backend("openai:gen", BackendOptions(base_url=url, max_retries=0)))


@pytest.mark.parametrize("task", TASKS)
def test_good_dialogues_pass_every_rule(task: Task) -> None:
    rounds = parse_dialogue(good_dialogue(task))
    assert len(rounds) == 5
    assert check_dialogue(task, rounds) == []


def test_parse_tolerates_markdown_headers_and_multiline() -> None:
    text = (
        "Here is the dialogue.\n\n### Round 1: Entity Recognition\n**User:** What happens in the video clip from "
        "00:00:01 to 00:00:04?\n**Assistant:** A man in red\nopens a door.\n\n**Round 2 (Object Reference)**\n"
        "User: Why did he do it?\nBot: He (the man in red) wanted to leave.\n\nRound 3\n- Ability: Memory Recall\n"
        "- User: \"Earlier you described a door. Which round?\"\n- Assistant: Round 1.\n"
    )
    rounds = parse_dialogue(text)
    assert [r.index for r in rounds] == [1, 2, 3]
    assert rounds[0].ability == "Entity Recognition"
    assert rounds[0].assistant == "A man in red\nopens a door."
    assert rounds[1].ability == "Object Reference" and rounds[1].assistant.startswith("He (the man in red)")
    assert rounds[2].ability == "Memory Recall" and rounds[2].user == "Earlier you described a door. Which round?"


def test_parse_without_round_markers() -> None:
    rounds = parse_dialogue("User: a?\nAssistant: b.\nUser: c?\nAssistant: d.")
    assert [(r.index, r.user, r.assistant) for r in rounds] == [(1, "a?", "b."), (2, "c?", "d.")]


def _rounds(task: Task) -> list[GenRound]:
    return parse_dialogue(good_dialogue(task))


def test_rules_reject_broken_dialogues() -> None:
    r = _rounds(Task.OBJECT_REFERENCE)
    assert any("5-8 rounds" in p for p in check_dialogue(Task.OBJECT_REFERENCE, r[:4]))
    assert any("9" in p for p in check_dialogue(Task.OBJECT_REFERENCE, r + r[:4]))
    # OR in round 1, no parenthesised referent
    bad = [x.model_copy() for x in r]
    bad[0].ability = "Object Reference"
    bad[2].assistant = "It is red."
    probs = check_dialogue(Task.OBJECT_REFERENCE, bad)
    assert any("not in Round 1" in p for p in probs) and any("parentheses" in p for p in probs)
    # the first question must name the clip range, unless the unit is the whole video
    nr = [x.model_copy() for x in r]
    nr[0].user = "What happens?"
    assert any("clip range" in p for p in check_dialogue(Task.OBJECT_REFERENCE, nr))
    assert check_dialogue(Task.OBJECT_REFERENCE, nr, require_range=False) == []

    mr = _rounds(Task.MEMORY_RECALL)
    mr[2].user = "In the second round you mentioned a square. Where does it end?"
    assert any("must not name the round" in p for p in check_dialogue(Task.MEMORY_RECALL, mr))
    mr = _rounds(Task.MEMORY_RECALL)
    mr[2].assistant = "It ends near the right edge."
    assert any("identify the round" in p for p in check_dialogue(Task.MEMORY_RECALL, mr))

    cs = _rounds(Task.CONTENT_SUMMARY)
    cs[-1], cs[-2] = cs[-2].model_copy(update={"index": 5}), cs[-1].model_copy(update={"index": 4})
    assert any("must be the last round" in p for p in check_dialogue(Task.CONTENT_SUMMARY, cs))

    ar = _rounds(Task.ANSWER_REFUSAL)
    ar[2].assistant = "The dog barks twice."
    assert any("must decline" in p for p in check_dialogue(Task.ANSWER_REFUSAL, ar))

    ts = _rounds(Task.TOPIC_SHIFTING)
    ts[3].topic = "video"
    assert any("at least twice" in p for p in check_dialogue(Task.TOPIC_SHIFTING, ts))
    ts[2].topic = None
    assert any("Topic:" in p for p in check_dialogue(Task.TOPIC_SHIFTING, ts))

    pi = _rounds(Task.PROACTIVE_INTERACTION)
    pi[1].assistant = "The square is red, don't you think?"
    probs = check_dialogue(Task.PROACTIVE_INTERACTION, pi)
    assert any("rhetorical" in p for p in probs)
    for x in pi:
        x.assistant = x.assistant.replace("?", ".")
    assert any("at least two" in p for p in check_dialogue(Task.PROACTIVE_INTERACTION, pi))

    lab = _rounds(Task.ANSWER_REFUSAL)
    lab[3].ability = None
    assert any("Ability:" in p for p in check_dialogue(Task.ANSWER_REFUSAL, lab))


def test_parse_ratings_variants() -> None:
    s, p = parse_ratings('```json\n{"OR": 6, "memory_recall": "5", "Content Summary": 2, "AR": 1, '
                        '"topic_shifting": 4, "Proactive Interaction": {"score": 5}}\n```')
    assert p == [] and s[Task.OBJECT_REFERENCE] == 6 and s[Task.PROACTIVE_INTERACTION] == 5
    s, p = parse_ratings("Object Reference: 5\nMemory Recall: 3\nSummary: 6\nAnswer Refusal: 2\n"
                        "Topic Shifting: 1\nProactive Interaction: 9")
    assert s[Task.CONTENT_SUMMARY] == 6 and p == ["score for proactive_interaction must be 1-6, got 9"]
    _, p = parse_ratings("no idea")
    assert len(p) == 6


def test_malformed_dialogues_are_rejected_and_reasked(scene_video: Path) -> None:
    unit = Unit(id="S1", kind="single", segments=[1], ranges=[(5.0, 10.0)], captions=["a blue disc"])
    scores = SuitabilityResult(video="three", units={"S1": UnitRatings(unit="S1", scores={}, selected=[
        Task.OBJECT_REFERENCE, Task.TOPIC_SHIFTING])})
    script = Scripted(bad_dialogues=2)
    with LoopbackServer(ServerState(model_reply=script)) as srv:
        res = asyncio.run(generate_dialogues("three", scene_video, [unit], scores, _model(srv.url), 15.0,
                                             max_attempts=3, num_frames=6))
        gen = [r for r in srv.state.requests if r["text"].startswith("You are a Video QA Orchestrator")]
    assert res.complete and res.failures == []
    assert set(res.dialogues) == {"S1/object_reference", "S1/topic_shifting"}
    assert all(d.attempts == 3 for d in res.dialogues.values())
    assert len(gen) == 6 and all(r["images"] == 6 for r in gen)
    reasks = [r["text"] for r in gen if "# Your previous answer was rejected" in r["text"]]
    assert len(reasks) == 4 and all("5-8 rounds" in t for t in reasks)
    assert "from 00:00:05 to 00:00:10" in gen[0]["text"]
    ts = res.dialogues["S1/topic_shifting"]
    assert [r.topic for r in ts.rounds] == ["video", "non-video", "video", "non-video", "video"]


def test_reask_is_bounded_and_failures_listed(scene_video: Path, tmp_path: Path) -> None:
    unit = Unit(id="S0", kind="single", segments=[0], ranges=[(0.0, 5.0)], captions=["a red square"])
    scores = SuitabilityResult(video="three", units={"S0": UnitRatings(unit="S0", scores={},
                                                                selected=[Task.MEMORY_RECALL])})
    journal = CallJournal(tmp_path)

    def gen(url: str):  # noqa: ANN202
        model = StageModel(create_backend("openai:gen", BackendOptions(base_url=url, max_retries=0)), journal=journal)
        return asyncio.run(generate_dialogues("three", scene_video, [unit], scores, model, 15.0, max_attempts=2,
                                              num_frames=4))

    with LoopbackServer(ServerState(model_reply=Scripted(bad_dialogues=99))) as srv:
        res = gen(srv.url)
        n = len(srv.state.requests)
        again = gen(srv.url)
        n_again = len(srv.state.requests)
        journal.supersede("three", "generate", [f.item for f in res.failures])  # what --retry-failed does
        retried = gen(srv.url)
        n_retried = len(srv.state.requests)
    assert n == 2 and res.dialogues == {} and res.complete
    assert [(f.item, f.kind, f.attempts) for f in res.failures] == [("S0/memory_recall", "rejected", 2)]
    assert any("5-8 rounds" in p for p in res.failures[0].problems)
    assert n_again == n and again == res  # given up: the stored replies are read again, nothing is asked
    assert n_retried == n + 2 and len(retried.failures) == 1


def test_rate_units_keeps_five_and_six(scene_video: Path) -> None:
    units = [Unit(id="S0", kind="single", segments=[0], ranges=[(0.0, 5.0)], captions=["x"])]
    with LoopbackServer(ServerState(model_reply=Scripted(score=5))) as srv:
        r5 = asyncio.run(rate_units("three", scene_video, units, _model(srv.url), num_frames=4))
    with LoopbackServer(ServerState(model_reply=Scripted(score=4))) as srv:
        r4 = asyncio.run(rate_units("three", scene_video, units, _model(srv.url), num_frames=4))
    assert r5.units["S0"].selected == list(TASKS) and r5.complete
    assert r4.units["S0"].selected == [] and r4.units["S0"].scores["memory_recall"] == 4
