"""The import arrows between mtvbench's packages point one way (docs/architecture.md).

Every import in ``src/mtvbench`` counts, also those inside functions (only ``if TYPE_CHECKING:``
blocks are left out: they never run). A package may import only packages of a lower layer, so
there is no cycle; the layers are the ones docs/architecture.md draws.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mtvbench"

#: bottom to top; a package imports only from layers below its own
LAYERS: list[set[str]] = [
    {"errors", "_version"},
    {"util", "registry"},
    {"ledger"},
    {"media"},
    {"data"},
    {"prompts", "records"},
    {"models"},
    {"dispatch"},
    {"protocol"},
    {"extras", "config", "judge", "checklist_gen"},
    {"scoring"},
    {"render"},
    {"run"},
    {"analysis"},
    {"review"},
    {"construct"},
    {"cli"},
    {"__main__"},
]
LAYER = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    """(module, line) of every import, not descending into ``if TYPE_CHECKING:``."""
    out: list[tuple[str, int]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.module, node.lineno))
        stack.extend(ast.iter_child_nodes(node))
    return out


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where (``file:line``)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        src = _package(path)
        if src == "__init__":
            continue
        for module, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            if parts[0] != "mtvbench" or len(parts) < 2:
                continue
            if parts[1] != src:
                edges[(src, parts[1])].append(f"{path.relative_to(SRC.parent)}:{line}")
    return edges


def test_every_package_has_a_layer() -> None:
    packages = {_package(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert packages == set(LAYER), f"add these to LAYERS (and docs/architecture.md): {packages ^ set(LAYER)}"


def test_imports_point_down_the_layers() -> None:
    upward = [f"{a} -> {b} ({', '.join(where[:3])})" for (a, b), where in package_edges().items()
              if LAYER[b] >= LAYER[a]]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_no_package_cycles() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in package_edges():
        graph[a].add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            x = todo.pop()
            for y in graph[x]:
                if y == goal:
                    return True
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return False

    cycles = sorted({tuple(sorted((a, b))) for a in list(graph) for b in graph[a] if reaches(b, a)})
    assert not cycles, f"packages that import each other (directly or through others): {cycles}"


# ---------------------------------------------------------------- file level


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_targets(tree: ast.AST) -> set[str]:
    """What a module imports, ``if TYPE_CHECKING:`` left out: each module named, and for
    ``from PACKAGE import NAME`` also ``PACKAGE.NAME`` (the module of that name, when there is one)."""
    out: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        stack.extend(ast.iter_child_nodes(node))
    return out


def file_edges(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``package`` itself included)."""
    modules = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        if not (name == package or name.startswith(package + ".")):
            continue
        targets = import_targets(ast.parse(path.read_text(encoding="utf-8")))
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


def test_no_file_level_import_cycle() -> None:
    """No module imports itself through others (every import counted, as above; ``from PACKAGE import NAME``
    counts as importing the module ``PACKAGE.NAME`` when there is one)."""
    found = cycles(file_edges("mtvbench"))
    assert not found, "modules that import each other (directly or through others): " + "; ".join(
        " <-> ".join(c) for c in found)
