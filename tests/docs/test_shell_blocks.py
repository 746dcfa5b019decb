"""Every shell block of the docs site says whether a test runs it (``<!-- shell: run -->`` on the line above
the fence) or why not (``<!-- shell: not run: REASON -->``); the ones marked ``run`` need no outside server and
are run here, in the order a page gives them, in one fresh folder, against the bundled sample.
(docs/extending.md's blocks are run by tests/docs/test_extending.py; docs/authors-frames.md is a measurement's
record; docs/architecture.md has none.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: pages whose shell blocks another test owns, or that record a measurement
ELSEWHERE = {"extending.md", "authors-frames.md", "architecture.md"}
_BLOCK = re.compile(r"^(?P<indent> *)(?:<!-- shell: (?P<mark>[^\n]*?) -->\n(?P=indent))?```(?:bash|sh|shell)\n"
                    r"(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[str | None, str]]:
    """``(mark, body)`` of every shell block of ``page``; mark None where the line above names none."""
    return [(m.group("mark"), m.group("body")) for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))]


def pages() -> list[Path]:
    return [p for p in sorted(DOCS.rglob("*.md")) if p.name not in ELSEWHERE]


def commands(body: str) -> list[list[str]]:
    """The ``mtvbench`` command lines of a block (continuations joined, comments dropped), as argument lists."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "mtvbench", f"a block marked run holds a line that is not mtvbench: {line!r}"
            out.append(words[1:])
    return out


def test_every_shell_block_says_whether_it_runs() -> None:
    unmarked = [(str(p.relative_to(ROOT)), body.splitlines()[0]) for p in pages() for mark, body in blocks(p)
                if mark is None or not (mark == "run" or mark.startswith("not run: ") and len(mark) > 12)]
    assert not unmarked, f"say above each block <!-- shell: run --> or <!-- shell: not run: WHY -->: {unmarked}"
    assert sum(len(blocks(p)) for p in pages()) >= 15  # the pattern finds the blocks (indented ones too)


@pytest.mark.parametrize("page", [p for p in pages() if any(m == "run" for m, _ in blocks(p))],
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_the_runnable_blocks_run_against_the_bundled_sample(page: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ran = 0
    for mark, body in blocks(page):
        if mark != "run":
            continue
        for args in commands(body):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, f"{page.name}: mtvbench {shlex.join(args)}\n{result.output[-3000:]}"
            ran += 1
    assert ran > 0


def test_the_python_api_example_runs_on_the_demos_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "cache"))
    assert CliRunner().invoke(app, ["demo"]).exit_code == 0
    text = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    example = re.search(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert example is not None
    scope: dict = {}
    exec(compile(example.group(1), "docs/reference/api.md", "exec"), scope)  # noqa: S102
    assert type(scope["scores"]).__name__ == "Scores" and (tmp_path / "runs" / "oracle" / "scores.json").is_file()
