"""The JSON API through the framework's test client: the whole flow, auth, blindness, validation, video."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mtvbench.review.store import CHANGED_NOTICE, TAKEN_NOTICE
from tests.review.conftest import item_url, make_client, verdict, who

pytest.importorskip("starlette", reason="the review web app needs mtvbench[review]")


def _first_scored(item: dict) -> tuple[int, dict]:
    r = next(r for r in item["rounds"] if r["scored"])
    return r["index"], r["checklist"][0]


def test_flow_two_annotators_and_senior(sample: Path) -> None:
    c = make_client(sample)
    items = c.get("/api/items", headers=who("ann1")).json()["items"]
    assert len(items) == 13 and {i["yours"] for i in items} == {"open"} and {i["status"] for i in items} == {None}
    first = c.get("/api/next", headers=who("ann1")).json()["id"]
    assert first == items[0]["id"]
    d = c.get(item_url(first, "?claim=1"), headers=who("ann1")).json()
    assert d["video_url"].startswith("/media/") and d["ranges"] and d["rounds"][0]["user_segments"]
    assert d["start_at"] == d["ranges"][0]["start"] and d["checklist_keys"]
    assert any(s["start"] is not None for r in d["rounds"] for s in r["user_segments"])
    k, q = _first_scored(d)
    r = c.post(item_url(first, "/review"), headers=who("ann1"),
               json=verdict("ann1", "accept", content_hash=d["content_hash"], active_seconds=42.0))
    assert r.status_code == 200, r.text
    assert r.json()["yours"] == "open" and r.json()["undo"] and "status" not in r.json()
    assert c.get("/api/next", headers=who("ann2")).json()["id"] == first
    # blind: ann2 sees no trace of ann1's decision
    d2 = c.get(item_url(first, "?claim=1"), headers=who("ann2")).json()
    assert d2["reviews"] is None and d2["mine"] is None and d2["diff"] is None and d2["status"] is None
    assert "ann1" not in json.dumps(d2)
    edit = {"round": k, "field": "question", "item": q["key"], "value": q["question"] + " (exactly)"}
    r = c.post(item_url(first, "/review"), headers=who("ann2"),
               json=verdict("ann2", "revise", unmet=("grounded",), edits=[edit], comment="too loose"))
    assert r.status_code == 200 and r.json()["yours"] == "closed" and r.json()["notice"] is None
    assert r.json()["mine"]["checklist"][f"{k}.{q['key']}"] == "revise"  # the edited item is marked revise
    assert c.get(item_url(first), headers=who("ann1")).json()["yours"] == "closed"
    # the senior sees both, with the diff
    s = c.get(item_url(first), headers=who("lead", "senior")).json()
    assert s["status"] == "needs_adjudication" and s["decisions"] == 2
    assert [x["annotator"] for x in s["reviews"]] == ["ann1", "ann2"]
    assert s["reviews"][1]["criteria"]["grounded"] == {"met": False, "note": "see Q2"}
    assert s["diff"][0]["values"] == [q["question"], edit["value"]] and s["diff"][0]["changed"] == [False, True]
    todo = c.get("/api/items?status=needs_adjudication", headers=who("lead", "senior")).json()["items"]
    assert [t["id"] for t in todo] == [first]
    assert c.get("/api/items?status=needs_adjudication", headers=who("ann1")).json()["items"] == []
    # an annotator cannot adjudicate; the senior can, editing any field (not only those the annotators changed)
    r = c.post(item_url(first, "/adjudicate"), headers=who("ann1"), json=verdict("ann1", "accept", senior=True))
    assert r.status_code == 403
    other = {"round": 1, "field": "user", "value": d["rounds"][0]["user"] + " Answer briefly."}
    r = c.post(item_url(first, "/adjudicate"), headers=who("lead", "senior"),
               json=verdict("lead", "revise", senior=True, edits=[edit, other], comment="take B, and round 1"))
    assert r.status_code == 200 and r.json()["status"] == "accepted"
    assert {e["field"] for e in r.json()["adjudication"]["edits"]} == {"question", "user"}
    p = c.get("/api/progress", headers=who("lead", "senior")).json()
    assert p["scope"] == "all" and p["counts"]["accepted"] == 1 and p["overall"]["revised"] == 1
    people = {a["name"]: a for a in p["annotators"]}
    assert people["ann1"]["done"] == 1 and people["ann2"]["decisions"] == {"revise": 1}
    assert people["ann1"]["timed"] == 1 and 0 <= people["ann1"]["seconds_mean"] <= 42.0
    assert people["ann2"]["timed"] == 0  # no active time sent: none recorded
    assert people["lead"]["adjudicated"] == 1
    # open mode registers nobody: each person's job is the one their work shows
    assert (people["ann1"]["job"], people["ann2"]["job"], people["lead"]["job"]) == ("annotator", "annotator", "senior")
    task = next(t for t in p["tasks"] if t["task"] == items[0]["task"])
    assert task["agreement"]["items"] == 1 and task["agreement"]["pairs"][0]["same"] == 0.0
    assert people["ann1"]["open"] == 12


def _views(c, name: str, iid: str) -> dict[str, object]:  # noqa: ANN001
    """Everything ``name`` can ask the API, with the fields that differ by time alone taken out."""
    volatile = {"video_url", "at", "undo", "seconds", "updated_at", "seconds_mean", "seconds_median"}

    def clean(x: object) -> object:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in volatile}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    h = who(name)
    return {path: clean(c.get(path, headers=h).json()) for path in (
        "/api/session", "/api/items", item_url(iid), item_url(iid, "?claim=1"), "/api/next", "/api/progress",
        "/api/items?status=needs_adjudication", "/api/items?status=accepted")} | {
        page: c.get(page).text for page in ("/annotate", "/progress")}


@pytest.mark.parametrize("second", ["reject", "revise"])
def test_an_annotator_cannot_learn_the_other_decision(sample_master: Path, tmp_path: Path, second: str) -> None:
    """Whatever the other annotator decided (the same, or not), everything ann1 can ask is the same,
    before and after they change their mind: the blind rule of the double annotation."""
    seen = []
    for other in ("accept", second):
        root = shutil.copytree(sample_master, tmp_path / other / "sample")
        c = make_client(root)
        iid = c.get("/api/next", headers=who("ann1")).json()["id"]
        c.get(item_url(iid, "?claim=1"), headers=who("ann1"))
        assert c.post(item_url(iid, "/review"), headers=who("ann1"), json=verdict("ann1", "accept")).status_code == 200
        d = c.get(item_url(iid, "?claim=1"), headers=who("ann2")).json()
        edits = [{"round": 1, "field": "user", "value": d["rounds"][0]["user"] + "?"}] if other == "revise" else []
        assert c.post(item_url(iid, "/review"), headers=who("ann2"),
                      json=verdict("ann2", other, edits=edits)).status_code == 200
        views = _views(c, "ann1", iid)
        change = c.post(item_url(iid, "/review"), headers=who("ann1"), json=verdict("ann1", "reject"))
        assert change.status_code == 200 and change.json()["notice"] == CHANGED_NOTICE
        views["change"] = {k: v for k, v in change.json().items() if k not in ("undo", "mine", "my_referral")}
        views |= {f"after {k}": v for k, v in _views(c, "ann1", iid).items()}
        seen.append(views)
        # the senior sees the difference, and the change as a new disagreement with its notice
        s = c.get(item_url(iid), headers=who("lead", "senior")).json()
        assert s["status"] == "needs_adjudication" and s["notices"] == [
            "ann1 changed their decision after both had decided: accept -> reject"]
    assert seen[0] == seen[1]


def test_a_refused_decision_goes_to_the_senior_with_its_text(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/items", headers=who("ann1")).json()["items"][0]["id"]
    for name in ("ann1", "ann2"):
        assert c.post(item_url(iid, "/review"), headers=who(name), json=verdict(name, "accept")).status_code == 200
    d = c.get(item_url(iid, "?claim=1"), headers=who("ann3")).json()
    assert d["yours"] == "taken" and d["claimed"] is False
    edit = {"round": 1, "field": "assistant", "value": "<b>A finished revision</b> & more"}
    r = c.post(item_url(iid, "/review"), headers=who("ann3"),
               json=verdict("ann3", "revise", edits=[edit], comment="long comment <script>x</script>"))
    assert r.status_code == 200, r.text
    assert r.json()["notice"] == TAKEN_NOTICE and r.json()["yours"] == "referred"
    assert r.json()["my_referral"]["edits"][0]["value"] == edit["value"]  # nothing typed is lost
    s = c.get(item_url(iid), headers=who("lead", "senior")).json()
    assert s["status"] == "needs_adjudication" and [x["annotator"] for x in s["sides"]] == ["ann1", "ann2", "ann3"]
    assert s["diff"][0]["values"][2] == edit["value"] and s["sides"][2]["comment"] == "long comment <script>x</script>"
    r = c.post(item_url(iid, "/adjudicate"), headers=who("lead", "senior"),
               json=verdict("lead", "revise", senior=True, edits=[edit]))
    assert r.status_code == 200 and r.json()["status"] == "accepted"
    assert c.get(item_url(iid), headers=who("lead", "senior")).json()["notices"] == []


def test_a_second_senior_confirms_before_overwriting(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/items", headers=who("ann1")).json()["items"][0]["id"]
    c.post(item_url(iid, "/review"), headers=who("ann1"), json=verdict("ann1", "accept"))
    c.post(item_url(iid, "/review"), headers=who("ann2"), json=verdict("ann2", "reject"))
    assert c.post(item_url(iid, "/adjudicate"), headers=who("lead", "senior"),
                  json=verdict("lead", "accept", senior=True)).status_code == 200
    r = c.post(item_url(iid, "/adjudicate"), headers=who("lead2", "senior"),
               json=verdict("lead2", "reject", senior=True))
    assert r.status_code == 409 and r.json()["confirm"] is True and "lead's final decision" in r.json()["error"]
    assert c.get(item_url(iid), headers=who("lead2", "senior")).json()["status"] == "accepted"
    r = c.post(item_url(iid, "/adjudicate"), headers=who("lead2", "senior"),
               json=verdict("lead2", "reject", senior=True, confirm=True))
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    assert c.post(item_url(iid, "/adjudicate"), headers=who("lead2", "senior"),
                  json=verdict("lead2", "reject", senior=True, comment="again")).status_code == 200  # their own


def test_the_criteria_are_required_and_ruled(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/items", headers=who("a")).json()["items"][0]["id"]
    url = item_url(iid, "/review")
    cases = [
        ({"annotator": "a", "decision": "accept"}, "mark each criterion met or not met"),
        (verdict("a", "accept", unmet=("capability",)), "accept needs every criterion met (capability not met)"),
        (verdict("a", "accept", checklist={"99.Q1": "keep"}), "no checklist item 99.Q1"),
        (verdict("a", "accept", criteria={"capability": {"met": True}}), "missing grounded, coherent"),
        (verdict("a", "accept", criteria={"capability": {"met": True, "x": 1}}), "Extra inputs"),
    ]
    for body, msg in cases:
        r = c.post(url, headers=who("a"), json=body)
        assert r.status_code == 422 and msg in r.json()["error"], (body, r.text)
    key = c.get(item_url(iid), headers=who("a")).json()["checklist_keys"][0]
    r = c.post(url, headers=who("a"), json=verdict("a", "accept", checklist={key: "revise"}))
    assert r.status_code == 422 and "accept keeps every checklist item" in r.json()["error"]
    r = c.post(url, headers=who("a"), json=verdict("a", "reject", unmet=("grounded", "coherent"),
                                                   checklist={key: "revise"}))
    assert r.status_code == 200 and r.json()["mine"]["checklist"][key] == "revise"
    assert [k for k, v in r.json()["mine"]["criteria"].items() if not v["met"]] == ["grounded", "coherent"]


def test_drafts_are_kept_per_person_and_item(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/items", headers=who("a")).json()["items"][0]["id"]
    d = c.get(item_url(iid, "?claim=1"), headers=who("a")).json()
    assert d["drafts"] == {}
    data = {"mode": "revise", "comment": "<img src=x onerror=alert(1)>", "fields": {"1.user": "half typed"}}
    r = c.put(item_url(iid, "/draft"), headers=who("a"), json={"content_hash": d["content_hash"], "data": data})
    assert r.status_code == 200, r.text
    assert c.get(item_url(iid), headers=who("a")).json()["drafts"]["review"]["data"] == data
    assert c.get(item_url(iid), headers=who("b")).json()["drafts"] == {}  # per person
    assert c.get(item_url(iid, "/draft?scope=review"), headers=who("a")).json()["draft"]["data"] == data
    r = c.put(item_url(iid, "/draft"), headers=who("a"), json={"scope": "adjudicate", "content_hash": "x", "data": {}})
    assert r.status_code == 403  # an annotator keeps no senior drafts
    r = c.put(item_url(iid, "/draft"), headers=who("lead", "senior"),
              json={"scope": "adjudicate", "content_hash": d["content_hash"], "data": {"comment": "merge A and B"}})
    assert r.status_code == 200
    assert c.get(item_url(iid), headers=who("lead", "senior")).json()["drafts"]["adjudicate"]["data"] == {
        "comment": "merge A and B"}
    big = {"content_hash": d["content_hash"], "data": {"comment": "x" * 300_000}}
    r = c.put(item_url(iid, "/draft"), headers=who("a"), json=big)
    assert r.status_code == 422 and "larger than 256 KiB" in r.json()["error"]
    # a refused save keeps the draft; a recorded decision ends it
    r = c.post(item_url(iid, "/review"), headers=who("a"), json=verdict("a", "accept", content_hash="0" * 16))
    assert r.status_code == 409 and c.get(item_url(iid), headers=who("a")).json()["drafts"]["review"]["data"] == data
    assert c.post(item_url(iid, "/review"), headers=who("a"), json=verdict("a", "accept")).status_code == 200
    assert c.get(item_url(iid), headers=who("a")).json()["drafts"] == {}
    assert c.delete(item_url(iid, "/draft?scope=review"), headers=who("a")).json() == {"draft": None}


def test_undo_a_one_key_decision(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/next", headers=who("a")).json()["id"]
    r = c.post(item_url(iid, "/review"), headers=who("a"), json=verdict("a", "accept"))
    seq = r.json()["undo"]
    assert c.post(item_url(iid, "/undo"), headers=who("b"), json={"seq": seq}).status_code == 409  # not b's
    r = c.post(item_url(iid, "/undo"), headers=who("a"), json={"seq": seq})
    assert r.status_code == 200 and r.json()["mine"] is None and r.json()["yours"] == "open"
    assert c.get("/api/next", headers=who("a")).json()["id"] == iid  # back in the queue, first
    assert c.post(item_url(iid, "/undo"), headers=who("a"), json={"seq": seq}).status_code == 409


def test_video_links_survive_a_restart_and_can_be_signed_again(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/next", headers=who("a")).json()["id"]
    url = c.get(item_url(iid), headers=who("a")).json()["video_url"]
    restarted = make_client(sample)  # a new process: the same store, so the same signing key
    assert restarted.get(url, headers={"Range": "bytes=0-9"}).status_code == 206
    fresh = restarted.get(item_url(iid, "/video"), headers=who("a")).json()["video_url"]
    assert fresh.startswith("/media/") and restarted.get(fresh, headers={"Range": "bytes=0-9"}).status_code == 206


def test_kappa_per_annotator_pair_whoever_decided_first(sample: Path) -> None:
    """Six dialogues decided by ann1 and ann2 in alternating order. Per pair (ann1 as rater A):
    ann1 = [acc, acc, acc, acc, rej, rej], ann2 = [acc, acc, rej, acc, rej, acc]: po = 4/6;
    ann1 has 4 acc / 2 rej, ann2 4 acc / 2 rej: pe = (4*4 + 2*2) / 36 = 20/36; kappa = (24 - 20) / (36 - 20) = 0.25.
    "First vs second" would pair (acc,acc) (acc,acc) (rej,acc) (acc,acc) (rej,rej) (rej,acc) instead:
    first = 3 acc / 3 rej, second = 5 acc / 1 rej: pe = (15 + 3) / 36, kappa = (24 - 18) / (36 - 18) = 1/3."""
    c = make_client(sample)
    ids = [i["id"] for i in c.get("/api/items", headers=who("a")).json()["items"]][:6]
    plan = [("accept", "accept", "ann1"), ("accept", "accept", "ann2"), ("accept", "reject", "ann2"),
            ("accept", "accept", "ann1"), ("reject", "reject", "ann1"), ("reject", "accept", "ann2")]
    for iid, (x, y, first) in zip(ids, plan):
        order = [("ann1", x), ("ann2", y)] if first == "ann1" else [("ann2", y), ("ann1", x)]
        for name, dec in order:
            assert c.post(item_url(iid, "/review"), headers=who(name), json=verdict(name, dec)).status_code == 200
    p = c.get("/api/progress", headers=who("lead", "senior")).json()
    (pair,) = p["overall"]["agreement"]["pairs"]
    assert (pair["a"], pair["b"], pair["items"]) == ("ann1", "ann2", 6)
    assert pair["kappa"]["decision"] == pytest.approx(0.25)
    assert p["overall"]["agreement"]["kappa"] == pytest.approx(0.25)
    assert pair["same"] == pytest.approx(4 / 6) and p["overall"]["agreement"]["alpha"] is None  # two people only
    assert pair["kappa"]["capability"] is None  # everyone said "met": undefined, not 1
    # an annotator sees only their own work, no agreement and nobody else
    own = c.get("/api/progress", headers=who("ann1")).json()
    assert own["scope"] == "own" and own["me"]["done"] == 6 and "annotators" not in own and "overall" not in own


def test_krippendorff_alpha_when_more_than_two_people_decided(sample: Path) -> None:
    """Three annotators on four dialogues, two per dialogue. Units (decision labels):
    (acc, acc) (acc, rej) (rej, rej) (acc, acc): o_aa = 4, o_ar = o_ra = 1, o_rr = 2; n_a = 5, n_r = 3, n = 8;
    alpha = 1 - 7 * 2 / (5*3 + 3*5) = 1 - 14/30 = 8/15."""
    c = make_client(sample)
    ids = [i["id"] for i in c.get("/api/items", headers=who("a")).json()["items"]][:4]
    plan = [("ann1", "accept", "ann2", "accept"), ("ann2", "accept", "ann3", "reject"),
            ("ann1", "reject", "ann3", "reject"), ("ann1", "accept", "ann3", "accept")]
    for iid, (p1, d1, p2, d2) in zip(ids, plan):
        for name, dec in ((p1, d1), (p2, d2)):
            assert c.post(item_url(iid, "/review"), headers=who(name), json=verdict(name, dec)).status_code == 200
    agreement = c.get("/api/progress", headers=who("lead", "senior")).json()["overall"]["agreement"]
    assert agreement["people"] == 3 and agreement["alpha"]["decision"] == pytest.approx(8 / 15)
    assert [(x["a"], x["b"], x["items"]) for x in agreement["pairs"]] == [
        ("ann1", "ann2", 1), ("ann1", "ann3", 2), ("ann2", "ann3", 1)]
    assert agreement["kappa"] is None  # several pairs: no single headline kappa


def test_guidelines_markdown_is_rendered_escaped(sample: Path) -> None:
    from starlette.testclient import TestClient

    from mtvbench.review.app import LOOPBACK_NAMES, create_app
    from mtvbench.review.source import open_source
    from mtvbench.review.store import ReviewStore

    md = "# Our rules\n\nCheck **twice**. <script>alert(1)</script> [x](javascript:alert(1)) ![i](http://e.x/i.png)"
    source = open_source(sample)
    c = TestClient(create_app(source, ReviewStore(source.default_store), guidelines=md,
                              trusted_hosts=LOOPBACK_NAMES | {"testserver"}))
    page = c.get("/annotate").text
    assert "<h1>Our rules</h1>" in page and "<strong>twice</strong>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert 'href="javascript' not in page and "e.x/i.png\"" not in page and "<img" not in page
    assert "<h1>Our rules</h1>" in c.get("/senior").text
    assert "Capability" in make_client(sample).get("/annotate").text  # the built-in guidelines otherwise


def test_validation_errors_are_clear(sample: Path) -> None:
    c = make_client(sample)
    iid = c.get("/api/items", headers=who("a")).json()["items"][0]["id"]
    url = item_url(iid, "/review")
    cases = [
        ({"annotator": "a", "decision": "maybe"}, 422, "decision"),
        ({"annotator": "   ", "decision": "accept"}, 422, "name is empty"),
        ({"annotator": "a", "decision": "reject"}, 422, "needs a reason"),
        ({"annotator": "a", "decision": "revise", "edits": []}, 422, "must change"),
        ({"annotator": "a", "decision": "revise", "edits": [{"round": 99, "field": "user", "value": "x"}]}, 422,
         "no round 99"),
        ({"annotator": "a", "decision": "accept", "extra": 1}, 422, "extra"),
        ({"annotator": "b", "decision": "accept"}, 403, "signed in as a"),
    ]
    for body, code, msg in cases:
        r = c.post(url, headers=who("a"), json=body)
        assert r.status_code == code and msg in r.json()["error"], (body, r.status_code, r.text)
    r = c.post(url, headers=who("a") | {"content-type": "text/plain"}, content=b'{"annotator":"a"}')
    assert r.status_code == 415
    r = c.post(url, headers=who("a") | {"content-type": "application/json"},
               content=b'{"annotator":"a","annotator":"b","decision":"accept"}')
    assert r.status_code == 400 and "duplicate key" in r.json()["error"]
    big = json.dumps({"annotator": "a", "decision": "accept", "comment": "x" * (600 * 1024)})
    r = c.post(url, headers=who("a") | {"content-type": "application/json"}, content=big.encode())
    assert r.status_code == 413
    assert c.post(item_url("no/such/item", "/review"), headers=who("a"),
                  json={"annotator": "a", "decision": "accept"}).status_code == 404
    assert c.get("/api/items", headers=who("bad\x01name")).status_code == 401
    assert c.get("/api/items").status_code == 401
    assert c.get("/api/items", headers=who("a")).json()["items"][0]["mine"] is None  # nothing half-recorded


def test_tokens(sample: Path) -> None:
    from mtvbench.review.store import ReviewStore

    st = ReviewStore(sample / "review.sqlite")
    t1, t2, tl = st.add_user("ann1", "annotator"), st.add_user("ann2", "annotator"), st.add_user("lead", "senior")
    c = make_client(sample)
    bearer = lambda t: {"Authorization": f"Bearer {t}"}  # noqa: E731
    assert c.get("/api/session").json()["mode"] == "token" and c.get("/api/session").json()["name"] is None
    assert c.get("/api/items", headers=who("ann1")).status_code == 401  # names alone are not enough any more
    assert c.get("/api/items", headers=bearer("wrong")).status_code == 401
    assert c.get("/api/session", headers=bearer(t1)).json()["name"] == "ann1"
    iid = c.get("/api/items", headers=bearer(t1)).json()["items"][0]["id"]
    r = c.post(item_url(iid, "/review"), headers=bearer(t1), json={"annotator": "ann2", "decision": "accept"})
    assert r.status_code == 403  # an annotator can only act as themselves
    assert c.post(item_url(iid, "/review"), headers=bearer(t1), json=verdict("ann1", "accept")).status_code == 200
    assert c.post(item_url(iid, "/review"), headers=bearer(t2), json=verdict("ann2", "reject")).status_code == 200
    assert c.post(item_url(iid, "/adjudicate"), headers=bearer(t2),
                  json=verdict("ann2", "accept", senior=True)).status_code == 403
    assert c.post(item_url(iid, "/adjudicate"), headers=bearer(tl),
                  json=verdict("lead", "accept", senior=True)).status_code == 200


def test_removing_a_user_revokes_their_signed_video_links_at_once(sample: Path) -> None:
    """A video link is signed for 12 hours; `review users --remove` (and `add-user --replace`) revokes the
    person's links at once, through the real command, while the links of others keep working."""
    from typer.testing import CliRunner

    from mtvbench.cli import app
    from mtvbench.review.store import ReviewStore

    st = ReviewStore(sample / "review.sqlite")
    tokens = {name: st.add_user(name, "annotator") for name in ("ann1", "ann2", "ann3")}
    c = make_client(sample)
    iid = c.get("/api/items", headers={"Authorization": f"Bearer {tokens['ann1']}"}).json()["items"][0]["id"]
    urls = {name: c.get(item_url(iid), headers={"Authorization": f"Bearer {t}"}).json()["video_url"]
            for name, t in tokens.items()}
    assert all(c.get(u, headers={"Range": "bytes=0-9"}).status_code == 206 for u in urls.values())
    r = CliRunner().invoke(app, ["review", "users", str(sample), "--remove", "ann1"])
    assert r.exit_code == 0 and "video links stop working" in r.output, r.output
    assert c.get(urls["ann1"]).status_code == 404
    assert CliRunner().invoke(app, ["review", "add-user", str(sample), "ann2", "--replace"]).exit_code == 0
    assert c.get(urls["ann2"]).status_code == 404
    assert c.get(urls["ann3"], headers={"Range": "bytes=0-9"}).status_code == 206
    # re-adding a removed name does not bring the old links back
    st.add_user("ann1", "annotator")
    assert c.get(urls["ann1"]).status_code == 404


