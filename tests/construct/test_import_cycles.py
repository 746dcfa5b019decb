"""No file-level import cycle in ``mtvbench.construct``: a stage module imports the stage registry and the
artifacts of the stages before it, the build settings are assembled from the registry, and nothing the
registry or the settings import leads back to a stage module.

Imports are counted as tests/test_import_graph.py counts them (every import, also inside functions; only
``if TYPE_CHECKING:`` blocks are left out: they never run); ``from PACKAGE import NAME`` counts as an
import of the module ``PACKAGE.NAME`` when there is one.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.test_import_graph import SRC, _imports


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_edges(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``package`` itself included)."""
    modules = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        if not (name == package or name.startswith(package + ".")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {module for module, _ in _imports(tree)}
        targets |= {f"{node.module}.{a.name}" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module for a in node.names}
        graph[name] |= {t for t in targets if t in modules and t != name
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_stage_modules_are_seen() -> None:
    graph = file_edges("mtvbench.construct")
    assert "mtvbench.construct.stages" in graph["mtvbench.construct.stages.caption"]
    assert "mtvbench.construct.stages.split" in graph["mtvbench.construct.stages.caption"]
    assert "mtvbench.construct.stages" in graph["mtvbench.construct.config"]


def test_no_file_level_import_cycle_in_construct() -> None:
    found = cycles(file_edges("mtvbench.construct"))
    assert not found, "modules of mtvbench.construct that import each other (directly or through others):\n" + \
        "\n".join(" <-> ".join(c) for c in found)
