from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from mtvbench.analysis.report import build_report
from mtvbench.data.official import load_benchmark
from tests.support.browser import chromium
from tests.support.datasets import make_dataset
from tests.support.explorer import explorer_data
from tests.support.runs import make_store_run

HOSTILE_REPLY = "I <b>do</b> not know <!--<script> </script>.\u2028[/x] $\\foo$ =cmd|' /C calc'!A0"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    data = make_dataset(tmp / "data")
    a = make_store_run(data, tmp / "oracle", model="oracle", judge_runs=3,
                       flip=lambda tid, r, key: r == 1 and key == "A1")
    # "half" answers round 3 right and refuses round 5: dialogue scores differ from the oracle's;
    # the refusal is hostile to the page (an unclosed comment + script start, a script end, U+2028)
    b = make_store_run(data, tmp / "half", model="half",
                       answer=lambda did, k, golden: golden if k == 3 else HOSTILE_REPLY)
    meta = tmp / "meta.json"
    meta.write_text(json.dumps({"vid0": {"category": "Sports", "events": {"0": {"scenes": 3}, "2": {"scenes": 12}}},
                                "vid1": {"category": "Film"}}))
    res = build_report([a, b], tmp / "rep", metadata_file=meta, scene_cache_dir=tmp / "scenes", bootstrap=100)
    return tmp, res


def test_report_files_and_tables(reported):
    tmp, res = reported
    out = tmp / "rep"
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.tex", "breakdowns.md", "breakdowns.csv",
                 "report.html", "metadata.json", "plots/leaderboard.png", "plots/turns.png", "plots/scenes.png",
                 "plots/length.png", "plots/category.png"):
        assert (out / name).exists(), name
    assert (out / "plots/scenes.png").read_bytes()[:4] == b"\x89PNG"
    md = (out / "leaderboard.md").read_text()
    assert md.index("| oracle |") < md.index("| half |") and "**" in md and "<u>" in md
    assert "offline lexical matcher" in md
    rows = list(csv.DictReader((out / "breakdowns.csv").open()))
    scenes = {(r["run"], r["bin"], r["task"]): r for r in rows if r["breakdown"] == "scenes"}
    assert scenes[("oracle", "1-5", "all")]["n"] == "1" and scenes[("oracle", "11-15", "OR")]["n"] == "0"
    assert scenes[("oracle", "11-15", "CS")]["n"] == "1"  # summary dialogue is vid0 event 2
    cats = {(r["run"], r["bin"]): r for r in rows if r["breakdown"] == "category" and r["task"] == "all"}
    assert cats[("half", "Sports")]["n"] == "3" and cats[("half", "Film")]["n"] == "3"
    length = {r["bin"]: r for r in rows if r["breakdown"] == "length" and r["task"] == "all" and r["run"] == "half"}
    assert length["(0,5]"]["n"] == "6"  # the test videos last 3 s
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["object_reference/vid0/0"]["scenes"] == 3 and meta["object_reference/vid0/0"]["duration_s"] == 3.0


def test_html_is_self_contained(reported):
    tmp, _ = reported
    html = (tmp / "rep" / "report.html").read_text()
    # nothing fetched: every src/href is a data URI or an in-page anchor
    for attr in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert attr.startswith(("data:", "#")), attr
    assert "http://" not in html.split('<script id="explorer-data"')[0]
    assert html.count("data:image/png;base64,") >= 5
    # the answer's markup stays text: the payload cannot close its <script>
    payload = html.split('<script id="explorer-data" type="application/json">')[1].split("</script>")[0]
    assert not set(payload) & set("<>&\u2028")
    data = json.loads(payload)
    assert len(data["dialogues"]) == 6 and [r["file"] for r in data["runs"]] == ["run-0", "run-1"]
    # what an opened dialogue shows lies beside the page, escaped the same way
    files = {name: explorer_data(tmp / "rep", name) for name in ("dialogues", "run-0", "run-1", "thumbs")}
    assert any(t["answer"] == HOSTILE_REPLY for t in files["run-1"]["memory_recall/vid1/1"].values())
    assert len(files["thumbs"]["vid0"]) == 4 and len(files["dialogues"]) == 6


