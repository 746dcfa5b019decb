"""The review store: the rules of record/adjudicate, the queue, concurrency, restarts, users."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from mtvbench.errors import InputError
from mtvbench.review.model import Edit, ReviewConflictError, ReviewError, UnknownItemError
from mtvbench.review.source import open_source
from mtvbench.review.store import ReviewStore


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
    with pytest.raises(ReviewConflictError, match="already has two annotators"):
        store.record(it, "ann3", "accept")
    with pytest.raises(ReviewError, match="must be someone else"):
        store.adjudicate(it, "ann2", "accept")
    st = store.adjudicate(it, "lead", "revise", [edit], "take ann2's fix")
    assert st.status == "accepted" and st.adjudication is not None
    assert st.adjudication.edits[0].value.endswith("(fixed)")
    with pytest.raises(ReviewConflictError, match="already decided by the senior"):
        store.record(it, "ann1", "reject")
    actions = [(h.who, h.action, h.decision) for h in store.history()]
    assert actions == [("ann1", "review", "accept"), ("ann2", "review", "revise"), ("lead", "adjudicate", "revise")]


def test_adjudication_only_for_disagreements_and_later_decision_replaces(opened) -> None:
    store, items = opened
    it = list(items.values())[1]
    store.record(it, "ann1", "accept")
    with pytest.raises(ReviewConflictError, match="only for disagreements"):
        store.adjudicate(it, "lead", "accept")
    store.record(it, "ann1", "reject", comment="changed my mind")
    st = store.record(it, "ann2", "reject")
    assert st.status == "rejected" and [r.decision for r in st.reviews] == ["reject", "reject"]
    assert len(store.history()) == 3  # the replaced decision stays in the audit trail


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
    with pytest.raises(UnknownItemError):
        store.record(ghost, "ann1", "accept")
    # the dialogue is regenerated: decisions on the old text no longer count, but stay in the history
    store.record(it, "ann1", "accept")
    store.record(it, "ann2", "accept")
    new_rounds = [dict(r) for r in it.rounds]
    new_rounds[0]["User"] = "A different first question?"
    from mtvbench.review.model import content_hash

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
    # the time to decide is measured from the claim
    st = store.record(items[order[1]], "ann1", "accept")
    assert st.review_of("ann1").seconds is not None and st.review_of("ann1").seconds >= 0


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
    assert store.authenticate(token) is None and store.authenticate(new).role == "senior"
    with pytest.raises(ReviewError, match="role must be"):
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
