"""Strict JSON for files mtvbench reads: every problem names the file, the line and the place."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mtvbench.errors import InputError
from mtvbench.util.jsonio import JSONFileError, load_json_file, loads_strict


def test_duplicate_key_names_line_and_place() -> None:
    text = '{"vid0": [{"event_index": 0,\n "mtqa": {"Round 1": {"User": "a"},\n "Round 1": {"User": "b"}}}]}'
    with pytest.raises(JSONFileError) as e:
        loads_strict(text, "mtqa/summary.json")
    assert e.value.line == 3
    assert e.value.json_path == ("vid0", 0, "mtqa", "Round 1")
    assert str(e.value) == ("mtqa/summary.json: line 3: duplicate key 'Round 1' (first at line 2; most JSON "
                            'readers silently keep only the last one) in ["vid0"][0]["mtqa"]')


def test_duplicate_top_level_key_after_tricky_strings() -> None:
    # braces, colons and escaped quotes inside strings must not confuse the locator
    text = '{"a": "{\\"a\\": [1, 2]}", "b": {"a": 1},\n"a": 2}'
    with pytest.raises(JSONFileError) as e:
        loads_strict(text, "f.json")
    assert (e.value.line, e.value.json_path) == (2, ("a",))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_numbers_are_refused_with_their_place(constant: str) -> None:
    with pytest.raises(JSONFileError) as e:
        loads_strict('{"v": [{"event_index":\n ' + constant + "}]}", "f.json")
    assert e.value.line == 2 and e.value.json_path == ("v", 0, "event_index")
    assert f"{constant} is not valid JSON" in str(e.value)


def test_too_deep_and_syntax_errors() -> None:
    with pytest.raises(JSONFileError, match="nested deeper than 64"):
        loads_strict("[" * 5000 + "]" * 5000, "deep.json")
    with pytest.raises(JSONFileError, match=r"f.json: line 2: not valid JSON"):
        loads_strict('{"a": 1,\n', "f.json")


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_bytes(b'{"a":\n "caf\xe9"}')
    with pytest.raises(JSONFileError, match=r"bad.json: line 2: not UTF-8 text \(byte 11"):
        load_json_file(p)


def test_bom_is_accepted(tmp_path: Path) -> None:
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"a": 1}).encode())
    assert load_json_file(p) == {"a": 1}


def test_fifo_and_folder_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "data.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="data.json: data file is not a regular file"):
        load_json_file(fifo, "data file")
    with pytest.raises(InputError, match="is a folder"):
        load_json_file(tmp_path, "data file")
