"""The released layout has one owner (mtvbench.data.layout): paths, the writer, what it keeps.

What the writer writes loads back with the same dialogue ids (event_index round-trips through the loader),
and no other module spells the layout's paths.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from mtvbench.data import layout
from mtvbench.data.official import load_official
from mtvbench.data.schema import TASKS, ChecklistItem, Task
from tests.support.source import parsed

SRC = Path(__file__).resolve().parents[2] / "src" / "mtvbench"
ROUNDS = [{"User": "What is red?", "Assistant": "The square.", "Ability": "Object Reference"},
          {"User": "And blue?", "Assistant": "The disc.", "Ability": "Object Reference"}]
ITEMS = [ChecklistItem(key=f"Q{i}", question=f"Q{i}?", expected="Yes") for i in range(1, 6)]


@pytest.mark.parametrize("event", ["0", "7", "12", "03", "a b", "-1", "²", " 4"])
def test_what_the_writer_writes_loads_back_with_the_same_ids(tmp_path: Path, event: str) -> None:
    w = layout.LayoutWriter()
    assert w.add(Task.OBJECT_REFERENCE, "vid", event, ROUNDS, {2: ITEMS}) == 1
    w.write(tmp_path)
    data = json.loads(layout.mtqa_path(tmp_path, Task.OBJECT_REFERENCE).read_text(encoding="utf-8"))
    written = data["vid"][0]["event_index"]
    assert written == (int(event) if event in ("0", "7", "12") else event)
    bench, problems = load_official(tmp_path, check_videos=False)
    assert bench is not None, [p.render() for p in problems]
    (d,) = bench.dialogues
    assert d.id == f"{Task.OBJECT_REFERENCE.value}/vid/{event}"
    assert [r.index for r in d.rounds] == [1, 2] and d.rounds[1].checklist == ITEMS


def test_every_task_gets_both_files_and_entries_come_by_round(tmp_path: Path) -> None:
    w = layout.LayoutWriter()
    assert w.add(Task.CONTENT_SUMMARY, "v", "1", ROUNDS, {2: ITEMS, 1: ITEMS[:2]}) == 2
    w.write(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json")) == sorted(
        [layout.mtqa_rel(t) for t in TASKS] + [layout.checklist_rel(t) for t in TASKS])
    ck = json.loads(layout.checklist_path(tmp_path, Task.CONTENT_SUMMARY).read_text(encoding="utf-8"))
    assert [e["round index"] for e in ck["v"]["1"]] == [1, 2] and ck["v"]["1"][0] == {
        "round index": 1, "Q1": "Q1?", "A1": "Yes", "Q2": "Q2?", "A2": "Yes"}
    assert json.loads(layout.mtqa_path(tmp_path, Task.OBJECT_REFERENCE).read_text(encoding="utf-8")) == {}


@pytest.mark.parametrize(("status", "accepted_only", "drop_rejected", "kept"), [
    ("accepted", False, False, True), ("pending", False, False, True), ("rejected", False, False, True),
    ("rejected", False, True, False), ("pending", False, True, True), ("needs_adjudication", False, True, True),
    ("accepted", True, False, True), ("pending", True, True, False), ("rejected", True, False, False),
])
def test_what_an_export_keeps(status: str, accepted_only: bool, drop_rejected: bool, kept: bool) -> None:
    assert layout.kept(status, accepted_only=accepted_only, drop_rejected=drop_rejected) is kept


def test_file_names_map_back_to_their_task() -> None:
    for t in TASKS:
        assert layout.task_of_mtqa(layout.mtqa_name(t)) is t
        assert layout.task_of_checklist(layout.checklist_name(t)) is t
        assert layout.task_of_mtqa(layout.checklist_name(t)) is None
    assert layout.task_of_mtqa("notes.json") is None and layout.task_of_checklist("summary.json") is None
    assert layout.FOLDERS_TEXT == "mtqa/, checklist/, videos/"


def _spelled(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value == "mtqa" or node.value.startswith("mtqa/") or "_CheckList" in node.value)


def _not_paths(tree: ast.AST) -> set[int]:
    """Docstrings, dict keys, ``field=`` values, ``.get()`` arguments and subscripts: record fields, not paths."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))
        if isinstance(node, ast.Dict):
            skip.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.keyword) and node.arg == "field":
            skip.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            skip.update(id(a) for a in node.args)
        elif isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
    return skip


def test_only_the_layout_module_spells_the_layout_paths() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "data" / "layout.py":
            continue
        tree = parsed(path)
        skip = _not_paths(tree)
        found += [f"{path.relative_to(SRC)}:{n.lineno}" for n in ast.walk(tree) if _spelled(n) and id(n) not in skip]
    assert not found, f"use mtvbench.data.layout for these paths: {found}"