def test_tokens_required_beyond_loopback(sample: Path) -> None:
    c = make_client(sample, require_tokens=True)
    assert c.get("/api/items", headers=who("ann1")).status_code == 401


def test_video_range_requests_and_no_traversal(sample: Path) -> None:
    c = make_client(sample)
    d = c.get(item_url(c.get("/api/next", headers=who("a")).json()["id"]), headers=who("a")).json()
    url = d["video_url"]
    size = (sample / "videos" / f"{d['video']}.mp4").stat().st_size
    r = c.get(url, headers={"Range": "bytes=100-199"})
    assert r.status_code == 206 and len(r.content) == 100
    assert r.headers["content-range"] == f"bytes 100-199/{size}" and r.headers["content-type"] == "video/mp4"
    assert r.content == (sample / "videos" / f"{d['video']}.mp4").read_bytes()[100:200]
    assert c.get(url).status_code == 200
    tampered = url.replace(d["video"], "city_traffic", 1)
    assert c.get(tampered).status_code == 404  # the signature names the video
    assert c.get(url.rsplit("&sig=", 1)[0] + "&sig=" + "0" * 64).status_code == 404
    (sample / "secret.txt").write_text("secret")
    for bad in ("/media/../secret.txt", "/media/%2e%2e/secret.txt", "/media/..%2Fsecret.txt",
                "/media/.spec-" + d["video"] + ".sha", "/media//etc/passwd"):
        r = c.get(bad + url[url.index("?"):])
        assert r.status_code == 404 and b"secret" not in r.content, bad


