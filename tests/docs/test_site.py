"""The docs site (mkdocs.yml, docs/): its generated reference lists every command and every ``run`` flag and
every settings key; it builds with ``--strict``; the quickstart and the CLI reference render in Chromium."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from tests.support.browser import FLAGS, chromium

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _walk(command, path: list[str]) -> Iterator[tuple[list[str], object]]:  # noqa: ANN001
    """Every command below ``command``, through the root group's own lazy listing and loader."""
    from typer._click import Context

    yield path, command
    if hasattr(command, "list_commands"):
        ctx = Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from _walk(sub, [*path, name])


def test_the_cli_reference_lists_every_command_and_every_run_flag() -> None:
    from mtvbench.cli import app

    text = _generator().cli_reference()
    commands = list(_walk(typer.main.get_command(app), ["mtvbench"]))
    assert len(commands) > 20  # the groups' subcommands were walked, not only the top level
    for path, command in commands:
        assert f"`{' '.join(path)}`" in text, path
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            section = text.split(f"`{' '.join(path)}`\n", 1)[1].split("\n#", 1)[0]
            for opt in param.opts if param.param_type_name == "option" else []:
                assert re.search(rf"\| `[^`|]*(?<![\w-]){re.escape(opt)}(?![\w-])", section), (path, opt)
    run = dict((" ".join(p), c) for p, c in commands)["mtvbench run"]
    section = text.split("`mtvbench run`", 1)[1].split("\n#", 1)[0]
    flags = [o for p in run.params if p.param_type_name == "option" for o in p.opts]
    assert len(flags) > 40
    assert all(re.search(rf"\| `[^`|]*(?<![\w-]){re.escape(f)}(?![\w-])", section) for f in flags)


def test_the_settings_reference_has_every_key_with_its_default() -> None:
    from mtvbench.config.runconfig import RunConfig

    gen = _generator()
    run = gen.run_settings()
    for name in RunConfig.model_fields:
        assert f"| `{name}` |" in run or f"| `{name}." in run, name  # a nested model: one row per key
    assert "| `frames` | `int` | `128` |" in run and "| `judge_runs` | `int` | `3` |" in run
    build = gen.build_settings()
    assert "| `concurrency` | `int` | `4` |" in build and "| `model` |" in build
    from mtvbench.scoring.aggregate import Scores

    scores = gen.scores_keys()
    assert all(f"| `{name}` |" in scores or f"| `{name}." in scores for name in Scores.model_fields)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    return out


@pytest.mark.slow
def test_the_site_builds_strictly_with_the_generated_pages(site: Path) -> None:
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "mtvbench run" in cli and "--judge-runs" in cli and "generated:" not in cli
    settings = (site / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "judge_runs" in settings and "generated:" not in settings
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "evaluate_async" in api and "register_backend" in api


@pytest.mark.slow
def test_quickstart_and_cli_reference_render_in_chromium(site: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python not installed")
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium); no browser is downloaded")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    problems: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda e: problems.append(str(e)))
            for path, heading, needle in (("quickstart/", "Quickstart", "openai:gemini-2.5-flash"),
                                          ("reference/cli/", "Commands and flags", "--judge-runs")):
                page.goto(f"{url}/{path}", wait_until="load")
                assert page.locator("h1").first.inner_text().strip().rstrip("¶") == heading
                assert needle in page.locator("article").inner_text()
                # the theme's stylesheet applied: a header bar of its own, the navigation drawn
                header = page.locator("header.md-header").bounding_box()
                assert header is not None and header["height"] > 20
                assert page.evaluate("getComputedStyle(document.querySelector('header.md-header')).position")\
                    in ("sticky", "fixed")
                shot = tmp_path / f"{heading.split()[0].lower()}.png"
                page.screenshot(path=str(shot), full_page=False)
                assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
            browser.close()
    finally:
        server.shutdown()
    assert not problems, problems


def test_the_readme_is_short_runs_the_papers_judge_and_links_into_the_site() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first_run = re.search(r"^mtvbench run (?:.*\\\n)*.*$", text, re.MULTILINE)
    assert first_run is not None
    run = first_run.group(0)
    assert "--judge openai:gemini-2.5-flash" in run and "--judge-runs 3" in run
    assert "generativelanguage.googleapis.com/v1beta/openai/" in run
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) > 10 and all((ROOT / link).is_file() for link in links), links
    assert '-m "not slow"' in text