def test_report_in_headless_chromium(reported):
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright for Python not installed (pip install playwright)")
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium)")
    tmp, _ = reported
    page_url = (tmp / "rep" / "report.html").resolve().as_uri()
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
            page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:"))
                    else problems.append(f"request: {r.url}"))
            page.goto(page_url)
            page.wait_for_selector("details.dlg")
            count = page.locator("#f-count")
            assert count.get_attribute("data-shown") == "6"
            assert page.locator("img.plot").count() >= 5
            # task filter
            page.select_option("#f-task", "memory_recall")
            assert count.get_attribute("data-shown") == "1"
            assert page.locator("details.dlg").count() == 1
            page.select_option("#f-task", "")
            # score filter on the "half" run: every dialogue scores 60 there; on the oracle run > 60
            page.select_option("#f-run", "1")
            page.fill("#f-min", "50")
            page.fill("#f-max", "70")
            page.locator("#f-max").dispatch_event("change")
            assert count.get_attribute("data-shown") == "6"
            page.select_option("#f-run", "0")
            assert count.get_attribute("data-shown") == "0"
            page.fill("#f-min", "")
            page.fill("#f-max", "")
            page.select_option("#f-run", "1")
            page.fill("#f-text", "summary clip")
            assert count.get_attribute("data-shown") == "1"
            # open a dialogue: thumbnails, golden history, answer, checklist with judge verdicts
            page.locator("details.dlg summary").first.click()
            page.wait_for_selector("table.ck")
            assert page.locator(".thumbs img").count() == 4
            body = page.locator("details.dlg").first.inner_text()
            assert "Golden:" in body and "Model:" in body and "Judge run 0 (ok)" in body
            assert "I <b>do</b> not know <!--<script> </script>." in body  # shown as text, not markup
            assert "[/x] $\\foo$ =cmd|' /C calc'!A0" in body
            # MTVBENCH_REPORT_SCREENSHOT=path keeps the screenshot somewhere to look at
            shot = Path(os.environ.get("MTVBENCH_REPORT_SCREENSHOT") or tmp / "report.png")
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
    assert problems == []


def test_explorer_loads_a_runs_dialogues_when_opened(reported, tmp_path):
    """The page holds the explorer's index only; a run's answers and verdicts (and the dialogues' rounds) come
    from the files beside it the first time a dialogue is opened. Without the folder, or with a file of another
    report in it, the opened dialogue says so instead of showing wrong or no data."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright for Python not installed (pip install playwright)")
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium)")
    tmp, res = reported
    rep = tmp / "rep"
    html = (rep / "report.html").read_text()
    goldens = [r.assistant for d in load_benchmark(tmp / "data").dialogues for r in d.rounds]
    assert HOSTILE_REPLY not in html and not any(g in html for g in goldens)  # no answer inlined in the page
    missing = tmp_path / "missing"  # the page alone, without its folder
    missing.mkdir()
    (missing / "report.html").write_text(html)
    other = tmp_path / "other"  # the folder holds another report's file for run 1
    shutil.copytree(rep, other)
    again = build_report([tmp / "oracle", tmp / "half"], tmp_path / "again", bootstrap=10, thumbs=0)
    shutil.copy(again.out / "explorer" / "run-1.js", other / "explorer" / "run-1.js")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            loaded: list[str] = []
            page.on("request", lambda r: loaded.append(r.url.rsplit("/", 2)[-2] + "/" + r.url.rsplit("/", 1)[-1])
                    if "/explorer/" in r.url else None)
            page.goto((rep / "report.html").resolve().as_uri())
            page.wait_for_selector("#f-count[data-shown='6']")
            assert loaded == []  # nothing beside the page is read before a dialogue is opened
            page.select_option("#f-run", "1")
            page.fill("#f-text", "summary clip")
            page.locator("details.dlg summary").first.click()
            page.wait_for_selector("details.dlg table.ck")
            assert sorted(loaded) == ["explorer/dialogues.js", "explorer/run-1.js", "explorer/thumbs.js"]
            body = page.locator("details.dlg").first.inner_text()
            assert "Judge run 0 (ok)" in body and "I <b>do</b> not know <!--<script> </script>." in body
            for folder, said in ((missing, "cannot be read"), (other, "belongs to another report")):
                page.goto((folder / "report.html").resolve().as_uri())
                page.wait_for_selector("#f-count[data-shown='6']")
                page.select_option("#f-run", "1")
                page.locator("details.dlg summary").first.click()
                page.wait_for_selector("details.dlg [data-failed='1']")
                text = page.locator("details.dlg").first.inner_text()
                assert said in text and "keep the folder explorer beside this page" in text
                assert page.locator("details.dlg table.ck").count() == 0
        finally:
            browser.close()
