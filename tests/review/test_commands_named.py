"""Every command a message of the review names exists: each `mtvbench …` command quoted in a message (the
review package, its command line, the build review commands, the pages) or in the docs' review guide
(docs/guides/review.md) runs with --help, and no message names a command without its `mtvbench` prefix
(as `review adjudicate` once did)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from mtvbench.cli import app
from tests.support.source import parsed

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mtvbench"
PYTHON = [*sorted((SRC / "review").glob("*.py")), SRC / "cli" / "review.py", SRC / "cli" / "construct.py",
          SRC / "construct" / "review_queue.py", SRC / "construct" / "review_source.py"]
PAGES = [*sorted((SRC / "review" / "static").glob("*.js")), *sorted((SRC / "review" / "static").glob("*.html")),
         SRC / "review" / "guidelines.md"]
_QUOTED = re.compile(r"`([^`\n]+)`")
_WORD = re.compile(r"^[a-z][a-z-]*$")


def _messages(path: Path) -> list[str]:
    """The string literals of a module that are not docstrings (f-strings with their holes as ``X``)."""
    tree = parsed(path)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "X" for v in n.values))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            out.append(n.value)
    return out


def _readme_section() -> str:
    """The docs' review guide (moved there from the README's "Human verification" section)."""
    return (ROOT / "docs" / "guides" / "review.md").read_text(encoding="utf-8")


def _named() -> dict[str, str]:
    """command words -> where it is named."""
    texts = [(str(p.relative_to(ROOT)), m) for p in PYTHON for m in _messages(p)]
    texts += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in PAGES]
    readme = _readme_section()
    texts += [("docs/guides/review.md", readme)] + [("docs/guides/review.md", f"`{line.strip()}`")
                                                  for line in readme.splitlines()
                                          if line.strip().startswith("mtvbench ")]
    found: dict[str, str] = {}
    for where, text in texts:
        for span in _QUOTED.findall(text):
            words = span.split()
            if words[0] != "mtvbench":
                continue
            cmd = ["mtvbench"]
            for w in words[1:]:
                if not _WORD.match(w):
                    break
                cmd.append(w)
            found.setdefault(" ".join(cmd), where)
    return found


def _top_level() -> set[str]:
    commands = getattr(typer.main.get_command(app), "commands", {})
    assert "review" in commands and "build" in commands
    return set(commands)


def test_every_command_a_message_names_exists() -> None:
    named = _named()
    assert {"mtvbench review serve", "mtvbench build review adjudicate", "mtvbench review add-user"} <= set(named)
    runner = CliRunner()
    for cmd, where in sorted(named.items()):
        r = runner.invoke(app, cmd.split()[1:] + ["--help"])
        assert r.exit_code == 0, f"{where} names `{cmd}`, which does not exist:\n{r.output}"


def test_no_message_names_a_command_without_mtvbench() -> None:
    top = _top_level()
    bare = [(str(p.relative_to(ROOT)), span) for p in PYTHON for m in _messages(p) for span in _QUOTED.findall(m)
            if span.split()[0] in top]
    bare += [(str(p.relative_to(ROOT)), span) for p in PAGES for span in _QUOTED.findall(p.read_text(encoding="utf-8"))
             if span.split()[0] in top]
    assert bare == []
