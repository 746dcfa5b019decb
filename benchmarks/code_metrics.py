"""Structure figures of the source tree, before/after a refactor (issue 17's closing note).

    python benchmarks/code_metrics.py                 # src/mtvbench of this checkout
    python benchmarks/code_metrics.py --src OTHER/src/mtvbench --json out.json

Printed: lines in src/ (all, code, docstring and comment lines), modules, functions over 60 lines, file-level
import cycles (every import counted, ``if TYPE_CHECKING:`` and function-local ones too, ``from PKG import NAME``
counting as the module ``PKG.NAME`` when there is one), pairs of places sharing six or more lines of the same shape,
places that spell the released layout's paths (a string constant, not a docstring, holding ``mtqa/`` or ``_CheckList``
or a path joined with ``/ "mtqa"`` or ``/ "checklist"``) and places that open
SQLite (a call of ``sqlite3.connect``); the arrows between packages (a package is a folder or a top-level module
of ``mtvbench``; an arrow when any module of one imports any module of the other) and how many of them survive a
transitive reduction (an arrow that another path already implies is dropped); the hidden options and commands of
the checkout's CLI; the test files and fixture bytes of the checkout's ``tests/``.

Same shape: each line is reduced to its tokens with every name (keywords kept), string and number replaced
by one placeholder, comments and blank lines dropped; a window of 6 such lines that occurs at two places (in
one file or two) is a shared window; overlapping shared windows of the same two places count as one pair.
Windows made only of closing brackets, ``pass``/``return``/decorator lines or imports are left out.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import keyword
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 6

sys.path.insert(0, str(ROOT / "tests"))
# the import graph as the test counts it (one Tarjan, one reading of imports): the figure is what the test checks
from test_import_graph import cycles, source_imports  # noqa: E402


def shape_lines(text: str) -> list[tuple[int, str]]:
    """(line number, normalised line) of every code line."""
    out: dict[int, list[str]] = defaultdict(list)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENCODING, tokenize.ENDMARKER):
            continue
        if tok.type == tokenize.NAME:
            val = tok.string if keyword.iskeyword(tok.string) else "N"
        elif tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_START", -1):
            val = "S"
        elif tok.type == tokenize.NUMBER:
            val = "0"
        else:
            val = tok.string
        out[tok.start[0]].append(val)
    return [(n, " ".join(v)) for n, v in sorted(out.items())]


_THIN = {")", "]", "}", "pass", "return", "N", "else :", "try :", ") :", "] )", ") )"}


def _thin(window: list[str]) -> bool:
    return all(line in _THIN or line.startswith(("import ", "from ", "@")) or len(line) <= 3 for line in window)


def duplicate_pairs(files: dict[str, str]) -> int:
    where: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for name, text in files.items():
        lines = shape_lines(text)
        for i in range(len(lines) - WINDOW + 1):
            window = [s for _, s in lines[i:i + WINDOW]]
            if not _thin(window):
                where["\n".join(window)].append((name, i))
    pairs: set[tuple[str, int, str, int]] = set()
    for places in where.values():
        if len(places) < 2 or len(places) > 8:  # a shape found in many places is a pattern, not a copy
            continue
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = sorted((places[a], places[b]))
                if fa == fb and abs(ia - ib) < WINDOW:
                    continue
                pairs.add((fa, ia, fb, ib))
    # overlapping windows of the same two places (consecutive starts, same offset) are one pair
    runs = 0
    for fa, ia, fb, ib in pairs:
        if (fa, ia - 1, fb, ib - 1) not in pairs:
            runs += 1
    return runs


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: a string that spells a path of the released layout (docstrings are not counted)
LAYOUT = re.compile(r"mtqa/|_CheckList")


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of ``tree`` that are not docstrings."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def docstring_lines(tree: ast.AST) -> int:
    """Lines of the module's, classes' and functions' docstrings."""
    return sum(node.body[0].end_lineno - node.body[0].lineno + 1 for node in ast.walk(tree)
               if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
               and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
               and isinstance(node.body[0].value.value, str) and node.body[0].end_lineno is not None)


def comment_lines(text: str) -> int:
    """Lines holding a comment (on their own or after code)."""
    try:
        return len({tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                    if tok.type == tokenize.COMMENT})
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return 0


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_arrows(graph: dict[str, set[str]]) -> tuple[int, int]:
    """Arrows between packages, and how many survive a transitive reduction."""
    arrows: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            a, b = package_of(module), package_of(target)
            if a != b and a != "mtvbench" and b != "mtvbench":  # the facade re-exports, it is no level
                arrows[a].add(b)

    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in arrows.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    total = sum(len(b) for b in arrows.values())
    kept = sum(1 for a, targets in arrows.items() for b in targets if b not in reachable(a, (a, b)))
    return total, kept


