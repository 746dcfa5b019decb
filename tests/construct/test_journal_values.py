"""A build's call journal reads its replies back like input (issue 25, point 4): a reply row another program
edited (an outcome mtvbench never writes, bytes where text is stored) is one error naming calls.sqlite, the
table, the row and the column, not an internal error deep in a stage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mtvbench.construct.journal import CallJournal
from mtvbench.ledger.sqlite import StoredValueError
from mtvbench.records import GenerationResult


@pytest.mark.parametrize(("column", "value", "what"), [("outcome", "fine", "one of ok"),
                                                       ("text", sqlite3.Binary(b"\xff"), "text"),
                                                       ("raw_text", None, "text")])
def test_an_edited_reply_row_is_named(tmp_path: Path, column: str, value: object, what: str) -> None:
    journal = CallJournal(tmp_path)
    journal.put("v", "caption", "item", "key", "req-1", "offline", GenerationResult(text="a", raw_text="a"))
    assert journal.get("v", "caption", "key") is not None
    with sqlite3.connect(tmp_path / "calls.sqlite") as db:
        if value is None:  # NOT NULL in the schema: another program's table without it
            db.execute("UPDATE replies SET raw_text=x'00' WHERE rowid=1")
        else:
            db.execute(f"UPDATE replies SET {column}=? WHERE rowid=1", (value,))
    with pytest.raises(StoredValueError) as err:
        CallJournal(tmp_path).get("v", "caption", "key")
    assert f"calls.sqlite: table replies, row 1, column {column}:" in str(err.value) and what in str(err.value)
