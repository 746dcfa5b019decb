"""One progress interface for run and build: every class in mtvbench that progress is reported to (a class
named ``...Progress`` with a ``start``, ``advance`` or ``note`` method) is ``dispatch.Progress`` or derives from
it, so there is no second protocol beside it; the runner and the builder both take it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import mtvbench
from mtvbench.dispatch import Progress
from tests.support.source import parsed


def _progress_classes() -> list[tuple[str, str]]:
    root = Path(mtvbench.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Progress")):
                continue
            if {f.name for f in node.body if isinstance(f, ast.FunctionDef)} & {"start", "advance", "note"}:
                module = ".".join(("mtvbench", *path.relative_to(root).with_suffix("").parts))
                found.append((module.removesuffix(".__init__"), node.name))
    return found


def test_every_progress_class_is_the_one_interface_or_derives_from_it() -> None:
    found = _progress_classes()
    assert ("mtvbench.dispatch", "Progress") in found and len(found) >= 3  # the interface and the CLI's displays
    for module, name in found:
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, Progress), f"{module}.{name} is a second progress interface"


def test_run_and_build_report_to_the_same_interface() -> None:
    import inspect

    from mtvbench.construct.pipeline import Builder
    from mtvbench.run.runner import Runner

    for cls in (Runner, Builder):
        hint = inspect.signature(cls.__init__).parameters["progress"].annotation
        assert hint == "Progress | None", (cls.__name__, hint)
    assert {m for m in vars(Progress) if not m.startswith("_")} == {"start", "advance", "note", "reply"}
