"""The flows of issue 18 in real Chromium (Playwright; the system Chromium, skipped without it): the blind
check, a refresh that restores a draft, a server restart that keeps the video, the keyboard after a submit.
Each test runs `mtvbench review serve` in a subprocess on the bundled sample (open mode: the pages send the
name kept in the browser)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.review.conftest import free_port, item_url, running_server, who
from tests.support.browser import closing_contexts

SAVED = "v => document.body.dataset.lastSaved === v"
PAYLOAD = '<img src=x onerror="document.body.dataset.pwned=1">'  # a hostile comment: shown as text, never run
SHOWN = "#rounds .round.scored"
ITEM = "#meta .item-id"


@contextmanager
def chromium_pages(chromium_browser: Any, url: str, problems: list[str]) -> Iterator[Callable[..., Any]]:
    """``open_as(name, path, job="annotator")``: a page in a browser context of its own for ``name`` (job None:
    not signed in yet); the contexts are closed at the end."""
    with closing_contexts(chromium_browser) as browser:

        def open_as(name: str, path: str, job: str | None = "annotator", ready: str = SHOWN) -> Any:
            ctx = browser.new_context(viewport={"width": 1360, "height": 860})
            if job is not None:
                ctx.add_init_script(f"localStorage.setItem('mtvbench-review-user', {name!r});"
                                    f"localStorage.setItem('mtvbench-review-role', {job!r});")
            page = ctx.new_page()
            page.on("console", lambda m: problems.append(f"{name} {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"{name} pageerror: {e}"))
            page.on("request", lambda r: None if r.url.startswith((url, "data:"))
                    else problems.append(f"{name} outside request: {r.url}"))
            page.goto(url + path)
            page.wait_for_selector(ready)
            return page

        yield open_as


def _accept_criteria(page: Any) -> None:
    for key in "123":  # unmarked -> met
        page.keyboard.press(key)


def test_blind_check(chromium_browser: Any, sample: Path) -> None:
    """After both decided, ann1 finds no trace of ann2's (different) decision on any page; changing their
    mind goes to the senior with a notice, and the senior sees it."""
    problems: list[str] = []
    with running_server(sample) as (url, _), chromium_pages(chromium_browser, url, problems) as open_as:
        a1 = open_as("ann1", "/annotate")
        iid = a1.locator(ITEM).inner_text()
        a1.keyboard.press("a")
        a1.wait_for_function(SAVED, arg=iid + ":accept")
        a2 = open_as("ann2", "/annotate?id=" + quote(iid))
        _accept_criteria(a2)
        a2.keyboard.press("r")
        a2.locator("#round-1 .turn.user .editor").fill("A different first question?")
        a2.fill("#comment", PAYLOAD)
        a2.keyboard.press("Control+Enter")
        a2.wait_for_function(SAVED, arg=iid + ":revise")

        a1.goto(url + "/")
        a1.wait_for_selector("#items tr")
        row = a1.locator("#items tr", has_text=iid).inner_text()
        assert "closed" in row and "accept" in row
        a1.goto(url + "/annotate?id=" + quote(iid))
        a1.wait_for_selector("#my-decision")
        assert "Both annotators have decided" in a1.locator("#my-decision").inner_text()
        a1.goto(url + "/progress")
        a1.wait_for_selector("#own tr")
        for page_text in (row, a1.locator("body").inner_text()):
            for leak in ("ann2", "adjudicat", "2/2", "revise", "kappa", "disagree", "onerror"):
                assert leak not in page_text.lower(), (leak, page_text)

        a1.goto(url + "/annotate?id=" + quote(iid))
        a1.wait_for_selector("#my-decision")
        a1.keyboard.press("x")
        a1.select_option("#reason", "ambiguous question")
        a1.keyboard.press("Control+Enter")
        a1.wait_for_function(SAVED, arg=iid + ":reject")
        assert "new disagreement" in a1.locator("#toast").inner_text()

        lead = open_as("lead", "/senior?id=" + quote(iid), job="senior", ready="#notices li")
        assert "ann1 changed their decision after both had decided: accept -> reject" in \
            lead.locator("#notices").inner_text()
        assert lead.locator(".review-card").count() == 2
        assert PAYLOAD in lead.locator(".review-card .comment").last.inner_text()
        assert lead.locator(".review-card img").count() == 0 and lead.evaluate("document.body.dataset.pwned") is None
    assert problems == []


def test_refresh_restores_a_draft(chromium_browser: Any, sample: Path) -> None:
    """Criteria, edits, a note and the comment come back after a refresh; leaving with edits not yet
    saved asks first, and the last keystrokes are saved as the page goes."""
    problems: list[str] = []
    with running_server(sample) as (url, _), chromium_pages(chromium_browser, url, problems) as open_as:
        page = open_as("ann1", "/annotate")
        iid = page.locator(ITEM).inner_text()
        page.keyboard.press("1")
        page.keyboard.press("2")
        page.keyboard.press("2")  # grounded: met -> not met
        page.fill("#criteria [data-key=grounded] .criterion-note", "Q2 names <b>two</b> cars")
        page.click(".choice.revise")
        page.locator("#round-1 .turn.user .editor").fill("Which <i>shape</i> comes first?")
        page.fill("#comment", "first round reworded")
        page.wait_for_function("id => document.body.dataset.draftSaved === id", arg=iid)

        page.reload()
        page.wait_for_selector(SHOWN)
        assert page.locator(ITEM).inner_text() == iid
        assert page.evaluate("document.body.dataset.mode") == "revise"
        assert page.locator("#round-1 .turn.user .editor").input_value() == "Which <i>shape</i> comes first?"
        assert page.locator("#comment").input_value() == "first round reworded"
        assert page.locator("#criteria-grounded-not").is_checked()
        assert page.locator("#criteria-capability-met").is_checked()
        assert page.locator("#criteria [data-key=grounded] .criterion-note").input_value() == "Q2 names <b>two</b> cars"
        assert "draft restored" in page.locator("#draft-state").inner_text()

        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.type), d.accept()))
        page.locator("#comment").click()
        page.keyboard.type(" and typed just before leaving")
        page.reload()  # before the draft was saved: the browser asks, the page saves on its way out
        assert dialogs == ["beforeunload"]
        with httpx.Client(base_url=url, timeout=10) as c:
            for _ in range(100):
                d = c.get(item_url(iid, "/draft?scope=review"), headers=who("ann1")).json()["draft"]
                if d["data"]["comment"].endswith("leaving"):
                    break
                page.wait_for_timeout(100)
        page.reload()
        page.wait_for_selector(SHOWN)
        assert page.locator("#comment").input_value() == "first round reworded and typed just before leaving"
    assert problems == []


def test_restart_keeps_the_video(chromium_browser: Any, sample: Path) -> None:
    """The player opens at the dialogue's first time range; after a restart the same link plays; a link
    that stopped working is signed again; a video that cannot be played says so."""
    problems: list[str] = []
    port = free_port()
    iid = "topic_shifting/shapes_parade/2"  # its first time range starts at 00:00:08
    player = "document.getElementById('player')"
    with chromium_pages(chromium_browser, f"http://127.0.0.1:{port}", problems) as open_as:
        with running_server(sample, port=port):
            page = open_as("ann1", "/annotate?id=" + quote(iid))
            page.wait_for_function(f"() => {player}.readyState >= 1")
            page.wait_for_function(f"() => Math.abs({player}.currentTime - 8) < 0.6")
            src = page.evaluate(f"{player}.src")
        with running_server(sample, port=port):
            status = page.evaluate("async u => (await fetch(u, {headers: {Range: 'bytes=0-9'}})).status", src)
            assert status == 206  # the signing key is in the store: the old link still plays
            with sqlite3.connect(sample / "review.sqlite") as db:  # revoke ann1's links, as removing a user does
                db.execute("INSERT INTO signing VALUES('ann1', 7) ON CONFLICT(name) DO UPDATE SET epoch=epoch+1")
            page.evaluate(f"() => {{ {player}.src = {player}.src + '&again=1'; }}")
            page.wait_for_function(f"() => {player}.dataset.resigned === '1' && {player}.readyState >= 1")
            assert page.locator(".video-error").is_hidden()
            (sample / "videos" / "shapes_parade.mp4").unlink()
            page.evaluate(f"() => {{ {player}.src = {player}.src + '&gone=1'; }}")
            page.wait_for_selector(".video-error:not([hidden])")
            assert "cannot be played" in page.locator(".video-error").inner_text()
    assert [p for p in problems if "Failed to load resource" not in p] == []


def test_keyboard_after_submit(chromium_browser: Any, sample: Path) -> None:
    """Ctrl+Enter from the comment box, then `a` accepts the next dialogue (it does not type "a"); `u`
    undoes that one-key decision from its message."""
    problems: list[str] = []
    with running_server(sample) as (url, _), chromium_pages(chromium_browser, url, problems) as open_as:
        page = open_as("ann1", "/annotate")
        first = page.locator(ITEM).inner_text()
        _accept_criteria(page)
        page.keyboard.press("r")
        page.locator("#round-1 .turn.user .editor").fill("A sharper first question?")
        page.locator("#comment").click()
        page.keyboard.type("reworded")
        page.keyboard.press("Control+Enter")
        page.wait_for_function(SAVED, arg=first + ":revise")
        page.wait_for_function("id => document.querySelector('#meta .item-id').textContent !== id", arg=first)
        second = page.locator(ITEM).inner_text()
        assert page.evaluate("document.activeElement.tagName") in ("MAIN", "BODY")
        page.keyboard.press("a")
        page.wait_for_function(SAVED, arg=second + ":accept")
        assert page.locator("#comment").input_value() == ""
        with httpx.Client(base_url=url, timeout=10) as c:
            mine = c.get(item_url(second), headers=who("ann1")).json()["mine"]
            assert (mine["decision"], mine["comment"]) == ("accept", "")
            assert "Undo" in page.locator("#toast").inner_text()
            page.keyboard.press("u")
            page.wait_for_function(SAVED, arg=second + ":undone")
            # the page goes back to the undone dialogue (it may still be drawing the next one: wait for it)
            page.wait_for_function("id => document.querySelector('#meta .item-id').textContent === id", arg=second)
            assert page.locator(ITEM).inner_text() == second
            assert c.get(item_url(second), headers=who("ann1")).json()["mine"] is None
            revised = c.get(item_url(first), headers=who("ann1")).json()["mine"]
            assert revised["decision"] == "revise" and revised["seconds"] is not None  # the page's active time
    assert problems == []
