from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from mtvbench.data.official import DataError, load_benchmark, load_official
from mtvbench.data.schema import Task, is_model_turn
from tests.support.datasets import checklist_entry, make_dataset


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


# ---------------------------------------------------------------------------- strict files and record values

def _edit(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data, indent=1))


def _only(problems, level: str = "error"):
    return [p for p in problems if p.level == level]


def test_duplicate_video_and_round_keys_are_errors_naming_the_line(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    mr = root / "mtqa" / "memory_recall.json"
    text = mr.read_text()  # {"vid1": [...]}: the same video given twice; the first used to vanish silently
    mr.write_text(text[:-1] + ', "vid1": ' + text[text.index("["):])
    s = root / "mtqa" / "summary.json"
    s.write_text(json.dumps(json.loads(s.read_text()), indent=1).replace(
        '"Round 2": {', '"Round 2": {"User": "q", "Assistant": "a"},\n"Round 2": {', 1))
    bench, problems = load_official(root)
    assert bench is None
    by_file = {p.file: p for p in _only(problems)}
    dup_video = by_file["mtqa/memory_recall.json"]
    assert "duplicate key 'vid1'" in dup_video.message and dup_video.message.startswith("line 1:")
    dup_round = by_file["mtqa/summary.json"]
    assert dup_round.video == "vid0" and dup_round.field == "[0].mtqa.Round 2"
    assert "duplicate key 'Round 2'" in dup_round.message and "first at line" in dup_round.message


def test_nan_and_deep_nesting_are_errors(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    ck = root / "checklist" / "summary_CheckList.json"
    ck.write_text(ck.read_text().replace('"round index": 3', '"round index": NaN', 1))
    (root / "mtqa" / "topic_shifting.json").write_text('{"vid1": ' + "[" * 500 + "]" * 500 + "}")
    bench, problems = load_official(root)
    assert bench is None
    nan = next(p for p in problems if p.file == "checklist/summary_CheckList.json")
    assert "NaN is not valid JSON" in nan.message and nan.video == "vid0" and nan.event == "2"
    assert nan.field == "[0].round index"
    assert any(p.file == "mtqa/topic_shifting.json" and "nested deeper than 64" in p.message for p in problems)


def test_fifo_data_file_and_fifo_video_do_not_block(tmp_path: Path) -> None:
    import os
    import threading

    root = make_dataset(tmp_path / "d")
    (root / "checklist" / "summary_CheckList.json").unlink()
    os.mkfifo(root / "checklist" / "summary_CheckList.json")
    (root / "videos" / "vid1.mp4").unlink()
    os.mkfifo(root / "videos" / "vid1.mp4")
    result: list = []
    worker = threading.Thread(target=lambda: result.append(load_official(root)), daemon=True)
    worker.start()
    worker.join(60)  # a guard against hanging the suite (the old loader blocked forever), not a timing check
    assert result, "load_official blocked on a FIFO"
    bench, problems = result[0]
    assert bench is None
    text = "\n".join(p.render() for p in problems)
    assert "checklist/summary_CheckList.json: data file is not a regular file" in text
    assert "videos/vid1.mp4 video='vid1': is not a regular file" in text


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    p = root / "mtqa" / "answer_refusal.json"
    p.write_bytes(json.dumps(json.loads(p.read_text()), indent=1).encode().replace(b"Question 2", b"Qu\xe9stion 2"))
    bench, problems = load_official(root)
    assert bench is None
    err = next(p for p in problems if p.file == "mtqa/answer_refusal.json")
    assert err.message.startswith("line ") and "not UTF-8 text" in err.message


@pytest.mark.parametrize(("value", "expected"), [
    (1.5, "event_index must be an integer or a string, got 1.5"),
    (2.0, "got 2.0 (write 2)"),
    (-1, "event_index must be >= 0, got -1"),
    (True, "missing or invalid event_index (got True)"),
    ("  ", "event_index is empty or blank"),
    ([1], "missing or invalid event_index"),
])
def test_bad_event_index_is_an_error(tmp_path: Path, value, expected: str) -> None:
    root = make_dataset(tmp_path / "d")
    _edit(root / "mtqa" / "object_reference.json", lambda d: d["vid0"][0].update(event_index=value))
    bench, problems = load_official(root)
    assert bench is None
    err = next(p for p in _only(problems) if p.field == "event_index")
    assert err.file == "mtqa/object_reference.json" and err.video == "vid0" and expected in err.message


@pytest.mark.parametrize(("value", "expected"), [
    (2.0, "'round index' must be an integer such as 3, got 2.0"),
    (3.5, "got 3.5"),
    (0, "'round index' must be >= 1"),
    ("three", "got 'three'"),
    (False, "missing or invalid 'round index' (got False)"),
])
def test_bad_round_index_is_an_error(tmp_path: Path, value, expected: str) -> None:
    root = make_dataset(tmp_path / "d")
    _edit(root / "checklist" / "memory_recall_CheckList.json", lambda d: d["vid1"]["1"][0].update(
        {"round index": value}))
    bench, problems = load_official(root)
    assert bench is None
    err = next(p for p in _only(problems) if p.field == "round index")
    assert (err.file, err.video, err.event) == ("checklist/memory_recall_CheckList.json", "vid1", "1")
    assert expected in err.message


def test_round_index_as_numeric_string_is_still_accepted(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    _edit(root / "checklist" / "memory_recall_CheckList.json", lambda d: d["vid1"]["1"][0].update(
        {"round index": " 3"}))
    bench, problems = load_official(root)
    assert bench is not None, [p.render() for p in problems]
    assert [r.index for r in bench.by_task(Task.MEMORY_RECALL)[0].scored_turns] == [3, 5]


def test_blank_texts_and_names(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")

    def edit(d):
        d["vid0"][0]["mtqa"]["Round 2"]["User"] = " \n\t"  # blank question: error
        d["vid0"][0]["mtqa"]["Round 4"]["Assistant"] = "  "  # blank golden answer: warning
        d["vid0"][0]["mtqa"]["Round 1"]["Ability"] = 7  # not text: error
        d[" "] = []  # blank video name: error

    _edit(root / "mtqa" / "summary.json", edit)
    _edit(root / "checklist" / "summary_CheckList.json", lambda d: d["vid0"]["2"][0].update(Q2="   "))
    bench, problems = load_official(root)
    assert bench is None
    fields = {(p.level, p.field): p for p in problems if p.file.endswith("summary.json")}
    assert "question ('User') is blank" in fields[("error", "mtqa.Round 2.User")].message
    assert "golden answer ('Assistant') is blank" in fields[("warning", "mtqa.Round 4.Assistant")].message
    assert "'Ability' must be text" in fields[("error", "mtqa.Round 1.Ability")].message
    assert any(p.video == " " and "video name is empty or blank" in p.message for p in _only(problems))
    assert any(p.field == "Q2" and "Q2 is empty or not text" in p.message for p in _only(problems))


def test_blank_golden_answer_alone_is_only_a_warning(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    _edit(root / "mtqa" / "summary.json", lambda d: d["vid0"][0]["mtqa"]["Round 4"].update(Assistant=""))
    bench, problems = load_official(root)
    assert bench is not None and [p.field for p in problems] == ["mtqa.Round 4.Assistant"]


def test_a_bad_event_index_still_reports_the_problems_of_its_rounds(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")

    def edit(d):
        d["vid1"][0]["event_index"] = 1.5
        d["vid1"][0]["mtqa"]["Round 2"]["User"] = ""

    _edit(root / "mtqa" / "memory_recall.json", edit)
    _, problems = load_official(root)
    fields = {p.field for p in _only(problems) if p.file == "mtqa/memory_recall.json"}
    assert {"event_index", "mtqa.Round 2.User"} <= fields


def test_a_symlink_loop_in_place_of_a_video_is_one_problem_per_link(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "d")
    (root / "videos" / "vid0.mp4").unlink()
    (root / "videos" / "loop.mp4").symlink_to("vid0.mp4")
    (root / "videos" / "vid0.mp4").symlink_to("loop.mp4")  # vid0 -> loop -> vid0
    bench, problems = load_official(root)
    errors = [p for p in problems if p.level == "error"]
    assert bench is None and [e.file for e in errors] == ["videos/loop.mp4", "videos/vid0.mp4"]
    assert all("is a symbolic link" in e.message for e in errors)


@pytest.mark.parametrize("where", ["videos/vid0.mp4", "videos", "mtqa/summary.json", "notes/readme.txt"])
def test_no_symbolic_link_anywhere_under_a_data_root(tmp_path: Path, where: str) -> None:
    """One rule: a link to a video file, a `videos/` folder that is a link (to a folder outside the
    root), a linked task file, any link at all: one error naming the link, and the run is refused."""
    root = make_dataset(tmp_path / "d")
    link = root / where
    target = tmp_path / "elsewhere" / link.name
    target.parent.mkdir(exist_ok=True)
    if link.exists():
        link.rename(target)
    else:
        target.write_text("x")
        link.parent.mkdir(exist_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())
    bench, problems = load_official(root)
    errors = [p for p in problems if p.level == "error"]
    assert bench is None and [e.file for e in errors] == [where]
    assert f"is a symbolic link (to {target}); a data root holds no links" in errors[0].message
    with pytest.raises(DataError, match="symbolic link"):
        load_benchmark(root)


def test_a_missing_dataset_folder_is_named_in_full(tmp_path: Path) -> None:
    bench, problems = load_official(tmp_path / "nowhere")
    assert bench is None and [p.render() for p in problems] == [
        f"ERROR: {tmp_path / 'nowhere'}: dataset folder does not exist"]
