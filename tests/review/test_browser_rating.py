"""Raters in real Chromium (Playwright; the system Chromium, skipped without it, issue 19): two raters rate a
run directory's sample by keyboard, blind to the expected answers, the judge and each other; a reload
restores a draft, `u` takes a rating back; the senior's progress shows the raters; `mtvbench review export`
then `mtvbench agreement --level dialogue` give Table 3's layout. A screenshot of the rate page is kept
(``MTVBENCH_SCREENSHOTS=DIR`` copies it there, e.g. docs/screenshots)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.scoring.human import load_human
from tests.review.conftest import running_server
from tests.review.test_browser_flows import chromium_pages
from tests.review.test_rating import HOSTILE, varied
from tests.support.browser import launched
from tests.support.runs import make_store_run

SAVED = "v => document.body.dataset.lastSaved === v"
ITEM = "#meta .item-id"


@pytest.fixture
def run(sample_master: Path, tmp_path: Path) -> Path:
    return make_store_run(sample_master, tmp_path / "run", answer=varied, bootstrap=0)


def _answer_all(page: Any, pattern: str) -> None:
    """Answer every question of the shown dialogue by keyboard (``pattern`` cycled: y/n), the focus moving on."""
    n = page.locator("#rounds li.question").count()
    for k in range(n):
        page.keyboard.press(pattern[k % len(pattern)])
    page.wait_for_function("n => document.querySelectorAll('#rounds input[type=radio]:checked').length === n", arg=n)


def _rate_until_done(page: Any, pattern: str) -> list[str]:
    rated = []
    while page.locator("#done").is_hidden():
        iid = page.locator(ITEM).inner_text()
        _answer_all(page, pattern)
        page.keyboard.press("Control+Enter")
        page.wait_for_function(SAVED, arg=iid + ":rated")
        page.wait_for_function("id => document.getElementById('done').hidden === false || "
                               "document.querySelector('#meta .item-id').textContent !== id", arg=iid)
        rated.append(iid)
    return rated


def test_two_raters_rate_the_sample_in_the_browser_through_to_table_3(run: Path, tmp_path: Path) -> None:
    problems: list[str] = []
    shots = tmp_path / "screenshots"
    shots.mkdir()
    # a browser of its own, started after the ``run`` fixture's evaluation (asyncio) is done
    with (running_server(run, "--sample-per-task", "1", "--seed", "1") as (url, _), launched() as browser,
          chromium_pages(browser, url, problems) as open_as):
        # r1 signs in on the start page: the jobs offered are those of a run directory
        r1 = open_as("r1", "/", job=None, ready="#signin-form")
        assert r1.locator("#job option").all_inner_texts() == ["rater", "senior annotator"]
        r1.fill("#name", "r1")
        r1.select_option("#job", "rater")
        r1.click("#signin-form button")
        r1.wait_for_selector("#items tr")
        assert r1.locator("#items tr").count() == 6 and "seed 1" in r1.locator("#hello").inner_text()
        r1.click("text=Start rating")
        r1.wait_for_selector("#rounds li.question")
        first = r1.locator(ITEM).inner_text()
        assert "null" not in r1.locator("#meta").inner_text()

        # blind: no expected answer, no judge, nothing of another rater; the model's answer shown as text
        body = r1.locator("#rounds").inner_text()
        assert "Expected" not in body and "expected" not in body and "judge" not in body.lower()
        assert r1.locator("#rounds .exp").count() == 0 and r1.locator("#rounds .turn.answer").count() >= 1
        if HOSTILE in r1.locator("body").inner_text():
            assert r1.locator("#rounds img").count() == 0
        assert r1.evaluate("document.body.dataset.pwned") is None

        # two answers, a reload: the draft brings them back
        r1.keyboard.press("y")
        r1.keyboard.press("n")
        r1.wait_for_function("id => document.body.dataset.draftSaved === id", arg=first)
        r1.reload()
        r1.wait_for_selector("#rounds li.question")
        assert r1.locator(ITEM).inner_text() == first
        assert r1.locator("#rounds input[type=radio]:checked").count() == 2
        assert "draft restored" in r1.locator("#draft-state").inner_text()
        assert r1.locator("#rounds li.question.current").count() == 1  # the focus is on the third question
        r1.keyboard.press("?")
        assert r1.locator("#help").is_visible()
        r1.keyboard.press("Escape")

        # submit, then `u` takes it back with the answers kept; submit again
        for _ in range(r1.locator("#rounds li.question").count() - 2):
            r1.keyboard.press("y")
        r1.locator("#player").evaluate("v => v.pause()")
        r1.wait_for_function("() => document.getElementById('player').readyState >= 2")
        r1.screenshot(path=str(shots / "review-rate.png"))
        r1.keyboard.press("Control+Enter")
        r1.wait_for_function(SAVED, arg=first + ":rated")
        r1.keyboard.press("u")
        r1.wait_for_function(SAVED, arg=first + ":undone")
        assert r1.locator(ITEM).inner_text() == first
        n = r1.locator("#rounds li.question").count()
        assert r1.locator("#rounds input[type=radio]:checked").count() == n
        r1.keyboard.press("Control+Enter")
        r1.wait_for_function(SAVED, arg=first + ":rated")
        r1.wait_for_function("id => document.querySelector('#meta .item-id').textContent !== id", arg=first)
        rated1 = [first, *_rate_until_done(r1, "y")]

        # r2 gets the same sample in the same order and sees nothing of r1
        r2 = open_as("r2", "/rate", "rater", ready="#rounds li.question")
        assert r2.locator(ITEM).inner_text() == first
        assert "r1" not in r2.locator("body").inner_text() and r2.locator("#my-decision").count() == 0
        assert r2.locator("#rounds input[type=radio]:checked").count() == 0
        rated2 = _rate_until_done(r2, "yyn")
        assert sorted(rated1) == sorted(rated2) and len(set(rated1)) == 6

        # the lead's progress: every rater, every task, the agreement among the raters
        lead = open_as("lead", "/progress", "senior", ready="#raters tr")
        table = lead.locator("#raters").inner_text()
        assert "r1" in table and "r2" in table and "6 / 6" in table
        assert "Krippendorff's alpha among the raters" in lead.locator("#rating-agreement").inner_text()
        lead.screenshot(path=str(shots / "review-rate-progress.png"), full_page=True)
    assert problems == []
    dest = os.environ.get("MTVBENCH_SCREENSHOTS")
    if dest:
        for png in shots.glob("*.png"):
            shutil.copy(png, Path(dest) / png.name)

    out = tmp_path / "human.jsonl"
    r = CliRunner().invoke(app, ["review", "export", str(run), "--out", str(out)])
    assert r.exit_code == 0, r.output
    recs = load_human(out)
    assert {x.annotator for x in recs} == {"r1", "r2"} and {x.seed for x in recs} == {1}
    r = CliRunner().invoke(app, ["agreement", str(run), "--human", str(out), "--level", "dialogue",
                                 "--format", "plain"])
    assert r.exit_code == 0, r.output
    assert "Judge\tSpearman\t95% CI\tKendall-Tau\t95% CI\tPearson\t95% CI\tn" in r.stdout
    assert next(x for x in r.stdout.splitlines() if x.startswith("offline\t")).endswith("\t6")
    assert "Human raters: 2 (sample seed 1)" in r.stdout
