"""The files `report --metadata` and `agreement --human` read: strict, one error naming the record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.analysis.metadata import MetadataError, load_metadata_file
from mtvbench.cli import app
from mtvbench.errors import InputError
from mtvbench.scoring.human import AgreementError, load_human

TURN = {"task": "summary", "video": "v", "event": 0, "round": 3}


def _json(tmp_path: Path, data: object, name: str = "f.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


# ---------------------------------------------------------------------------- metadata

@pytest.mark.parametrize(("row", "expected"), [
    ({"video": "v", "scenes": 2.5}, "record 1: field 'scenes': must be a whole number, got 2.5"),
    ({"video": "v", "scenes": -1}, "record 1: field 'scenes': must be a finite number >= 0, got -1"),
    ({"video": "v", "duration_s": "nan"}, "record 1: field 'duration_s': must be a finite number >= 0, got 'nan'"),
    ({"video": "v", "duration_s": True}, "record 1: field 'duration_s': must be a number, got True"),
    ({"video": "  "}, "record 1: no 'video' field (or it is blank)"),
    ({"video": "v", "event": 1.5}, "record 1: field 'event': must be an integer or a string, got 1.5"),
    ("v", "record 1: must be an object (key: value), got str"),
])
def test_metadata_values(tmp_path: Path, row: object, expected: str) -> None:
    with pytest.raises(MetadataError) as e:
        load_metadata_file(_json(tmp_path, [row]))
    assert str(e.value) == f"{tmp_path / 'f.json'}: {expected}"


def test_metadata_duplicates_and_strict_json(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("video,event,scenes\nv,0,3\nw,0,1\nv,0,4\n")  # the same dialogue twice: the last used to win
    with pytest.raises(MetadataError, match=r"m.csv: line 4: a second row for video 'v' event '0' \(first at line 2\)"):
        load_metadata_file(p)
    p.write_text("video,scenes,Scenes\nv,3,4\n")
    with pytest.raises(MetadataError, match="a column name appears twice"):
        load_metadata_file(p)
    p.write_text("video,scenes\nv,3,4\n")
    with pytest.raises(MetadataError, match="line 2: more cells than the header has columns"):
        load_metadata_file(p)
    j = tmp_path / "m.json"
    j.write_text('{"v": {"category": "Film"},\n "v": {"category": "Sports"}}')
    with pytest.raises(InputError, match=r"m.json: line 2: duplicate key 'v'"):
        load_metadata_file(j)


def test_metadata_csv_with_bom_and_quoted_newline(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_bytes('\ufeffvideo,category,duration_min\nv,"Film,\nlong",2\n'.encode())
    rows = load_metadata_file(p)
    assert [(r.video, r.category, r.duration_s) for r in rows] == [("v", "Film,\nlong", 120.0)]


def test_build_metadata_of_the_wrong_shape(tmp_path: Path) -> None:
    p = _json(tmp_path, {"format": "mtvbench-build-metadata", "videos": {"v": {"category": "Film"}}})
    with pytest.raises(MetadataError, match=r"field 'videos.v.duration_s': Field required"):
        load_metadata_file(p)


def test_report_metadata_fifo_is_one_error(tmp_path: Path) -> None:
    fifo = tmp_path / "meta.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="meta.csv: metadata file is not a regular file"):
        load_metadata_file(fifo)


# ---------------------------------------------------------------------------- human scores

@pytest.mark.parametrize(("rec", "expected"), [
    ({**TURN, "score": "nan"}, "field 'score': must be a number from 0 to 1 (or 0 to 100), got 'nan'"),
    ({**TURN, "score": -0.5}, "field 'score': must be a number from 0 to 1 (or 0 to 100), got -0.5"),
    ({**TURN, "score": True}, "field 'score'"),
    ({**TURN, "round": 2.5, "score": 1}, "field 'round': must be a whole number >= 1, got 2.5"),
    ({**TURN, "round": "x", "score": 1}, "field 'round': must be a whole number >= 1, got 'x'"),
    ({**TURN, "item": "Qx", "verdict": "yes"}, "field 'item': must name a checklist item (Q3, A3 or 3), got 'Qx'"),
    ({**TURN, "task": "sumary", "score": 1}, "field 'task': unknown task 'sumary'"),
    ({"turn_id": 5, "score": 1}, "field 'turn_id': must be text"),
    ([1, 2], "must be an object (key: value), got list"),
])
def test_human_record_values(tmp_path: Path, rec: object, expected: str) -> None:
    with pytest.raises(AgreementError) as e:
        load_human(_json(tmp_path, [{**TURN, "score": 1}, rec]))
    assert str(e.value).startswith(f"{tmp_path / 'f.json'}: record 2: ") and expected in str(e.value)


def test_human_duplicates_and_jsonl_lines(tmp_path: Path) -> None:
    twice = [{**TURN, "annotator": "a", "score": 1}, {**TURN, "annotator": "b", "score": 0},
             {**TURN, "annotator": "a", "score": 0.5}]
    with pytest.raises(AgreementError, match=r"record 3: the same turn again for annotator 'a' \(first at record 1\)"):
        load_human(_json(tmp_path, twice))
    p = tmp_path / "h.jsonl"
    p.write_text(json.dumps({**TURN, "score": 1}) + "\n\n" + '{"round": 3, "round": 4, "score": 1}\n')
    with pytest.raises(AgreementError, match=r"h.jsonl: line 3: duplicate key 'round'"):
        load_human(p)
    p.write_text(json.dumps({**TURN, "score": 1}) + "\n" + '{"score": NaN}\n')
    with pytest.raises(AgreementError, match=r"h.jsonl: line 2: NaN is not valid JSON"):
        load_human(p)


def test_agreement_command_with_a_bad_human_file_is_one_line(tmp_path: Path) -> None:
    human = _json(tmp_path, [{**TURN, "score": float("inf")}]).read_text().replace("Infinity", "1e999")
    (tmp_path / "h.json").write_text(human)
    res = CliRunner().invoke(app, ["agreement", "--human", str(tmp_path / "h.json"), str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "record 1: field 'score': must be a number from 0 to 1 (or 0 to 100), got inf" in res.output
    assert "Traceback" not in res.output
