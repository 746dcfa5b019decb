"""Every page type of the review app with content on it, for the layout and accessibility checks
(tests/review/test_browser_pages.py) and for the figures of issue 28: ``python -m tests.review.pages`` prints each
page type's width and its axe-core counts at each size, ``python -m tests.review.pages keyboard`` the seconds of a
keyboard-only annotation.

axe-core comes from npm, never fetched by a test: ``npm install --no-save --prefix .mtvbench-cache/npm
axe-core`` (what .ci/run does), or ``MTVBENCH_AXE=/path/to/axe.min.js``."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from tests.review.conftest import item_url, running_server, verdict, who

REPO = Path(__file__).resolve().parents[2]
AXE_HINT = ("axe-core is not installed: `npm install --no-save --prefix .mtvbench-cache/npm axe-core` "
            "(or set MTVBENCH_AXE to an axe.min.js)")
#: the sizes every page type is checked at: a phone, the two common laptop screens
SIZES = {"phone": (390, 844), "laptop": (1280, 720), "laptop-1366": (1366, 768)}


def axe_path() -> Path | None:
    """axe.min.js from npm (``$MTVBENCH_AXE``, the repository's .mtvbench-cache/npm or node_modules), or None."""
    for c in (os.environ.get("MTVBENCH_AXE"), REPO / ".mtvbench-cache/npm/node_modules/axe-core/axe.min.js",
              REPO / "node_modules/axe-core/axe.min.js"):
        if c and Path(c).is_file():
            return Path(c)
    return None


class PageType(NamedTuple):
    """One page type: who opens which path on which server, and what shows once it is drawn."""

    name: str
    server: str  # "review" (a dataset) | "rate" (a run directory)
    user: str | None
    job: str | None
    path: str
    ready: str


PAGE_TYPES = [
    PageType("sign-in", "review", None, None, "/", "#signin-form"),
    PageType("annotator home", "review", "ann1", "annotator", "/", "#items tr"),
    PageType("senior home", "review", "lead", "senior", "/", "#items tr"),
    PageType("annotate", "review", "ann3", "annotator", "/annotate", "#rounds .round.scored"),
    PageType("senior", "review", "lead", "senior", "/senior", "#diff .diff-row"),
    PageType("progress", "review", "lead", "senior", "/progress", "#tasks tr.total"),
    PageType("own progress", "review", "ann1", "annotator", "/progress", "#own tr"),
    PageType("rater home", "rate", "r1", "rater", "/", "#items tr"),
    PageType("rate", "rate", "r1", "rater", "/rate", "#rounds li.question"),
    PageType("raters' progress", "rate", "lead", "senior", "/progress", "#raters tr"),
]


def _prepare_review(url: str) -> str:
    """Two annotators disagree on the first dialogue (the senior page has a case with edits); ann1 decided it."""
    with httpx.Client(base_url=url, timeout=30) as c:
        iid = c.get("/api/next", headers=who("ann1")).json()["id"]
        it = c.get(item_url(iid), headers=who("ann1")).json()
        c.post(item_url(iid, "/review"), headers=who("ann1"),
               json=verdict("ann1", "accept", content_hash=it["content_hash"])).raise_for_status()
        c.get(item_url(iid, "?claim=1"), headers=who("ann2")).raise_for_status()
        edit = {"round": 1, "field": "user", "value": it["rounds"][0]["user"] + " (checked)"}
        c.post(item_url(iid, "/review"), headers=who("ann2"),
               json=verdict("ann2", "revise", edits=[edit], comment="clearer", content_hash=it["content_hash"])
               ).raise_for_status()
    return iid


def _prepare_rate(url: str) -> None:
    """r1 rates the first dialogue of the sample (the raters' progress has a row with work in it)."""
    with httpx.Client(base_url=url, timeout=30) as c:
        iid = c.get("/api/next", headers=who("r1", "rater")).json()["id"]
        it = c.get(item_url(iid), headers=who("r1", "rater")).json()
        marks = {f"{r['index']}.{q['key']}": "Yes" for r in it["rounds"] for q in r["questions"]}
        c.post(item_url(iid, "/rating"), headers=who("r1", "rater"),
               json={"rater": "r1", "marks": marks, "content_hash": it["content_hash"]}).raise_for_status()


@contextmanager
def servers(sample: Path, run: Path) -> Iterator[dict[str, str]]:
    """The two servers every page type is on ({"review": url, "rate": url}), with content prepared."""
    with ExitStack() as stack:
        review, _ = stack.enter_context(running_server(sample))
        rate, _ = stack.enter_context(running_server(run, "--sample-per-task", "1", "--seed", "1"))
        _prepare_review(review)
        _prepare_rate(rate)
        yield {"review": review, "rate": rate}


def open_page(browser: Any, urls: dict[str, str], pt: PageType, size: tuple[int, int], problems: list[str]) -> Any:
    """``pt`` in a browser context of its own at ``size`` (CSP bypassed so that axe-core can be injected)."""
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, bypass_csp=True)
    if pt.user is not None:
        ctx.add_init_script(f"localStorage.setItem('mtvbench-review-user', {pt.user!r});"
                            f"localStorage.setItem('mtvbench-review-role', {pt.job!r});")
    page = ctx.new_page()
    page.on("pageerror", lambda e: problems.append(f"{pt.name} pageerror: {e}"))
    page.goto(urls[pt.server] + pt.path)
    page.wait_for_selector(pt.ready)
    page.wait_for_timeout(150)  # fonts and late layout
    return page


