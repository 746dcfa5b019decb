from __future__ import annotations

import copy
import json
from pathlib import Path

from mtvbench.data.official import load_official
from mtvbench.data.schema import Task, is_model_turn
from tests.conftest import checklist_entry, make_dataset


def _errors(problems):
    return [p for p in problems if p.level == "error"]


def test_loads_and_applies_turn_rule(dataset: Path) -> None:
    bench, problems = load_official(dataset)
    assert bench is not None, [p.render() for p in problems]
    assert len(bench.dialogues) == 6
    mr = bench.by_task(Task.MEMORY_RECALL)[0]
    assert [r.index for r in mr.model_turns] == [3, 5]
    assert [r.index for r in mr.scored_turns] == [3, 5]
    ts = bench.by_task(Task.TOPIC_SHIFTING)[0]
    assert [r.index for r in ts.model_turns] == [1, 2, 3, 4, 5]  # every round counts in TS/PI
    assert [r.index for r in ts.scored_turns] == [3, 5]  # ...but only checklisted ones are scored
    assert mr.event == "1" and isinstance(mr.event, str)


def test_turn_rule_table() -> None:
    assert is_model_turn(Task.OBJECT_REFERENCE, "Object Reference")
    assert is_model_turn(Task.CONTENT_SUMMARY, "Summary")
    assert not is_model_turn(Task.CONTENT_SUMMARY, "Content Summary")  # official spelling is 'Summary'
    assert not is_model_turn(Task.ANSWER_REFUSAL, "OCR/Text")
    assert is_model_turn(Task.PROACTIVE_INTERACTION, "anything")
    assert is_model_turn(Task.TOPIC_SHIFTING, None)


def test_event_index_int_or_string_and_key_order(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    # string event index in mtqa, int-like key in checklist, shuffled keys in the entry
    mtqa = json.loads((root / "mtqa" / "summary.json").read_text())
    mtqa["vid0"][0]["event_index"] = "2"
    (root / "mtqa" / "summary.json").write_text(json.dumps(mtqa))
    ck = json.loads((root / "checklist" / "summary_CheckList.json").read_text())
    entry = ck["vid0"]["2"][0]
    ck["vid0"]["2"][0] = dict(reversed(list(entry.items())))
    ck["vid0"]["2"][0]["round index"] = "3"
    (root / "checklist" / "summary_CheckList.json").write_text(json.dumps(ck))
    bench, problems = load_official(root)
    assert bench is not None, [p.render() for p in problems]
    cs = bench.by_task(Task.CONTENT_SUMMARY)[0]
    items = cs.round(3).checklist
    assert [it.key for it in items] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert [it.expected for it in items] == ["Yes", "Yes", "Yes", "Yes", "No"]


def test_validation_reports_every_problem_at_once(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    (root / "videos" / "vid1.mp4").unlink()  # missing video
    (root / "mtqa" / "bogus_task.json").write_text("{}")  # unknown task file
    ck_path = root / "checklist" / "object_reference_CheckList.json"
    ck = json.loads(ck_path.read_text())
    ck["vid0"]["0"].append(checklist_entry(9, ["a", "b", "c"], "d"))  # round 9 does not exist; 4 items
    ck["vid0"]["0"][0]["A2"] = "yes please"  # Yes/No spelled otherwise
    ck_path.write_text(json.dumps(ck))
    mr_path = root / "mtqa" / "memory_recall.json"
    mr = json.loads(mr_path.read_text())
    mr["vid1"].append(copy.deepcopy(mr["vid1"][0]))  # duplicate id
    mr["../../etc/passwd"] = copy.deepcopy(mr["vid1"][:1])  # escapes the root
    mr_path.write_text(json.dumps(mr))
    ts_path = root / "mtqa" / "topic_shifting.json"
    ts = json.loads(ts_path.read_text())
    ts["vid0"][0]["mtqa"]["Round6"] = {"User": "x", "Assistant": "y"}  # bad round naming
    ts_path.write_text(json.dumps(ts))
    bench, problems = load_official(root)
    assert bench is None
    text = "\n".join(p.render() for p in problems)
    assert "video file not found" in text and "video='vid1'" in text
    assert "bogus_task.json" in text
    assert "round 9, which does not exist" in text
    assert "A2 must be 'Yes' or 'No'" in text and "field='A2'" in text
    assert "duplicate dialogue id" in text
    assert "escape the data root" in text
    assert "'Round6' is not of the form 'Round k'" in text
    warnings = [p for p in problems if p.level == "warning"]
    assert any("4 checklist items" in p.message for p in warnings)
    assert len(_errors(problems)) >= 7


def test_yes_no_case_is_normalised_with_a_warning(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    ck_path = root / "checklist" / "answer_refusal_CheckList.json"
    ck = json.loads(ck_path.read_text())
    ck["vid1"]["3"][0]["A1"] = "yes"
    ck_path.write_text(json.dumps(ck))
    bench, problems = load_official(root)
    assert bench is not None
    assert bench.by_task(Task.ANSWER_REFUSAL)[0].round(3).checklist[0].expected == "Yes"
    assert any(p.field == "A1" and p.level == "warning" for p in problems)


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    (root / "mtqa" / "summary.json").write_text('{"vid0": [')
    bench, problems = load_official(root)
    assert bench is None
    assert any(p.file == "mtqa/summary.json" and "not valid JSON" in p.message for p in problems)
