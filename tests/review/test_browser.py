"""The whole flow in real Chromium (Playwright): two annotators in two browser contexts review the
same dialogue (one accepts, one revises a checklist item), the senior adjudicates, and
`mtvbench review export` contains the revision. A screenshot of every page is kept
(``MTVBENCH_SCREENSHOTS=DIR`` copies them there, e.g. docs/screenshots)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.data.official import load_official
from mtvbench.review.store import ReviewStore
from tests.review.conftest import running_server
from tests.support.browser import closing_contexts

#: the build workspace is made (asyncio.run) before the module's browser starts: Playwright's sync API keeps its
#: event loop set as running in this thread while the browser is open
pytestmark = pytest.mark.usefixtures("built_ws")

SAVED = "v => document.body.dataset.lastSaved === v"
PAYLOAD = '<img src=x onerror="document.body.dataset.pwned=1">'


def _inject_markup(sample: Path) -> None:
    """The first dialogue's last question carries markup: it must show as text."""
    path = sample / "mtqa" / "object_reference.json"
    data = json.loads(path.read_text())
    rounds = data[next(iter(data))][0]["mtqa"]
    last = f"Round {len(rounds)}"
    rounds[last]["User"] = PAYLOAD + " " + rounds[last]["User"]
    path.write_text(json.dumps(data))


