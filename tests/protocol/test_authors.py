"""The ``authors`` protocol's rules, one by one (the parity with the scripts' own outputs is in
tests/protocol/test_parity.py): reading a reply as eval.py does, positional pairing, division by the
reply's keys, rounding, exact labels, answers by position, placeholder turns, and what is dropped."""

from __future__ import annotations

import pytest

from mtvbench.data.schema import ChecklistItem, Dialogue, Round, Task
from mtvbench.prompts import placeholder_answer
from mtvbench.protocol import JudgeReading, get_protocol
from mtvbench.protocol.authors import read_reply
from mtvbench.records import JudgeVerdict, Rejected
from mtvbench.scoring.aggregate import compute_scores

AUTHORS = get_protocol("authors")
ITEMS = [ChecklistItem(key=f"Q{i}", question=f"q{i}?", expected="No" if i == 4 else "Yes") for i in range(1, 6)]
RAW = [kv for it in ITEMS for kv in ((it.key, it.question), (it.answer_key, it.expected))]


def reading(text: str) -> JudgeReading:
    got = read_reply(text)
    assert isinstance(got, JudgeReading), got
    return got


@pytest.mark.parametrize(("text", "reply"), [
    ('```json\n{"A1": "Yes", "A2": "No"}\n```', [("A1", "Yes"), ("A2", "No")]),
    ('Sure:\n```\n{"A2": "no"}\n```\nand ```json\n{"A1": "Yes"}\n```', [("A2", "no")]),  # the first block
    ('{"A1": true, "A2": null, "A3": 1}', [("A1", "True"), ("A2", "None"), ("A3", "1")]),  # str() of each value
    ('{"A1": "Yes", "A1": "No", "A2": "Yes"}', [("A1", "No"), ("A2", "Yes")]),  # json.loads: last value, first place
    ("{}", []), ("[]", []), ('""', []),  # len() == 0: eval.py scores the run 0.0
])
def test_replies_are_read_as_eval_py_reads_them(text: str, reply: list[tuple[str, str]]) -> None:
    assert reading(text).reply == reply


@pytest.mark.parametrize("text", [
    'The answers are {"A1": "Yes"} as you asked.',  # JSON inside prose without a fence: json.loads fails
    "A1: Yes, A2: No",
    '```json\n{"A1": "Yes",}\n```',
    "",
    '["Yes", "No"]', '"Yes"', "5", "true", "null",  # eval.py raises on these; here: asked again
])
def test_replies_eval_py_cannot_use_are_asked_again(text: str) -> None:
    assert isinstance(read_reply(text), Rejected)


def verdict(pairs: list[tuple[str, str]]) -> JudgeVerdict:
    return JudgeVerdict(run=0, status="ok", reply=pairs)


RND = Round(index=1, user="u", assistant="a", model_turn=True, checklist=ITEMS, checklist_raw=RAW)
PERFECT = [(f"A{i}", "No" if i == 4 else "Yes") for i in range(1, 6)]


def test_a_run_is_paired_by_position_and_divided_by_the_replys_keys() -> None:
    assert AUTHORS.run_score(RND, verdict(PERFECT)) == 1.0
    assert AUTHORS.run_score(RND, verdict([*PERFECT, ("A6", "Yes")])) == 0.83  # 5/6, rounded
    assert AUTHORS.run_score(RND, verdict(PERFECT[:4])) == 1.0  # 4 keys: the first four compared, /4
    assert AUTHORS.run_score(RND, verdict(list(reversed(PERFECT)))) == 0.6  # by position, not by key
    assert AUTHORS.run_score(RND, verdict([(k, v.upper()) for k, v in PERFECT])) == 1.0  # case-insensitive
    assert AUTHORS.run_score(RND, verdict([(k, v + ".") for k, v in PERFECT])) == 0.0  # "Yes." is not "yes"
    assert AUTHORS.run_score(RND, verdict([])) == 0.0
    # the checklist's A keys in file order decide the pairing (A5 written before A4 here)
    raw = [("Q1", "q1?"), ("A1", "Yes"), ("A2", "Yes"), ("A3", "Yes"), ("A5", "Yes"), ("A4", "No"),
           ("Q2", "q2?"), ("Q3", "q3?"), ("Q4", "q4?"), ("Q5", "q5?")]
    odd = RND.model_copy(update={"checklist_raw": raw})
    assert AUTHORS.run_score(odd, verdict(PERFECT)) == 0.6
    assert "Q1: q1?\nQ2: q2?\nQ3: q3?\nQ4: q4?\nQ5: q5?" in AUTHORS.judge_prompt("x", odd)


