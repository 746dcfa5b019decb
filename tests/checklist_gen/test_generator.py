"""The shared checklist generator (Figure 16): parsing, rules, re-asks, dataset-level filling."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mtvbench.checklist_gen.fill import fill_checklists
from mtvbench.checklist_gen.generator import (
    ChecklistError,
    check_checklist,
    generate_checklist,
    parse_checklist_reply,
)
from mtvbench.data.official import load_official
from mtvbench.data.schema import Task
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from tests.support.build_replies import Scripted, good_checklist
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState


def _backend(url: str):  # noqa: ANN202
    return create_backend("openai:ck", BackendOptions(base_url=url, max_retries=0))


def test_parse_formats() -> None:
    assert [a for _, a in parse_checklist_reply(good_checklist())] == ["Yes"] * 4 + ["No"]
    lines = "Q1: Is the car red?\nA1: Yes\n**Q2:** Is the car blue?\n**A2:** No\nQ3. Does it stop? (Yes)"
    assert parse_checklist_reply(lines) == [("Is the car red?", "Yes"), ("Is the car blue?", "No"),
                                            ("Does it stop?", "Yes")]
    lst = json.dumps([{"question": "Is it red?", "answer": "yes"}, {"question": "Is it big?", "answer": False}])
    assert parse_checklist_reply(lst) == [("Is it red?", "Yes"), ("Is it big?", "No")]
    assert parse_checklist_reply("no checklist here") == []


def test_rules() -> None:
    ok = parse_checklist_reply(good_checklist())
    assert check_checklist(ok) == []
    assert any("exactly 5" in p for p in check_checklist(ok[:4]))
    all_yes = [(q, "Yes") for q, _ in ok]
    assert any("'No'" in p for p in check_checklist(all_yes))
    two_no = ok[:3] + [(ok[3][0], "No"), ok[4]]
    assert any("exactly one 'No'" in p for p in check_checklist(two_no))
    assert check_checklist(two_no, exact_split=False) == []
    gt = [("Does the answer match the ground truth?", "Yes")] + ok[1:]
    assert any("self-contained" in p for p in check_checklist(gt))
    dup = [ok[0], ok[0]] + ok[2:]
    assert any("repeats" in p for p in check_checklist(dup))
    noq = [("The car is red.", "Yes")] + ok[1:]
    assert any("not a question" in p for p in check_checklist(noq))


def test_generate_reasks_then_succeeds_or_raises() -> None:
    with LoopbackServer(ServerState(model_reply=Scripted(bad_checklists=1))) as srv:
        items = asyncio.run(generate_checklist(_backend(srv.url), "What colour?", "It is red.", n=5))
        texts = [r["text"] for r in srv.state.requests]
    assert [it.key for it in items] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert [it.expected for it in items].count("No") == 1
    assert len(texts) == 2 and "rejected because" in texts[1] and "exactly 5" in texts[1]
    assert "1. User Question: What colour?" in texts[0] and "2. Ground Truth Answer: It is red." in texts[0]
    with LoopbackServer(ServerState(model_reply=Scripted(bad_checklists=9))) as srv, \
            pytest.raises(ChecklistError) as e:
        asyncio.run(generate_checklist(_backend(srv.url), "Q?", "A.", max_attempts=2))
    assert any("self-contained" in p for p in e.value.problems)


def test_fill_dataset_resumable_without_overwriting(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "data")
    ck = root / "checklist" / "object_reference_CheckList.json"
    before = json.loads(ck.read_text())
    # drop round 5's entry of one dialogue; keep round 3's as a marker that must survive
    video = next(iter(before))
    event = next(iter(before[video]))
    before[video][event] = [e for e in before[video][event] if e["round index"] == 3]
    ck.write_text(json.dumps(before))
    (root / "checklist" / "summary_CheckList.json").unlink()
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        rep = asyncio.run(fill_checklists(root, _backend(srv.url)))
        n_calls = len(srv.state.requests)
        rep2 = asyncio.run(fill_checklists(root, _backend(srv.url)))
        n_calls2 = len(srv.state.requests)
    # OR round 5 + summary rounds 3 and 5 + rounds 1, 2, 4 of TS and PI (every round is a model turn there)
    assert rep.generated == 9 and rep.kept == 9 and rep.failed == []
    assert n_calls == 9 and n_calls2 == 9 and rep2.generated == 0 and rep2.kept == 18
    after = json.loads(ck.read_text())
    r3 = next(e for e in after[video][event] if e["round index"] == 3)
    assert r3 == next(e for e in json.loads(json.dumps(before))[video][event] if e["round index"] == 3)
    assert [e["round index"] for e in after[video][event]] == [3, 5]
    bench, problems = load_official(root)
    assert bench is not None, [p.render() for p in problems]
    assert all(len(r.checklist or []) == 5 for d in bench.dialogues for r in d.scored_turns)
    assert sum(len(d.scored_turns) for d in bench.dialogues) == 18


def test_fill_overwrite_and_failures(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "data")
    with LoopbackServer(ServerState(model_reply=Scripted(bad_checklists=99))) as srv:
        rep = asyncio.run(fill_checklists(root, _backend(srv.url), overwrite=True, max_attempts=2,
                                          tasks=[Task.OBJECT_REFERENCE]))
    assert rep.generated == 0 and len(rep.failed) == 2
    assert all(f.problems for f in rep.failed)
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        rep = asyncio.run(fill_checklists(root, _backend(srv.url), overwrite=True))
    assert rep.generated == 18 and rep.kept == 0
    data = json.loads((root / "checklist" / "memory_recall_CheckList.json").read_text())
    entry = next(iter(next(iter(data.values())).values()))[0]
    assert entry["Q1"] == "Does the answer state fact number 1 about the red square?"
