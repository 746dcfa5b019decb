"""The JSON API through the framework's test client: the whole flow, auth, blindness, validation, video."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.review.conftest import item_url, make_client, who

pytest.importorskip("starlette", reason="the review web app needs mtvbench[review]")


def _first_scored(item: dict) -> tuple[int, dict]:
    r = next(r for r in item["rounds"] if r["scored"])
    return r["index"], r["checklist"][0]


def test_flow_two_annotators_and_senior(sample: Path) -> None:
    c = make_client(sample)
    items = c.get("/api/items", headers=who("ann1")).json()["items"]
    assert len(items) == 13 and {i["status"] for i in items} == {"pending"}
    first = c.get("/api/next", headers=who("ann1")).json()["id"]
    assert first == items[0]["id"]
    d = c.get(item_url(first, "?claim=1"), headers=who("ann1")).json()
    assert d["video_url"].startswith("/media/") and d["ranges"] and d["rounds"][0]["user_segments"]
    assert any(s["start"] is not None for r in d["rounds"] for s in r["user_segments"])
    k, q = _first_scored(d)
    r = c.post(item_url(first, "/review"), headers=who("ann1"),
               json={"annotator": "ann1", "decision": "accept", "content_hash": d["content_hash"]})
    assert r.status_code == 200, r.text
    assert c.get("/api/next", headers=who("ann2")).json()["id"] == first
    # blind: ann2 sees no trace of ann1's decision
    d2 = c.get(item_url(first, "?claim=1"), headers=who("ann2")).json()
    assert d2["reviews"] is None and d2["mine"] is None and d2["diff"] is None
    assert "ann1" not in json.dumps(d2)
    edit = {"round": k, "field": "question", "item": q["key"], "value": q["question"] + " (exactly)"}
    r = c.post(item_url(first, "/review"), headers=who("ann2"),
               json={"annotator": "ann2", "decision": "revise", "edits": [edit], "comment": "too loose"})
    assert r.status_code == 200 and r.json()["status"] == "pending"  # the disagreement is not shown to them
    assert c.get(item_url(first), headers=who("ann1")).json()["status"] == "pending"
    # the senior sees both, with the diff
    s = c.get(item_url(first), headers=who("lead", "senior")).json()
    assert s["status"] == "needs_adjudication"
    assert [x["annotator"] for x in s["reviews"]] == ["ann1", "ann2"]
    assert s["diff"][0]["b"] == edit["value"] and s["diff"][0]["a"] == q["question"]
    todo = c.get("/api/items?status=needs_adjudication", headers=who("lead", "senior")).json()["items"]
    assert [t["id"] for t in todo] == [first]
    # an annotator cannot adjudicate; the senior can
    r = c.post(item_url(first, "/adjudicate"), headers=who("ann1"), json={"senior": "ann1", "decision": "accept"})
    assert r.status_code == 403
    r = c.post(item_url(first, "/adjudicate"), headers=who("lead", "senior"),
               json={"senior": "lead", "decision": "revise", "edits": [edit], "comment": "take B"})
    assert r.status_code == 200 and r.json()["status"] == "accepted"
    p = c.get("/api/progress", headers=who("lead", "senior")).json()
    assert p["counts"]["accepted"] == 1 and p["overall"]["revised"] == 1
    people = {a["name"]: a for a in p["annotators"]}
    assert people["ann1"]["done"] == 1 and people["ann2"]["decisions"] == {"revise": 1}
    assert people["ann1"]["timed"] == 1 and people["ann1"]["seconds_mean"] >= 0
    assert people["lead"]["adjudicated"] == 1
    task = next(t for t in p["tasks"] if t["task"] == items[0]["task"])
    assert task["agreement"]["items"] == 1 and task["agreement"]["agreement"] == 0.0
    assert people["ann1"]["open"] == 12


def test_kappa_between_the_two_annotators(sample: Path) -> None:
    c = make_client(sample)
    ids = [i["id"] for i in c.get("/api/items", headers=who("a")).json()["items"]]
    # four items: three pairs agree, one does not
    plan = [("accept", "accept"), ("reject", "reject"), ("accept", "reject"), ("reject", "reject")]
    for iid, (x, y) in zip(ids, plan):
        for name, dec in (("a", x), ("b", y)):
            body = {"annotator": name, "decision": dec, "comment": "why" if dec == "reject" else ""}
            assert c.post(item_url(iid, "/review"), headers=who(name), json=body).status_code == 200
    p = c.get("/api/progress", headers=who("a")).json()
    # pairs: (acc,acc) (rej,rej) (acc,rej) (rej,rej): po = 3/4, pe = (2*1 + 2*3)/16 = 0.5 -> kappa 0.5
    assert p["overall"]["agreement"]["items"] == 4
    assert p["overall"]["agreement"]["kappa"] == pytest.approx(0.5)
    assert p["overall"]["agreement"]["agreement"] == pytest.approx(0.75)


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
    assert c.post(item_url(iid, "/review"), headers=bearer(t1),
                  json={"annotator": "ann1", "decision": "accept"}).status_code == 200
    assert c.post(item_url(iid, "/review"), headers=bearer(t2),
                  json={"annotator": "ann2", "decision": "reject", "comment": "no"}).status_code == 200
    assert c.post(item_url(iid, "/adjudicate"), headers=bearer(t2),
                  json={"senior": "ann2", "decision": "accept"}).status_code == 403
    assert c.post(item_url(iid, "/adjudicate"), headers=bearer(tl),
                  json={"senior": "lead", "decision": "accept"}).status_code == 200


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
