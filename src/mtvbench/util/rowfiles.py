"""Records of the small tables users give (``report --metadata``, ``agreement --human``), read strictly.

- :func:`csv_records`: a regular UTF-8 CSV file (a BOM is dropped, quoted newlines kept) with
  a header whose column names appear once; each record comes with ``"<file>: line <n>"``.
- :func:`record_keys`: a record (CSV row or JSON object) with its keys normalised; a record
  that is not an object, a row with more cells than the header and a key given twice (after
  normalising: ``Score`` and ``score``) are errors naming the record.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from mtvbench.errors import InputError, MtvbenchError
from mtvbench.util.jsonio import read_text_file


def csv_records(path: Path, what: str, error: type[MtvbenchError] = InputError) -> list[tuple[str, dict[str, Any]]]:
    """(where, row) for every row of a CSV file with a header."""
    reader = csv.DictReader(io.StringIO(read_text_file(path, what), newline=""))
    names = [str(f).strip().lower() for f in reader.fieldnames or []]
    if len(set(names)) != len(names):
        raise error(f"{path}: line 1: a column name appears twice: {reader.fieldnames}")
    return [(f"{path}: line {reader.line_num}", row) for row in reader]


def record_keys(raw: Any, where: str, error: type[MtvbenchError] = InputError, *,
                spaces_to_underscores: bool = False) -> dict[str, Any]:
    """``raw`` with its keys stripped and lower-cased (and spaces made ``_``), checked."""
    if not isinstance(raw, dict):
        raise error(f"{where}: must be an object (key: value), got {type(raw).__name__}")
    if None in raw:  # csv.DictReader puts the surplus cells of a row under None
        raise error(f"{where}: more cells than the header has columns")
    out: dict[str, Any] = {}
    for k, v in raw.items():
        key = str(k).strip().lower()
        if spaces_to_underscores:
            key = key.replace(" ", "_")
        if key in out:
            raise error(f"{where}: column/key {key!r} given twice")
        out[key] = v
    return out