def run_flow(chromium_browser: Any, path: Path, shots: Path, tag: str) -> tuple[str, str]:
    """Returns (the reviewed item's id, the revised checklist question)."""
    store = ReviewStore(path / "review.sqlite")
    tokens = {n: store.add_user(n, r) for n, r in (("ann1", "annotator"), ("ann2", "annotator"), ("lead", "senior"))}
    problems: list[str] = []
    shots.mkdir(parents=True, exist_ok=True)
    with running_server(path) as (url, _), closing_contexts(chromium_browser) as browser:

        def login(name: str, path: str, ready: str):  # noqa: ANN202
            """A browser context of its own for ``name``: open their login link, then ``path``."""
            ctx = browser.new_context(viewport={"width": 1360, "height": 860})
            page = ctx.new_page()
            page.on("console", lambda m: problems.append(f"{name} {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"{name} pageerror: {e}"))
            page.on("request", lambda r: None if r.url.startswith((url, "data:"))
                    else problems.append(f"{name} outside request: {r.url}"))
            page.goto(f"{url}/#token={tokens[name]}")
            page.wait_for_selector("#hello:has-text('Signed in as')")
            assert "#token" not in page.url  # the token leaves the address bar
            if path != "/":
                page.goto(url + path)
            page.wait_for_selector(ready)
            return page

        # annotator 1: the index, then the first dialogue; a chip seeks the video; accept with `a`
        a1 = login("ann1", "/", "#items tr")
        if tag == "sample":
            a1.screenshot(path=str(shots / "review-index.png"))
        a1.click("text=Start annotating")
        a1.wait_for_selector("#rounds .round.scored")
        item_id = a1.locator("#meta .item-id").inner_text()
        a1.wait_for_function("() => document.getElementById('player').readyState >= 1")
        assert a1.evaluate("document.getElementById('player').duration") > 1
        chip = a1.locator("#chips .chip").last
        start = float(chip.get_attribute("data-start"))
        chip.click()
        a1.wait_for_function("s => Math.abs(document.getElementById('player').currentTime - s) < 1.5", arg=start)
        if tag == "sample":  # markup in the dialogue is shown as text, never run
            assert PAYLOAD in a1.locator("#rounds .round").last.locator(".turn.user .text").inner_text()
            assert a1.locator("#rounds img").count() == 0
            assert a1.evaluate("document.body.dataset.pwned") is None
        a1.keyboard.press("j")
        assert a1.locator("#round-2.current").count() == 1
        a1.keyboard.press("2")  # grounded: met (`a` marks the rest met)
        a1.keyboard.press("?")
        assert a1.locator("#help").is_visible()
        a1.keyboard.press("Escape")
        a1.locator("#player").evaluate("v => v.pause()")
        a1.wait_for_function("() => document.getElementById('player').readyState >= 2")
        a1.screenshot(path=str(shots / f"review-annotate{'' if tag == 'sample' else '-' + tag}.png"))
        a1.keyboard.press("a")
        a1.wait_for_function(SAVED, arg=item_id + ':accept')

        # annotator 2 gets the same dialogue, blind to annotator 1; revises a checklist question
        a2 = login("ann2", "/annotate", "#rounds .round.scored")
        assert a2.locator("#meta .item-id").inner_text() == item_id
        assert "ann1" not in a2.locator("body").inner_text()
        for key in "123":  # the three criteria: met
            a2.keyboard.press(key)
        a2.keyboard.press("r")
        q = a2.locator("#rounds .round.scored .q-edit").first
        revised = q.input_value() + " (checked against the video)"
        q.fill(revised)
        a2.fill("#comment", "question made precise")
        a2.keyboard.press("Control+Enter")
        a2.wait_for_function(SAVED, arg=item_id + ':revise')

        # the senior sees both side by side with the diff and takes the revision
        lead = login("lead", "/senior", "#diff .diff-row")
        assert lead.locator("#case-head .item-id").inner_text() == item_id
        assert lead.locator(".review-card").count() == 2
        assert "(checked against the video)" in lead.locator("#diff ins").first.inner_text()
        lead.wait_for_function("() => document.getElementById('player').readyState >= 2")
        lead.screenshot(path=str(shots / f"review-senior{'' if tag == 'sample' else '-' + tag}.png"))
        lead.click("#take-b")
        lead.wait_for_function(SAVED, arg=item_id + ':revise')

        lead.goto(f"{url}/progress")
        lead.wait_for_selector("#tasks tr.total")
        assert "1 accepted" in lead.locator("#summary").inner_text()
        if tag == "sample":
            lead.screenshot(path=str(shots / "review-progress.png"), full_page=True)
    assert problems == []
    return item_id, revised


def _keep_screenshots(shots: Path) -> None:
    dest = os.environ.get("MTVBENCH_SCREENSHOTS")
    if dest:
        Path(dest).mkdir(parents=True, exist_ok=True)
        for png in shots.glob("*.png"):
            shutil.copy(png, Path(dest) / png.name)


def test_review_flow_on_the_sample(chromium_browser: Any, sample: Path, tmp_path: Path) -> None:
    _inject_markup(sample)
    shots = tmp_path / "screenshots"
    item_id, revised = run_flow(chromium_browser, sample, shots, "sample")
    for name in ("review-index.png", "review-annotate.png", "review-senior.png", "review-progress.png"):
        assert (shots / name).read_bytes()[:4] == b"\x89PNG"
    _keep_screenshots(shots)
    out = tmp_path / "reviewed"
    r = CliRunner().invoke(app, ["review", "export", str(sample), "--out", str(out), "--accepted-only"])
    assert r.exit_code == 3, r.output  # the other 12 dialogues are not reviewed
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    (d,) = bench.dialogues
    assert d.id == item_id and any(c.question == revised for r_ in d.rounds for c in (r_.checklist or []))


def test_review_flow_on_a_build_workspace(chromium_browser: Any, built_ws: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(built_ws, ws)
    shots = tmp_path / "screenshots"
    item_id, revised = run_flow(chromium_browser, ws, shots, "workspace")
    _keep_screenshots(shots)
    out = tmp_path / "reviewed"
    r = CliRunner().invoke(app, ["review", "export", str(ws), "--out", str(out), "--accepted-only"])
    assert r.exit_code == 3, r.output
    bench, problems = load_official(out)
    assert bench is not None, [p.render() for p in problems]
    audit = json.loads((out / "review.json").read_text())
    (changed,) = [i for i in audit["items"] if i["changes"]]
    assert changed["id"] == item_id and changed["changes"][0]["after"] == revised
    d = bench.dialogue(changed["dialogue_id"])
    assert any(c.question == revised for r_ in d.rounds for c in (r_.checklist or []))