def test_turns_and_dialogues_are_rounded_means() -> None:
    assert AUTHORS.mean([0.8, 0.6, 0.6]) == 0.67
    assert AUTHORS.mean([0.1, 0.15]) == round(0.125, 2) == 0.12  # Python's round, as eval.py
    assert get_protocol("paper").mean([0.8, 0.6, 0.6]) == pytest.approx(2 / 3)


def _dialogue(task: Task, rounds: list[Round]) -> Dialogue:
    return Dialogue(task=task, video="v", event="0", rounds=rounds)


def _round(k: int, ability: str | None, checklist: bool = False, pos: int | None = None, text_index: bool = False
           ) -> Round:
    return Round(index=k, user=f"q{k}", assistant=f"a{k}", ability=ability, position=k - 1 if pos is None else pos,
                 checklist=ITEMS if checklist else None, checklist_raw=RAW if checklist else None,
                 checklist_index_text=text_index)


def test_labels_are_matched_exactly_and_non_model_rounds_are_judged_against_the_placeholder() -> None:
    d = _dialogue(Task.MEMORY_RECALL, [_round(1, "Memory Recall", True), _round(2, "Memory Recall ", True),
                                       _round(3, "Scene Understanding", True)])
    paper = get_protocol("paper").apply(d)
    assert [r.model_turn for r in paper.rounds] == [True, True, False]
    assert [r.index for r in paper.scored_turns] == [1, 2]
    a = AUTHORS.apply(d)
    assert [r.model_turn for r in a.rounds] == [True, False, False]  # "Memory Recall " is not a label
    assert [r.index for r in a.scored_turns] == [1, 2, 3]  # eval.py judges every round with a checklist
    assert [r.placeholder_answer for r in a.scored_turns] == [None, placeholder_answer(), placeholder_answer()]
    assert placeholder_answer() == "No need for this ability to answer."
    assert {r.answer_index for r in a.scored_turns} == {1, None}


def test_answers_are_taken_by_position_and_a_missing_position_is_counted() -> None:
    # the file holds Round 1, Round 3, Round 2 (in that order) and Round 5 (a gap): answers[k - 1]
    d = _dialogue(Task.TOPIC_SHIFTING, [_round(1, None, True, 0), _round(3, None, True, 1),
                                        _round(2, None, True, 2), _round(5, None, True, 3)])
    a = AUTHORS.apply(d)
    assert [r.index for r in a.rounds] == [1, 3, 2, 5]  # file order is the history's order
    by = {r.index: r for r in a.rounds}
    assert by[1].answer_index == 1 and by[3].answer_index == 2 and by[2].answer_index == 3  # misaligned, as eval.py
    assert not by[5].scored and "no answer at position 5" in (by[5].not_judged or "")
    assert [x.index for x in a.earlier(by[2])] == [1, 3]
    t = _dialogue(Task.TOPIC_SHIFTING, [_round(1, None, True), _round(2, None, True, text_index=True)])
    b = AUTHORS.apply(t)
    assert [r.index for r in b.scored_turns] == [1] and "given as text" in (b.rounds[1].not_judged or "")
    assert [r.index for r in get_protocol("paper").apply(t).scored_turns] == [1, 2]


def test_dropped_checklists_and_runs_make_the_scores_incomplete_and_are_counted() -> None:
    d = AUTHORS.apply(_dialogue(Task.TOPIC_SHIFTING, [_round(1, None, True), _round(2, None, True, text_index=True)]))
    tid = d.turn_id(1)
    runs = {0: verdict(PERFECT), 1: JudgeVerdict(run=1, status="unparsed")}
    scores, dscores = compute_scores([d], {tid: {"text": "x"}}, {tid: runs}, model="m", judge="j", judge_runs=2,
                                     tasks=[Task.TOPIC_SHIFTING], protocol="authors")
    assert dscores[0].score == 1.0 and scores.tasks["topic_shifting"] == 100.0
    assert scores.counts.checklists_not_judged == 1 and scores.counts.unscored_judge_runs == 1
    assert not scores.complete and scores.protocol == "authors"
    assert any("1 checklists not judged" in r and "given as text" in r for r in scores.incomplete_reasons)
