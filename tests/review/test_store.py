"""The review store: the rules of record/adjudicate, the queue, concurrency, restarts, users."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from mtvbench.errors import InputError
from mtvbench.review.decisions import CRITERIA, Criterion, Edit, ReviewConflictError, ReviewError, UnknownItemError
from mtvbench.review.source import open_source
from mtvbench.review.store import CHANGED_NOTICE, TAKEN_NOTICE, ConfirmRequiredError, ReviewStore


@pytest.fixture
def opened(sample: Path):  # noqa: ANN201
    source = open_source(sample)
    items = source.load()
    store = ReviewStore(source.default_store)
    store.sync(items)
    return store, {it.id: it for it in items}


def test_two_annotators_then_the_senior(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    assert store.record(it, "ann1", "accept").status == "pending"
    q = it.checklists[min(it.checklists)][0]
    edit = Edit(round=min(it.checklists), field="question", item=q.key, value=q.question + " (fixed)")
    st = store.record(it, "ann2", "revise", [edit], "Q1 was vague")
    assert st.status == "needs_adjudication"
    assert st.reviews[1].edits[0].before == q.question  # the store records what it replaced
    assert st.reviews[1].checklist is None and st.reviews[1].criteria is None  # not given: not recorded
    with pytest.raises(ReviewConflictError, match="already has two annotators.*`mtvbench build review adjudicate`"):
        store.record(it, "ann3", "accept")
    with pytest.raises(ReviewError, match="must be someone else"):
        store.adjudicate(it, "ann2", "accept")
    st = store.adjudicate(it, "lead", "revise", [edit], "take ann2's fix")
    assert st.status == "accepted" and st.adjudication is not None
    assert st.adjudication.edits[0].value.endswith("(fixed)")
    # a change of mind after the senior decided is not silent: it is a new disagreement with a notice
    st = store.record(it, "ann1", "reject", comment="not grounded after all")
    assert st.status == "needs_adjudication" and st.notice == CHANGED_NOTICE
    (ref,) = st.open_referrals
    assert (ref.reason, ref.annotator, ref.decision, ref.previous.decision) == ("changed", "ann1", "reject", "accept")
    assert st.review_of("ann1").decision == "reject"
    # a second senior overwriting lead's final decision must confirm; lead does not
    with pytest.raises(ConfirmRequiredError, match="overwrites lead's final decision"):
        store.adjudicate(it, "lead2", "reject", comment="no")
    st = store.adjudicate(it, "lead", "revise", [edit], "still take ann2's fix")
    assert st.status == "accepted" and st.open_referrals == [] and st.referrals[0].settled_at is not None
    actions = [(h.who, h.action, h.decision) for h in store.history()]
    assert actions == [("ann1", "review", "accept"), ("ann2", "review", "revise"), ("lead", "adjudicate", "revise"),
                       ("ann1", "review", "reject"), ("lead", "adjudicate", "revise")]


def test_a_third_annotators_decision_goes_to_the_senior_with_its_text(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    store.record(it, "ann1", "accept")
    store.record(it, "ann2", "accept")
    k = min(it.checklists)
    edit = Edit(round=k, field="assistant", value="A better golden answer.")
    st = store.record(it, "ann3", "revise", [edit], "the answer is wrong", refer=True)
    assert st.notice == TAKEN_NOTICE and st.review_of("ann3") is None and len(st.reviews) == 2
    (ref,) = st.open_referrals
    assert (ref.reason, ref.comment, ref.edits[0].value) == ("taken", "the answer is wrong", "A better golden answer.")
    assert st.status == "needs_adjudication"  # the two agreed, but a third opinion waits for the senior
    assert store.next_for("ann3") != it.id
    assert store.adjudicate(it, "lead", "revise", [edit]).status == "accepted"  # in the senior's queue
    # overruling an agreement nobody handed to the senior needs a confirmation
    other = list(items.values())[1]
    store.record(other, "ann1", "accept")
    store.record(other, "ann2", "accept")
    with pytest.raises(ConfirmRequiredError, match="the two annotators' agreement"):
        store.adjudicate(other, "lead", "reject", comment="off topic")
    assert store.adjudicate(other, "lead", "reject", comment="off topic", confirm=True).status == "rejected"


def test_undo_restores_what_the_decision_replaced(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    first = store.record(it, "ann1", "accept")
    assert store.undo(it, "ann1", first.seq).review_of("ann1") is None
    store.record(it, "ann1", "reject", comment="blurry")
    store.record(it, "ann2", "accept")
    changed = store.record(it, "ann1", "accept")
    assert changed.notice == CHANGED_NOTICE and changed.status == "needs_adjudication"
    with pytest.raises(ReviewConflictError, match="can no longer be undone"):
        store.undo(it, "ann2", changed.seq)  # not ann2's action
    st = store.undo(it, "ann1", changed.seq)
    assert st.review_of("ann1").comment == "blurry" and st.referrals == [] and st.status == "needs_adjudication"
    with pytest.raises(ReviewConflictError, match="can no longer be undone"):
        store.undo(it, "ann1", changed.seq)  # the undo itself is the last action now
    assert [h.action for h in store.history()][-1] == "undo"


def test_the_criteria_rules(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    met = {c: Criterion(met=True) for c in CRITERIA}
    with pytest.raises(ReviewError, match="mark each criterion"):
        store.record(it, "ann1", "accept", strict=True)
    with pytest.raises(ReviewError, match="missing coherent"):
        store.record(it, "ann1", "accept", criteria={k: v for k, v in met.items() if k != "coherent"}, strict=True)
    unmet = met | {"grounded": Criterion(met=False, note="Q2 is ambiguous")}
    with pytest.raises(ReviewError, match="accept needs every criterion met .grounded not met"):
        store.record(it, "ann1", "accept", criteria=unmet, strict=True)
    key = it.checklist_keys()[0]
    with pytest.raises(ReviewError, match=f"accept keeps every checklist item .{key}"):
        store.record(it, "ann1", "accept", criteria=met, checklist={key: "revise"}, strict=True)
    with pytest.raises(ReviewError, match="no checklist item 99.Q1"):
        store.record(it, "ann1", "reject", "", "x", criteria=unmet, checklist={"99.Q1": "keep"}, strict=True)
    st = store.record(it, "ann1", "reject", [], "ambiguous", criteria=unmet, checklist={key: "revise"}, strict=True)
    mine = st.review_of("ann1")
    assert mine.criteria["grounded"].note == "Q2 is ambiguous" and not mine.criteria["grounded"].met
    assert mine.checklist[key] == "revise" and set(mine.checklist) == set(it.checklist_keys())
    assert store.history()[-1].criteria["grounded"].met is False


def test_drafts_and_the_signing_key_survive_a_reopen(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    store.save_draft("review", it.id, "ann1", it.content_hash, {"comment": "<b>half</b> typed", "mode": "revise"})
    again = ReviewStore(store.path)
    assert again.draft("review", it.id, "ann1").data["comment"] == "<b>half</b> typed"
    assert again.draft("review", it.id, "ann2") is None and again.signing_key() == store.signing_key()
    with pytest.raises(ReviewError, match="larger than"):
        store.save_draft("review", it.id, "ann1", it.content_hash, {"comment": "x" * 300_000})
    store.record(it, "ann1", "accept")
    assert store.draft("review", it.id, "ann1") is None  # a recorded decision ends its draft


def test_adjudication_only_for_disagreements_and_later_decision_replaces(opened) -> None:
    store, items = opened
    it = list(items.values())[1]
    store.record(it, "ann1", "accept")
    with pytest.raises(ReviewConflictError, match="a senior decides once both annotators have decided"):
        store.adjudicate(it, "lead", "accept")
    store.record(it, "ann1", "reject", comment="changed my mind")
    st = store.record(it, "ann2", "reject")
    assert st.status == "rejected" and [r.decision for r in st.reviews] == ["reject", "reject"]
    assert len(store.history()) == 3  # the replaced decision stays in the audit trail
    assert store.record(it, "ann2", "reject").seq is None  # the same decision again changes nothing


@pytest.mark.parametrize("name", ["", "  ", "\n"])
def test_blank_annotator_names_are_refused(opened, name: str) -> None:
    store, items = opened
    with pytest.raises(ReviewError, match="name is empty"):
        store.record(next(iter(items.values())), name, "accept")
    assert store.history() == []


def test_unknown_item_and_changed_content(opened) -> None:
    store, items = opened
    it = next(iter(items.values()))
    with pytest.raises(ReviewConflictError, match="changed since it was opened"):
        store.record(it, "ann1", "accept", expected_hash="0" * 16)
    ghost = it.model_copy(update={"id": "nope/nope/0"})
    with pytest.raises(UnknownItemError, match="no dialogue 'nope/nope/0' in the review queue"):
        store.record(ghost, "ann1", "accept")
    # the dialogue is regenerated: decisions on the old text no longer count, but stay in the history
    store.record(it, "ann1", "accept")
    store.record(it, "ann2", "accept")
    new_rounds = [dict(r) for r in it.rounds]
    new_rounds[0]["User"] = "A different first question?"
    from mtvbench.review.decisions import content_hash

    changed = it.model_copy(update={"rounds": new_rounds, "content_hash": content_hash(new_rounds, it.checklists)})
    store.sync([changed] + [x for i, x in items.items() if i != it.id])
    assert store.state(changed.id, changed.content_hash).status == "pending"
    assert len(store.history()) == 2


def test_queue_gives_each_item_to_two_annotators_first_come(opened) -> None:
    store, items = opened
    order = list(items)
    first_a = store.next_for("ann1")
    assert first_a == order[0]
    assert store.next_for("ann1") == order[0]  # own open claim comes back until decided
    assert store.next_for("ann2") == order[0]  # pairs complete first
    assert store.next_for("ann3") == order[1]  # two hold the first one
    assert store.next_for("ann1", after=order[0]) == order[1]  # skip
    store.record(items[order[0]], "ann1", "accept")
    assert store.next_for("ann1") == order[1]
    # the time is the page's active time, never more than the time since the claim
    st = store.record(items[order[1]], "ann1", "accept", active_seconds=10_000.0)
    assert st.review_of("ann1").seconds is not None and 0 <= st.review_of("ann1").seconds < 60


def test_nothing_left(opened) -> None:
    store, items = opened
    for it in items.values():
        store.record(it, "ann1", "accept")
        store.record(it, "ann2", "accept")
    assert store.next_for("ann1") is None and store.next_for("ann3") is None


def test_concurrent_decisions_are_all_kept_and_slots_are_never_oversold(opened) -> None:
    """Many threads with their own connections: every decision lands, no item gets a third annotator."""
    store, items = opened
    names = ["ann1", "ann2", "ann3", "ann4"]
    errors: list[str] = []
    barrier = threading.Barrier(len(names))

    def work(name: str) -> None:
        s = ReviewStore(store.path)  # a second opener, as another process would be
        barrier.wait()
        for it in items.values():
            try:
                s.record(it, name, "accept")
            except ReviewConflictError as e:
                errors.append(str(e))

    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    states = store.states()
    assert all(len(st.reviews) == 2 and st.status == "accepted" for st in states.values())
    assert len(errors) == 2 * len(items)  # every refused decision was refused, none silently dropped
    assert len(store.history()) == 2 * len(items)


def test_restart_loses_nothing(opened) -> None:
    store, items = opened
    ids = list(items)
    store.record(items[ids[0]], "ann1", "accept")
    store.record(items[ids[0]], "ann2", "reject", comment="not grounded")
    reopened = ReviewStore(store.path)
    st = reopened.state(ids[0], items[ids[0]].content_hash)
    assert st.status == "needs_adjudication" and st.reviews[1].comment == "not grounded"
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_users_tokens_are_stored_hashed(opened) -> None:
    store, _ = opened
    token = store.add_user("ann1", "annotator")
    assert store.authenticate(token).name == "ann1"
    assert store.authenticate(token + "x") is None and store.authenticate("") is None
    with pytest.raises(ReviewError, match="exists already"):
        store.add_user("ann1", "senior")
    new = store.add_user("ann1", "senior", replace=True)
    assert store.authenticate(token) is None and store.authenticate(new).job == "senior"
    with pytest.raises(ReviewError, match="job must be"):
        store.add_user("x", "admin")
    raw = store.path.read_bytes() + (store.path.with_name(store.path.name + "-wal").read_bytes()
                                     if store.path.with_name(store.path.name + "-wal").exists() else b"")
    assert new.encode() not in raw
    assert store.remove_user("ann1") and store.authenticate(new) is None


def test_not_a_store(tmp_path: Path) -> None:
    bad = tmp_path / "review.sqlite"
    bad.write_text("this is not sqlite" * 100)
    with pytest.raises(InputError, match="not a review store"):
        ReviewStore(bad)
