"""The import arrows between mtvbench's packages follow five tiers (docs/architecture.md, "Tiers").

Every import in ``src/mtvbench`` counts: those inside functions and those under ``if TYPE_CHECKING:``
too (a type-only import is still a dependency a reader follows, and a circle through one is still a
circle). A package may import a package of a lower tier freely; inside its own tier only along the
arrows :data:`WITHIN` lists, which are acyclic. ``from mtvbench import NAME`` (the package facade) is
for users, never for mtvbench's own modules: ``__version__`` comes from ``mtvbench._version``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mtvbench"

#: bottom to top; a package imports any package of a lower tier
TIERS: dict[str, set[str]] = {
    "foundation": {"errors", "_version", "util", "ledger", "registry"},
    "domain": {"data", "media", "records", "prompts", "protocol"},
    "engines": {"models", "config", "extras", "judge", "checklist_gen", "dispatch", "scoring"},
    "workflows": {"run", "construct", "review", "analysis", "render"},
    "surface": {"cli", "__main__"},
}
TIER = {pkg: i for i, members in enumerate(TIERS.values()) for pkg in members}

#: the imports allowed between two packages of one tier (importing package -> imported package)
WITHIN: dict[str, set[tuple[str, str]]] = {
    "foundation": {("util", "errors"), ("registry", "errors"),
                   ("ledger", "errors"), ("ledger", "util"), ("ledger", "_version")},
    "domain": {("data", "media"), ("records", "media"), ("prompts", "data"),
               ("protocol", "data"), ("protocol", "prompts"), ("protocol", "records")},
    "engines": {("config", "models"), ("extras", "models"), ("judge", "models"), ("checklist_gen", "models"),
                ("dispatch", "models"), ("dispatch", "config")},
    "workflows": {("run", "render"), ("analysis", "run"), ("analysis", "render"),
                  ("review", "run"), ("construct", "review")},
    "surface": {("__main__", "cli")},
}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, a relative one resolved against ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def source_imports(text: str, module: str, is_package: bool = False) -> list[tuple[str, list[str], int]]:
    """(module, names imported from it, line) of every import in the source ``text`` of ``module``: at
    the top, inside functions and under ``if TYPE_CHECKING:`` alike, a relative one made absolute."""
    out: list[tuple[str, list[str], int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((_absolute(node, module, is_package), [a.name for a in node.names], node.lineno))
    return out


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """:func:`source_imports` of the module at ``path``."""
    return source_imports(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def test_every_kind_of_import_is_seen() -> None:
    text = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import mtvbench.util.files\n"
        "from mtvbench import __version__\n"
        "if TYPE_CHECKING:\n"
        "    from mtvbench.run.store import RunStore\n"
        "def f():\n"
        "    from mtvbench.analysis import report\n"
        "    try:\n"
        "        import mtvbench.cli\n"
        "    except ImportError:\n"
        "        pass\n"
        "from .sibling import x\n"
        "from .. import errors\n"
    )
    seen = [(m, n) for m, n, _line in source_imports(text, "mtvbench.media.cache")]
    for expected in [("mtvbench.util.files", []), ("mtvbench", ["__version__"]), ("mtvbench.run.store", ["RunStore"]),
                     ("mtvbench.analysis", ["report"]), ("mtvbench.cli", []), ("mtvbench.media.sibling", ["x"]),
                     ("mtvbench", ["errors"])]:
        assert expected in seen, expected
    in_package = [m for m, _n, _line in source_imports(text, "mtvbench.media", is_package=True)]
    assert "mtvbench.media.sibling" in in_package and "mtvbench" in in_package


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where (``file:line``)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        src = _package(path)
        if src == "__init__":
            continue
        for module, _names, line in imports(path):
            parts = module.split(".")
            if parts[0] == "mtvbench" and len(parts) > 1 and parts[1] != src:
                edges[(src, parts[1])].append(f"{path.relative_to(SRC.parent)}:{line}")
    return edges


def test_every_package_has_a_tier() -> None:
    packages = {_package(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert packages == set(TIER), f"add these to TIERS (and docs/architecture.md): {packages ^ set(TIER)}"
    assert sum(len(m) for m in TIERS.values()) == len(TIER), "a package is in two tiers"


def test_imports_point_down_the_tiers_or_along_the_arrows() -> None:
    wrong = []
    for (a, b), where in sorted(package_edges().items()):
        tier = list(TIERS)[TIER[a]]
        if TIER[b] > TIER[a] or (TIER[b] == TIER[a] and (a, b) not in WITHIN[tier]):
            wrong.append(f"{a} -> {b} ({', '.join(where[:3])})")
    assert not wrong, "imports against the tiers:\n" + "\n".join(wrong)


def test_the_arrows_inside_each_tier_are_acyclic_and_used() -> None:
    edges = package_edges()
    for tier, arrows in WITHIN.items():
        assert all(TIER[a] == TIER[b] == list(TIERS).index(tier) for a, b in arrows), tier
        assert not cycles({a: {b for x, b in arrows if x == a} for a, _ in arrows}), f"a circle in {tier}"
        unused = sorted(arrow for arrow in arrows if arrow not in edges)
        assert not unused, f"listed in WITHIN[{tier!r}] but no import uses it (remove it): {unused}"


def test_no_module_imports_the_package_facade() -> None:
    """``from mtvbench import X`` / ``import mtvbench`` inside mtvbench runs the whole facade and hides the
    real dependency (a one-part name, which the package arrows cannot see)."""
    found = [f"{path.relative_to(SRC.parent)}:{line}" for path in sorted(SRC.rglob("*.py"))
             if path != SRC / "__init__.py"
             for module, _names, line in imports(path) if module == "mtvbench"]
    assert not found, "import from mtvbench._version (or the module that defines the name) instead: " + \
        ", ".join(found)


# ---------------------------------------------------------------- file level


def import_targets(path: Path) -> set[str]:
    """What a module imports (every import, as above): each module named, and for
    ``from PACKAGE import NAME`` also ``PACKAGE.NAME`` (the module of that name, when there is one)."""
    out: set[str] = set()
    for module, names, _line in imports(path):
        out |= {module} | {f"{module}.{name}" for name in names}
    return out


def file_edges(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``package`` itself included)."""
    modules = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        if not (name == package or name.startswith(package + ".")):
            continue
        graph[name] |= {t for t in import_targets(path) if t in modules and t != name
                        and (t == package or t.startswith(package + "."))}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_file_level_import_cycle() -> None:
    """No module imports itself through others (every import counted, ``TYPE_CHECKING`` ones too;
    ``from PACKAGE import NAME`` counts as importing the module ``PACKAGE.NAME`` when there is one)."""
    found = cycles(file_edges("mtvbench"))
    assert not found, "modules that import each other (directly or through others): " + "; ".join(
        " <-> ".join(c) for c in found)