def page_width(page: Any) -> dict[str, int]:
    """The page's scroll width against the viewport's."""
    return page.evaluate("() => ({scroll: document.documentElement.scrollWidth, viewport: window.innerWidth})")


def axe_violations(page: Any, axe: Path) -> list[dict[str, Any]]:
    """axe-core's violations on the page: [{id, impact, nodes, targets}]."""
    page.add_script_tag(path=str(axe))
    return page.evaluate("""async () => {
      const r = await axe.run(document, {resultTypes: ["violations"]});
      return r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
        targets: v.nodes.slice(0, 4).map(n => n.target.join(" "))}));
    }""")


def serious(violations: list[dict[str, Any]]) -> int:
    """Nodes in serious or critical violations."""
    return sum(v["nodes"] for v in violations if v["impact"] in ("serious", "critical"))


def sample_and_run(root: Path) -> tuple[Path, Path]:
    """A fresh copy of the bundled sample and a run directory over it (the rater pages')."""
    from mtvbench.data.sample import materialize
    from tests.review.test_rating import varied
    from tests.support.runs import make_store_run

    master = materialize(root / "master")
    sample = root / "sample"
    shutil.copytree(master, sample)
    return sample, make_store_run(master, root / "run", answer=varied, bootstrap=0)


def figures(each: Callable[[PageType, str, Any], None] | None = None) -> dict[str, Any]:
    """Width at each size and serious/critical axe nodes per page type (what ``python -m`` prints)."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import FLAGS, chromium

    axe = axe_path()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sample, run = sample_and_run(Path(tmp))
        with servers(sample, run) as urls, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
            problems: list[str] = []
            for pt in PAGE_TYPES:
                for size_name, size in SIZES.items():
                    page = open_page(browser, urls, pt, size, problems)
                    row: dict[str, Any] = page_width(page)
                    if axe is not None:
                        v = axe_violations(page, axe)
                        impacts = ("critical", "serious", "moderate", "minor")
                        row |= {"serious": serious(v), "violations": v,
                                "by_impact": {i: sum(x["nodes"] for x in v if x["impact"] == i) for i in impacts}}
                    out.setdefault(pt.name, {})[size_name] = row
                    if each:
                        each(pt, size_name, page)
                    page.context.close()
            browser.close()
    return out


def keyboard_annotations() -> dict[str, dict[str, float]]:
    """Seconds and key presses of one keyboard-only annotation per decision on the annotate page (1280x720), from
    the first key to the server's "Saved": accept (``a``), revise (``r``, type, Esc, ``1 2 3``, Ctrl+Enter) and
    reject (``x``, a reason by arrow key, Esc, ``1 2 3``, Ctrl+Enter). The browser presses the keys at once: the
    seconds are the app's own time, not a person's."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import FLAGS, chromium

    plans: dict[str, list[str]] = {
        "accept": ["a"],
        "revise": ["r", *"Exactly when?", "Escape", "1", "2", "3", "Control+Enter"],
        "reject": ["x", "ArrowDown", "Escape", "1", "2", "3", "Control+Enter"],
    }
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sample, run = sample_and_run(Path(tmp))
        with running_server(sample) as (url, _), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
            pt = PageType("annotate", "review", "kb", "annotator", "/annotate", "#rounds .round.scored")
            page = open_page(browser, {"review": url}, pt, SIZES["laptop"], [])
            for decision, keys in plans.items():
                page.wait_for_function("() => document.activeElement === document.body || "
                                       "document.activeElement.tagName === 'MAIN'")
                iid = page.locator("#meta .item-id").inner_text()
                t = time.perf_counter()
                for k in keys:
                    page.keyboard.press(k)
                page.wait_for_function("v => document.body.dataset.lastSaved === v", arg=f"{iid}:{decision}")
                out[decision] = {"seconds": round(time.perf_counter() - t, 3), "keys": len(keys)}
                page.wait_for_function("id => document.querySelector('#meta .item-id').textContent !== id", arg=iid)
            browser.close()
    return out


if __name__ == "__main__":
    t0 = time.monotonic()
    if "keyboard" in sys.argv:
        for decision, row in keyboard_annotations().items():
            print(f"keyboard-only {decision}: {row['seconds']:.2f} s, {row['keys']} key presses")
        sys.exit(0)
    res = figures()
    for name, sizes in res.items():
        cells = []
        for size_name, row in sizes.items():
            cells.append(f"{size_name}: width {row['scroll']}/{row['viewport']}"
                         + (f", axe nodes {row['by_impact']}" if "serious" in row else ""))
        print(f"{name:18s} " + "; ".join(cells))
    if "-v" in sys.argv:
        print(json.dumps(res, indent=1))
    print(f"({time.monotonic() - t0:.0f} s)")
