"""Two tabs of one annotator in real Chromium (issue 28; the system Chromium, skipped without it): a draft saved in
one tab is never overwritten by the other's older copy, and a decision made in one tab is never silently replaced
from the other; the criteria keys work in revise mode (Esc leaves the text box)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.review.conftest import item_url, running_server, who
from tests.support.browser import closing_contexts

SAVED = "v => document.body.dataset.lastSaved === v"
SHOWN = "#rounds .round.scored"
GOLDEN = "#round-1 .turn.assistant .editor"


def _server_draft(url: str, iid: str) -> dict[str, Any] | None:
    with httpx.Client(base_url=url, timeout=10) as c:
        d = c.get(item_url(iid, "/draft?scope=review"), headers=who("ann1")).json()["draft"]
    return d["data"] if d else None


def _mine(url: str, iid: str) -> dict[str, Any] | None:
    with httpx.Client(base_url=url, timeout=10) as c:
        return c.get(item_url(iid), headers=who("ann1")).json()["mine"]


def _two_tabs(browser: Any, url: str, path: str, problems: list[str]) -> tuple[Any, Any]:
    """Two pages of ann1 in one browser context (one localStorage: one person, two tabs)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    ctx.add_init_script("localStorage.setItem('mtvbench-review-user', 'ann1');"
                        "localStorage.setItem('mtvbench-review-role', 'annotator');")
    pages = []
    for _ in range(2):
        page = ctx.new_page()
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.goto(url + path)
        page.wait_for_selector(SHOWN)
        pages.append(page)
    return pages[0], pages[1]


def _saved_draft(page: Any, iid: str) -> None:
    page.wait_for_function("id => document.body.dataset.draftSaved === id", arg=iid)


def test_two_tabs_editing_one_dialogue_lose_no_text(chromium_browser: Any, sample: Path) -> None:
    """Tab 1 revises the golden answer (draft saved); tab 2, opened before, types a comment: its save is refused and
    it says what differs; reloading keeps tab 1's rewrite and criteria and puts tab 2's comment back on them."""
    problems: list[str] = []
    with running_server(sample) as (url, _), closing_contexts(chromium_browser) as browser:
        iid = "object_reference/shapes_parade/0"
        tab1, tab2 = _two_tabs(browser, url, "/annotate?id=" + quote(iid), problems)
        for key in "123":
            tab1.keyboard.press(key)
        tab1.keyboard.press("r")
        tab1.locator(GOLDEN).fill("A rewritten golden answer.")
        _saved_draft(tab1, iid)

        tab2.fill("#comment", "tab two's comment")
        tab2.wait_for_selector("#conflict:not([hidden])")
        panel = tab2.locator("#conflict").inner_text()
        assert "newer draft" in panel and "another tab" in panel
        assert "Round 1 golden answer" in panel and "A rewritten golden answer." in panel and "comment" in panel
        assert _server_draft(url, iid)["fields"]["1.assistant"] == "A rewritten golden answer."  # not overwritten

        tab2.click("#conflict-reload")
        tab2.wait_for_function("() => document.body.dataset.conflict === ''")
        assert tab2.locator(GOLDEN).input_value() == "A rewritten golden answer."
        assert tab2.locator("#comment").input_value() == "tab two's comment"
        assert tab2.locator("#criteria-grounded-met").is_checked()
        _saved_draft(tab2, iid)
        data = _server_draft(url, iid)
        assert data["fields"]["1.assistant"] == "A rewritten golden answer." and data["comment"] == "tab two's comment"
        assert data["criteria"]["coherent"]["met"] is True

        # tab 1 now holds the older copy: its next keystroke is refused too, and "keep" is an explicit choice
        tab1.locator(GOLDEN).fill("A rewritten golden answer, again.")
        tab1.wait_for_selector("#conflict:not([hidden])")
        assert "tab two's comment" in tab1.locator("#conflict").inner_text()
        tab1.click("#conflict-keep")
        _saved_draft(tab1, iid)
        assert _server_draft(url, iid)["fields"]["1.assistant"] == "A rewritten golden answer, again."
    assert problems == []


def test_a_decision_made_in_another_tab_is_not_silently_replaced(chromium_browser: Any, sample: Path) -> None:
    """Tab 1 submits a revision; tab 2, still open, chooses Reject and submits: nothing is submitted, it says the
    dialogue was decided in another tab (revise), and the decision stays the revision until tab 2 keeps its text."""
    problems: list[str] = []
    with running_server(sample) as (url, _), closing_contexts(chromium_browser) as browser:
        iid = "object_reference/shapes_parade/0"
        tab1, tab2 = _two_tabs(browser, url, "/annotate?id=" + quote(iid), problems)
        for key in "123":
            tab1.keyboard.press(key)
        tab1.keyboard.press("r")
        tab1.locator(GOLDEN).fill("A rewritten golden answer.")
        tab1.keyboard.press("Control+Enter")
        tab1.wait_for_function(SAVED, arg=iid + ":revise")

        for key in "123":
            tab2.keyboard.press(key)
        tab2.keyboard.press("x")
        tab2.select_option("#reason", "ambiguous question")
        tab2.keyboard.press("Control+Enter")
        tab2.wait_for_selector("#conflict:not([hidden])")
        panel = tab2.locator("#conflict").inner_text()
        assert "decided" in panel and "another tab" in panel and "revise" in panel
        assert "A rewritten golden answer." in panel
        assert tab2.evaluate("document.body.dataset.lastSaved") is None  # "Saved: reject" never came
        mine = _mine(url, iid)
        assert mine["decision"] == "revise" and mine["edits"][0]["value"] == "A rewritten golden answer."

        tab2.click("#conflict-keep")  # the explicit choice: this tab's rejection replaces the revision
        tab2.keyboard.press("Control+Enter")
        tab2.wait_for_function(SAVED, arg=iid + ":reject")
        assert _mine(url, iid)["decision"] == "reject"
    assert problems == []


def test_criteria_keys_work_in_revise_mode(chromium_browser: Any, sample: Path) -> None:
    """After `r` the focus is in a text box; Esc leaves it (still revising) and 1 2 3 mark the criteria without
    typing into the text; the shortcuts help says so; Ctrl+Enter submits the revision."""
    problems: list[str] = []
    with running_server(sample) as (url, _), closing_contexts(chromium_browser) as browser:
        tab, _ = _two_tabs(browser, url, "/annotate", problems)
        iid = tab.locator("#meta .item-id").inner_text()
        tab.keyboard.press("r")
        assert tab.evaluate("document.activeElement.classList.contains('editor')")
        tab.keyboard.press("End")
        tab.keyboard.type(" Exactly when?")
        typed = tab.evaluate("document.activeElement.value")
        tab.keyboard.press("Escape")
        assert tab.evaluate("document.body.dataset.mode") == "revise"
        for key in "123":
            tab.keyboard.press(key)
        assert all(tab.locator(f"#criteria-{c}-met").is_checked() for c in ("capability", "grounded", "coherent"))
        assert typed.endswith("Exactly when?")
        assert typed in [e.input_value() for e in tab.locator("#rounds .editor").all()]
        assert "123" not in "".join(e.input_value() for e in tab.locator("#rounds .editor, #comment").all())
        help_text = tab.locator("#help").inner_text()
        assert "Esc" in help_text and "1" in help_text and "revising" in help_text
        tab.keyboard.press("Control+Enter")
        tab.wait_for_function(SAVED, arg=iid + ":revise")
    assert problems == []