def checkout_figures(src: Path) -> dict[str, object]:
    """Hidden CLI options and commands (the checkout's own CLI, in a child process) and its tests' size."""
    import subprocess

    probe = (
        "import click, typer\n"
        "from mtvbench.cli import app\n"
        "cmd = typer.main.get_command(app)\n"
        "opts = cmds = 0\n"
        "def walk(c):\n"
        "    global opts, cmds\n"
        "    opts += sum(1 for p in c.params if getattr(p, 'hidden', False))\n"
        "    for sub in getattr(c, 'commands', {}).values():\n"
        "        cmds += bool(sub.hidden)\n"
        "        walk(sub)\n"
        "walk(cmd)\n"
        "print(opts, cmds)\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(src.parent)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
    hidden = [int(x) for x in done.stdout.split()] if done.returncode == 0 else [-1, -1]
    tests = src.parents[1] / "tests"
    test_files = sorted(tests.rglob("test_*.py")) if tests.is_dir() else []
    fixtures = tests / "fixtures"
    fixture_files = [p for p in fixtures.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    fixture_bytes = sum(p.stat().st_size for p in fixture_files)
    return {"hidden_options": hidden[0], "hidden_commands": hidden[1], "test_files": len(test_files),
            "fixture_bytes": fixture_bytes}


def metrics(src: Path) -> dict[str, object]:
    paths = sorted(p for p in src.rglob("*.py"))
    texts = {str(p.relative_to(src)): p.read_text(encoding="utf-8") for p in paths}
    trees = {name: ast.parse(text) for name, text in texts.items()}
    long_functions = sorted(
        f"{name}:{node.name} ({node.end_lineno - node.lineno + 1})" for name, tree in trees.items()
        for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > 60)
    modules = {module_name(src, p): p for p in paths}
    graph = {m: {t for module, names, _line in source_imports(texts[str(p.relative_to(src))], m,
                                                              p.name == "__init__.py")
                 for t in {module} | {f"{module}.{name}" for name in names} if t in modules and t != m}
             for m, p in modules.items()}
    spelled = [(name, node.lineno) for name, tree in trees.items() for node in _strings(tree)
               if LAYOUT.search(node.value)]
    spelled += [(name, node.lineno) for name, tree in trees.items() for node in ast.walk(tree)
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant) and node.right.value in ("mtqa", "checklist")]
    layout = sorted({name for name, _ in spelled})
    layout_places = len(spelled)
    sqlite = sorted(f"{name}:{node.lineno}" for name, tree in trees.items() for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and ast.unparse(node.func) == "sqlite3.connect")
    arrows, kept = package_arrows(graph)
    return {
        "lines": sum(t.count("\n") for t in texts.values()),
        "code_lines": sum(len(shape_lines(t)) for t in texts.values()),
        "docstring_lines": sum(docstring_lines(t) for t in trees.values()),
        "comment_lines": sum(comment_lines(t) for t in texts.values()),
        "package_arrows": arrows,
        "package_arrows_reduced": kept,
        "modules": len(paths),
        "functions_over_60_lines": len(long_functions),
        "long_functions": long_functions,
        "file_level_cycles": cycles(graph),
        "duplicate_pairs": duplicate_pairs(texts),
        "layout_spellings": layout_places,
        "layout_modules": layout,
        "sqlite_connects": sqlite,
        **checkout_figures(src),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, default=ROOT / "src" / "mtvbench")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    m = metrics(args.src)
    for key in ("lines", "code_lines", "docstring_lines", "comment_lines", "modules", "package_arrows",
                "package_arrows_reduced", "functions_over_60_lines", "duplicate_pairs", "layout_spellings",
                "hidden_options", "hidden_commands", "test_files", "fixture_bytes"):
        print(f"{key:<26} {m[key]}")
    print(f"{'file_level_cycles':<26} {len(m['file_level_cycles'])} {m['file_level_cycles']}")
    print(f"{'layout_modules':<26} {len(m['layout_modules'])} {m['layout_modules']}")
    print(f"{'sqlite_connects':<26} {len(m['sqlite_connects'])} {m['sqlite_connects']}")
    print(f"{'long_functions':<26} {m['long_functions']}")
    if args.json:
        args.json.write_text(json.dumps(m, indent=2))


if __name__ == "__main__":
    main()