def test_pages_headers_and_host(sample: Path) -> None:
    c = make_client(sample)
    for page in ("/", "/annotate", "/senior", "/progress"):
        r = c.get(page)
        assert r.status_code == 200 and "<script src=\"/static/common.js\">" in r.text
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert "http" not in r.text.split("<body", 1)[1].replace("http-equiv", "")  # no CDN, nothing external
    assert c.get("/static/common.js").status_code == 200 and c.get("/static/app.css").status_code == 200
    assert c.get("/api/session", headers=who("a")).headers["cache-control"] == "no-store"
    assert c.get("/", headers={"host": "evil.example:8765"}).status_code == 421  # DNS rebinding


def test_dialogue_text_is_data(sample: Path) -> None:
    """Markup in a dialogue comes back verbatim as JSON text (the pages insert it with textContent)."""
    path = sample / "mtqa" / "summary.json"
    data = json.loads(path.read_text())
    video = next(iter(data))
    data[video][0]["mtqa"]["Round 1"]["User"] = "<img src=x onerror=alert(1)> at 00:00:01 to 00:00:02"
    path.write_text(json.dumps(data))
    c = make_client(sample)
    iid = f"content_summary/{video}/{data[video][0]['event_index']}"
    d = c.get(item_url(iid), headers=who("a")).json()
    assert d["rounds"][0]["user"].startswith("<img src=x")
    assert d["rounds"][0]["user_segments"][0]["text"] == "<img src=x onerror=alert(1)> at "


