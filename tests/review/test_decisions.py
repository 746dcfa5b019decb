"""Review records: time codes, edit validation, the outcome rule, the content hash."""

from __future__ import annotations

import pytest

from mtvbench.data.schema import ChecklistItem, Task
from mtvbench.review.decisions import (
    Annotation,
    Edit,
    ReviewError,
    ReviewItem,
    check_decision,
    check_name,
    content_hash,
    status_of,
)
from mtvbench.review.diffs import compare, word_diff
from mtvbench.util.timecodes import ranges_in, segments


def make_item() -> ReviewItem:
    rounds = [{"User": "What happens from 00:01:20 to 00:01:45?", "Assistant": "A red car stops.", "Ability": "x"},
              {"User": "And then?", "Assistant": "It drives off at 00:02:03.", "Ability": "Memory Recall"}]
    ck = {2: [ChecklistItem(key="Q1", question="Does it say the car drives off?", expected="Yes"),
              ChecklistItem(key="Q2", question="Does it say the car is blue?", expected="No")]}
    return ReviewItem(id="v/S0/memory_recall", task=Task.MEMORY_RECALL, video="v", event="0", rounds=rounds,
                      checklists=ck, content_hash=content_hash(rounds, ck))


def test_time_ranges_and_points_in_text() -> None:
    segs = segments("From 00:01:20 to 00:01:45, then 01:20–01:50; at 00:02:03 and at 08:15 sharp.")
    timed = [(s.text, s.start, s.end) for s in segs if s.start is not None]
    assert timed == [("00:01:20 to 00:01:45", 80.0, 105.0), ("01:20–01:50", 80.0, 110.0), ("00:02:03", 123.0, None)]
    assert "".join(s.text for s in segs).endswith("08:15 sharp.")  # a clock time is not a position
    assert ranges_in("in the video clip from 00:00:10 to 00:00:05") == []  # backwards: not a range
    assert ranges_in("00:00:00 to 00:00:05 and from 00:00:10 to 00:00:15") == [(0.0, 5.0), (10.0, 15.0)]


@pytest.mark.parametrize("bad", ["", "   ", "\t", "a\x00b", "<script>", "x" * 65])
def test_names_are_checked(bad: str) -> None:
    with pytest.raises(ReviewError, match=r"the annotator name (is empty|.* may only use|is longer than 64)"):
        check_name(bad)


def test_names_are_stripped_and_may_be_unicode() -> None:
    assert check_name("  李明 ") == "李明"
    assert check_name("ann.o-1@lab") == "ann.o-1@lab"


def test_edits_are_validated_against_the_item() -> None:
    it = make_item()
    ok = check_decision(it, "revise", [Edit(round=2, field="expected", item="Q2", value="yes"),
                                       Edit(round=1, field="assistant", value="A red car stops.")], "")
    assert [(e.value, e.before) for e in ok] == [("Yes", "No")]  # normalised; the no-op edit dropped
    bad = [
        ([Edit(round=3, field="user", value="x")], "there is no round 3"),
        ([Edit(round=1, field="question", item="Q1", value="x")], "no checklist item Q1"),
        ([Edit(round=2, field="expected", item="Q1", value="maybe")], "Yes or No"),
        ([Edit(round=1, field="user", value="  ")], "empty"),
        ([Edit(round=1, field="user", item="Q1", value="x")], "only for checklist"),
        ([Edit(round=1, field="user", value="a"), Edit(round=1, field="user", value="b")], "twice"),
        ([Edit(round=1, field="user", value="What happens from 00:01:20 to 00:01:45?")], "must change"),
    ]
    for edits, msg in bad:
        with pytest.raises(ReviewError, match=msg):
            check_decision(it, "revise", edits, "")
    with pytest.raises(ReviewError, match="only recorded with the decision 'revise'"):
        check_decision(it, "accept", [Edit(round=1, field="user", value="new")], "")
    with pytest.raises(ReviewError, match="decision must be one of"):
        check_decision(it, "maybe", [], "")
    with pytest.raises(ReviewError, match="needs a reason"):
        check_decision(it, "reject", [], " ", require_reason=True)


def test_outcome_rule() -> None:
    def a(d: str, who: str = "x") -> Annotation:
        return Annotation(annotator=who, decision=d)  # type: ignore[arg-type]

    assert status_of([a("accept")], None) == "pending"
    assert status_of([a("accept"), a("accept")], None) == "accepted"
    assert status_of([a("reject"), a("reject")], None) == "rejected"
    assert status_of([a("accept"), a("revise")], None) == "needs_adjudication"
    assert status_of([a("revise"), a("revise")], None) == "needs_adjudication"  # both revised: the senior merges
    assert status_of([a("accept"), a("reject")], a("revise")) == "accepted"
    assert status_of([a("accept"), a("reject")], a("reject")) == "rejected"


def test_final_content_applies_the_seniors_revision_only() -> None:
    it = make_item()
    edit = check_decision(it, "revise", [Edit(round=2, field="question", item="Q1", value="Does it leave?")], "")
    it.annotations = [Annotation(annotator="a", decision="revise", edits=edit), Annotation(annotator="b",
                                                                                            decision="accept")]
    assert it.final_content()[1][2][0].question == "Does it say the car drives off?"
    it.adjudication = Annotation(annotator="lead", decision="revise", edits=edit)
    rounds, ck = it.final_content()
    assert ck[2][0].question == "Does it leave?" and it.checklists[2][0].question.startswith("Does it say")
    assert rounds == it.rounds


def test_old_queue_files_keep_their_decisions() -> None:
    """Annotations written by earlier versions (``note``, accept/reject) still parse."""
    a = Annotation.model_validate({"annotator": "ann1", "decision": "accept", "note": "fine", "at": "t"})
    assert a.comment == "fine" and a.edits == []


def test_side_by_side_diff() -> None:
    it = make_item()
    ea = check_decision(it, "revise", [Edit(round=1, field="assistant", value="A red car stops quickly.")], "")
    eb = check_decision(it, "revise", [Edit(round=2, field="expected", item="Q2", value="Yes"),
                                       Edit(round=1, field="assistant", value="A blue car stops.")], "")
    d = compare(it, [Annotation(annotator="a", decision="revise", edits=ea),
                     Annotation(annotator="b", decision="revise", edits=eb)])
    assert [(x.round, x.field, x.item, x.changed) for x in d] == [
        (1, "assistant", None, [True, True]), (2, "expected", "Q2", [False, True])]
    assert [(p.op, p.text) for p in d[0].diffs[1] if p.op != "equal"] == [("delete", "red"), ("insert", "blue")]
    assert d[1].values == ["No", "Yes"]
    assert "".join(p.text for p in word_diff("a b", "a c") if p.op != "delete") == "a c"


def test_a_review_queue_file_holding_decisions_is_refused(tmp_path) -> None:  # noqa: ANN001
    """A queue file holds the items only (decisions are in review.sqlite): one holding decisions is refused, not
    imported or shown."""
    from mtvbench.errors import InputError
    from mtvbench.review.decisions import ReviewQueue
    from mtvbench.review.source import read_queue_file

    item = make_item()
    path = tmp_path / "review_queue.json"
    path.write_text(ReviewQueue(items={item.id: item}).model_dump_json())
    assert read_queue_file(path).items[item.id].content_hash == item.content_hash
    item.annotations = [Annotation(annotator="ann1", decision="accept")]
    path.write_text(ReviewQueue(items={item.id: item}).model_dump_json())
    with pytest.raises(InputError, match=r"item 'v/S0/memory_recall' carries review decisions: .* review\.sqlite"):
        read_queue_file(path)
