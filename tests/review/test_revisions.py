"""Versioned copies (issue 28): a person's draft and decision on an item have a revision; a save (draft, decision,
rating) from an older copy, e.g. another tab's, is refused with the newer copy, never silently overwriting it; and
an annotator's next dialogue does not depend on what other annotators open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mtvbench.ledger.sqlite import DatabaseFormatError
from mtvbench.review.source import open_source
from mtvbench.review.store import SCHEMA_VERSION, ReviewStore
from tests.review.conftest import item_url, make_client, verdict, who

pytest.importorskip("starlette", reason="the review web app needs mtvbench[review]")


def _draft(c, iid: str, name: str, h: str, data: dict, revision: int | None, job: str = "annotator",  # noqa: ANN001
           scope: str = "review"):
    return c.put(item_url(iid, "/draft"), headers=who(name, job),
                 json={"scope": scope, "content_hash": h, "data": data, "revision": revision})


def test_a_draft_from_an_older_copy_is_refused_with_the_newer_one(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/next", headers=who("ann1")).json()["id"]
    it = c.get(item_url(iid), headers=who("ann1")).json()
    h, rev = it["content_hash"], it["revisions"]["review"]
    assert rev == 0 and set(it["revisions"]) == {"review"}
    tab1 = {"mode": "revise", "fields": {"1.assistant": "rewritten golden answer"},
            "criteria": {"grounded": {"met": True}}}
    r = _draft(c, iid, "ann1", h, tab1, rev)
    assert r.status_code == 200 and r.json()["draft"]["revision"] == 1
    # tab 2 still holds revision 0: its save is refused and names the newer draft (nothing overwritten)
    r = _draft(c, iid, "ann1", h, {"mode": "read", "comment": "tab two"}, rev)
    assert r.status_code == 409, r.text
    body = r.json()
    assert "another tab" in body["error"] and body["conflict"]["revision"] == 1
    assert body["conflict"]["draft"]["data"] == tab1 and body["conflict"]["decision"] is None
    assert c.get(item_url(iid, "/draft?scope=review"), headers=who("ann1")).json()["draft"]["data"] == tab1
    # keeping tab 2's text is an explicit save at the revision it was shown
    r = _draft(c, iid, "ann1", h, {"mode": "read", "comment": "tab two"}, body["conflict"]["revision"])
    assert r.status_code == 200 and r.json()["draft"]["revision"] == 2
    # another person's copy is theirs: ann2's revision 0 is current for ann2
    assert _draft(c, iid, "ann2", h, {"comment": "mine"}, 0).status_code == 200
    assert c.get(item_url(iid), headers=who("ann1")).json()["revisions"]["review"] == 2


def test_a_decision_from_an_older_copy_never_replaces_the_decision_made_in_another_tab(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/next", headers=who("ann1")).json()["id"]
    it = c.get(item_url(iid), headers=who("ann1")).json()
    h, rev = it["content_hash"], it["revisions"]["review"]
    edit = {"round": 1, "field": "assistant", "value": it["rounds"][0]["assistant"] + " (fixed)"}
    r = c.post(item_url(iid, "/review"), headers=who("ann1"),
               json=verdict("ann1", "revise", edits=[edit], comment="fixed", content_hash=h, revision=rev))
    assert r.status_code == 200, r.text
    # tab 2 (revision 0) rejects: refused, with the revision made in tab 1
    for stale in ({"decision": "reject"}, {"decision": "accept"}):
        r = c.post(item_url(iid, "/review"), headers=who("ann1"),
                   json=verdict("ann1", stale["decision"], content_hash=h, revision=rev))
        assert r.status_code == 409, r.text
        conflict = r.json()["conflict"]
        assert "you decided" in r.json()["error"] and conflict["decision"]["decision"] == "revise"
        assert conflict["decision"]["edits"][0]["value"] == edit["value"]
    # its draft too
    r = _draft(c, iid, "ann1", h, {"comment": "tab two"}, rev)
    assert r.status_code == 409 and r.json()["conflict"]["decision"]["decision"] == "revise"
    mine = c.get(item_url(iid), headers=who("ann1")).json()
    assert mine["mine"]["decision"] == "revise"
    # replacing it is an explicit choice at the current revision
    r = c.post(item_url(iid, "/review"), headers=who("ann1"),
               json=verdict("ann1", "reject", content_hash=h, revision=mine["revisions"]["review"]))
    assert r.status_code == 200 and r.json()["mine"]["decision"] == "reject"
    # a caller that sends no revision (the command line, scripts) is not checked, and moves the revision on
    before = c.get(item_url(iid), headers=who("ann1")).json()["revisions"]["review"]
    assert c.post(item_url(iid, "/review"), headers=who("ann1"), json=verdict("ann1", "accept")).status_code == 200
    assert c.get(item_url(iid), headers=who("ann1")).json()["revisions"]["review"] > before


def test_a_senior_decision_from_an_older_copy_is_refused(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/next", headers=who("ann1")).json()["id"]
    for name, decision in (("ann1", "accept"), ("ann2", "reject")):
        c.get(item_url(iid, "?claim=1"), headers=who(name))
        assert c.post(item_url(iid, "/review"), headers=who(name), json=verdict(name, decision)).status_code == 200
    s = c.get(item_url(iid), headers=who("lead", "senior")).json()
    rev = s["revisions"]["adjudicate"]
    saved = _draft(c, iid, "lead", s["content_hash"], {"comment": "tab 1"}, rev, "senior", "adjudicate")
    assert saved.status_code == 200
    r = c.post(item_url(iid, "/adjudicate"), headers=who("lead", "senior"),
               json=verdict("lead", "accept", senior=True, revision=rev))
    assert r.status_code == 409 and r.json()["conflict"]["draft"]["data"] == {"comment": "tab 1"}
    assert c.get(item_url(iid), headers=who("lead", "senior")).json()["adjudication"] is None


def test_a_rating_from_an_older_copy_is_refused(sample_master: Path, tmp_path: Path) -> None:
    from tests.review.test_rating import varied
    from tests.support.runs import make_store_run

    run = make_store_run(sample_master, tmp_path / "run", answer=varied, bootstrap=0)
    c = make_client(run)
    r1 = who("r1", "rater")
    iid = c.get("/api/next", headers=r1).json()["id"]
    it = c.get(item_url(iid), headers=r1).json()
    marks = {f"{r['index']}.{q['key']}": "Yes" for r in it["rounds"] for q in r["questions"]}
    body = {"rater": "r1", "marks": marks, "content_hash": it["content_hash"], "revision": it["revisions"]["rate"]}
    assert c.post(item_url(iid, "/rating"), headers=r1, json=body).status_code == 200
    r = c.post(item_url(iid, "/rating"), headers=r1, json=body | {"marks": dict.fromkeys(marks, "No")})
    assert r.status_code == 409 and r.json()["conflict"]["decision"]["marks"] == marks


def test_the_next_dialogue_does_not_depend_on_what_others_open(sample: Path) -> None:
    """Whatever single dialogue B opens, A's next one is the same (before: A was sent to B's); a dialogue two others
    hold is still skipped, so every dialogue goes to two annotators."""
    ids = [i["id"] for i in make_client(sample).get("/api/items", headers=who("x")).json()["items"]]
    store = ReviewStore(open_source(sample).default_store)
    first = store.next_for("probe")
    with sqlite3.connect(store.path) as db:
        db.execute("DELETE FROM claims")
    for opened in ids[:6]:
        store.claim(opened, "annB")
        assert store.next_for("annA") == first, opened
        with sqlite3.connect(store.path) as db:
            db.execute("DELETE FROM claims")
    store.claim(ids[0], "annB")
    store.claim(ids[0], "annC")
    assert store.next_for("annA") == ids[1]


def test_a_format_2_store_is_refused_naming_both_formats(sample: Path) -> None:
    path = open_source(sample).default_store
    ReviewStore(path)
    with sqlite3.connect(path) as db:  # as format 2 wrote it: no revisions table
        db.execute("DROP TABLE revisions")
        db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    with pytest.raises(DatabaseFormatError, match=f"review-store format 2.*reads format {SCHEMA_VERSION}"):
        ReviewStore(path)