def test_source_reloaded_when_files_change(sample: Path) -> None:
    c = make_client(sample)
    assert len(c.get("/api/items", headers=who("a")).json()["items"]) == 13
    path = sample / "mtqa" / "summary.json"
    data = json.loads(path.read_text())
    video = next(iter(data))
    data[video] = data[video][:1]
    removed = sum(len(v) for v in json.loads(path.read_text()).values()) - sum(len(v) for v in data.values())
    path.write_text(json.dumps(data))
    (sample / "checklist" / "summary_CheckList.json").write_text(json.dumps({
        v: {str(e["event_index"]): json.loads((sample / "checklist" / "summary_CheckList.json").read_text())[v][
            str(e["event_index"])] for e in ev} for v, ev in data.items()}))
    assert len(c.get("/api/items", headers=who("a")).json()["items"]) == 13 - removed


def test_the_session_says_the_job_and_the_old_header_still_names_it(sample: Path) -> None:
    """What a person does is their *job* (``role`` is the part a model plays); a page loaded before the rename
    sends ``X-Review-Role``, which is still read."""
    from urllib.parse import quote

    c = make_client(sample)
    me = c.get("/api/session", headers=who("lead", "senior")).json()
    assert me["name"] == "lead" and me["job"] == "senior" and me["jobs"] == ["annotator", "senior"]
    old = c.get("/api/session", headers={"X-Review-User": quote("lead"), "X-Review-Role": "senior"}).json()
    assert old["job"] == "senior"
    bad = c.get("/api/session", headers=who("x", "boss")).json()
    assert bad["name"] is None and bad["job"] is None and "job must be one of" in bad["error"]
    assert c.get("/api/items", headers=who("x", "boss")).status_code == 401


def test_links_on_the_home_page_keep_underscores_visible(sample: Path) -> None:
    """An id such as ``object_reference/vid0/0`` is a link: its underline sits below the underscores."""
    import re

    c = make_client(sample)
    css = re.sub(r"/\*.*?\*/", "", c.get("/static/app.css").text, flags=re.S)
    rules: dict[str, str] = {}
    for sels, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):  # every rule of a selector: the cascade keeps each
        for sel in sels.split(","):
            rules[sel.strip()] = rules.get(sel.strip(), "") + body
    for selector in ("a", ".link"):
        assert "text-underline-offset" in rules[selector], selector
    assert "text-decoration-skip-ink: none" in rules["a"]
