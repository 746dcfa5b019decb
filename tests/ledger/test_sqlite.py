"""mtvbench.ledger.sqlite: the set-up and the version rule shared by every SQLite file mtvbench writes.

Real files only; the full disk is a real file-size limit (RLIMIT_FSIZE in a subprocess, as tests/run/test_disk.py).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mtvbench import __version__
from mtvbench.errors import InputError, OutputError, RunDirError
from mtvbench.ledger.sqlite import (
    DatabaseError,
    DatabaseFormatError,
    DatabaseWriteError,
    Schema,
    get_meta,
    open_db,
    transaction,
)
from mtvbench.run.store import RunStore
from tests.support.run_helpers import subprocess_env

V1 = Schema(kind="thing store", version=1, ddl="CREATE TABLE IF NOT EXISTS things (name TEXT NOT NULL)",
            records="things", hint="use another file")


def _add_size(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE things ADD COLUMN size INTEGER")
    db.execute("UPDATE things SET size = length(name)")


def _v3(step2) -> Schema:  # noqa: ANN001 - the migration step from 2 to 3
    return Schema(kind="thing store", version=3, records="things",
                  ddl="CREATE TABLE IF NOT EXISTS things (name TEXT NOT NULL, size INTEGER, big INTEGER)",
                  migrations={1: _add_size, 2: step2})


def _mark_big(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE things ADD COLUMN big INTEGER")
    db.execute("UPDATE things SET big = size > 3")


def _v1_file(path: Path, names: tuple[str, ...] = ("ab", "abcde")) -> Path:
    db = open_db(path, V1)
    with transaction(db, path, V1):
        db.executemany("INSERT INTO things VALUES (?)", [(n,) for n in names])
    db.close()
    return path


def test_a_new_file_gets_its_tables_format_and_the_set_up(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "things.sqlite"
    db = open_db(path, V1)
    assert get_meta(db, "kind") == "thing store" and get_meta(db, "schema_version") == 1
    assert get_meta(db, "mtvbench_version") == __version__ and get_meta(db, "created") > 0
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert db.execute("PRAGMA busy_timeout").fetchone() == (30000,)
    assert db.in_transaction is False and db.isolation_level is None  # transactions are explicit
    db.close()


def test_an_up_to_date_file_opens_without_a_write(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "t.sqlite")
    db = open_db(path, V1)
    assert db.total_changes == 0 and db.execute("SELECT COUNT(*) FROM things").fetchone() == (2,)
    db.close()


def test_a_newer_file_is_refused_naming_both_versions_and_left_as_it_is(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "t.sqlite")
    with sqlite3.connect(path) as c:
        c.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    before = path.read_bytes()
    with pytest.raises(DatabaseFormatError) as e:
        open_db(path, V1)
    assert isinstance(e.value, InputError) and isinstance(e.value, DatabaseError)
    assert e.value.message == (f"{path}: thing-store format 7 (written by {__version__}); this mtvbench "
                               f"({__version__}) reads format 1")
    assert e.value.hint == "upgrade mtvbench to open it"
    assert path.read_bytes() == before


def test_an_older_file_is_migrated_by_its_steps_in_one_transaction(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "t.sqlite")
    db = open_db(path, _v3(_mark_big))
    assert db.execute("SELECT name, size, big FROM things ORDER BY name").fetchall() == [("ab", 2, 0),
                                                                                        ("abcde", 5, 1)]
    assert get_meta(db, "schema_version") == 3 and get_meta(db, "mtvbench_version") == __version__
    db.close()


def test_a_failed_migration_leaves_the_file_at_its_format(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "t.sqlite")

    def broken(db: sqlite3.Connection) -> None:
        db.execute("UPDATE things SET name = 'changed'")
        raise sqlite3.OperationalError("no such function: nope")

    with pytest.raises(DatabaseError, match="t.sqlite"):
        open_db(path, _v3(broken))
    db = open_db(path, V1)  # step 1 (a new column) and the change of step 2 were rolled back with it
    assert get_meta(db, "schema_version") == 1
    assert db.execute("SELECT * FROM things ORDER BY name").fetchall() == [("ab",), ("abcde",)]
    db.close()


def test_an_older_file_without_a_listed_step_is_refused(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "t.sqlite")
    no_step = Schema(kind="thing store", version=2, ddl=V1.ddl, hint="use another file")
    with pytest.raises(DatabaseFormatError, match=r"thing-store format 1 .* reads format 2") as e:
        open_db(path, no_step)
    assert e.value.hint == "use another file"


def test_a_file_without_a_recorded_format_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE things (name TEXT NOT NULL)")
        c.execute("INSERT INTO things VALUES ('old')")
    before = path.read_bytes()
    with pytest.raises(DatabaseFormatError, match=r"thing store of no recorded format .* reads format 1"):
        open_db(path, V1)
    assert path.read_bytes() == before


@pytest.mark.parametrize(("tables", "match"), [
    ("CREATE TABLE other (x)", "not a thing store"),
    ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('kind', "
     "'\"review store\"')", r"not a thing store \(it is a review store\)"),
])
def test_a_file_of_another_kind_is_refused(tmp_path: Path, tables: str, match: str) -> None:
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as c:
        c.executescript(tables)
    with pytest.raises(DatabaseFormatError, match=match):
        open_db(path, V1)


def test_a_corrupt_file_is_one_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"this is not a database, it has been overwritten" * 100)
    with pytest.raises(DatabaseFormatError) as e:
        open_db(path, V1)
    assert e.value.message.startswith(f"{path}: not a thing store mtvbench can read (SQLite says: ")
    assert e.value.hint == "use another file"
    with pytest.raises(DatabaseFormatError, match="is not a file"):
        open_db(tmp_path, V1)


def test_a_refused_run_store_is_still_a_run_directory_error(tmp_path: Path) -> None:
    (tmp_path / RunStore.FILENAME).write_bytes(b"overwritten" * 500)
    with pytest.raises(RunDirError) as e:  # what library callers of RunDirectory.load/evaluate catch
        RunStore(tmp_path, create=False)
    assert isinstance(e.value, DatabaseError) and "store.sqlite: not a run store mtvbench can read" in e.value.message


FILL = """
import resource, signal, sqlite3, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from mtvbench.errors import MtvbenchError
from mtvbench.ledger.sqlite import Schema, open_db, transaction
schema = Schema(kind="thing store", version=1, ddl="CREATE TABLE IF NOT EXISTS things (name TEXT NOT NULL)",
                records="things", write_hint="free some space")
path = Path(sys.argv[1])
db = open_db(path, schema)
resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))
try:
    for i in range(1000):
        with transaction(db, path, schema):
            db.execute("INSERT INTO things VALUES (?)", ("x" * 4000,))
except MtvbenchError as e:
    print(type(e).__name__, "|", e.message, "|", e.hint)
"""


def test_a_full_disk_is_said_plainly_and_what_was_committed_stays(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    done = subprocess.run([sys.executable, "-c", FILL, str(path)], env=subprocess_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kind, message, hint = (p.strip() for p in done.stdout.split("|"))
    assert kind == "DatabaseWriteError" and hint == "free some space"
    assert message.startswith(f"{path}: cannot write things: ") and "the disk may be full" in message
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert 0 < c.execute("SELECT COUNT(*) FROM things").fetchone()[0] < 1000
    assert issubclass(DatabaseWriteError, OutputError) and issubclass(DatabaseWriteError, DatabaseError)


#: stored texts of every kind a JSON column can hold: one value filling the text, spaces around it, data after it,
#: not JSON, NaN, escapes, deep nesting, bytes, a number stored where text belongs
JSON_TEXTS = ['{"a": [1, 2.5, null, "\\ud800"]}', " {}", "{} ", "\n[1]\t", "{}x", "{} {}", "", "NaN", "[1,2",
              "\ufeff{}", '"text"', "[" * 5000 + "]" * 5000, "[" * 100000, b'{"a": 1}', b"not json", 7, 2.5]


@pytest.mark.parametrize("text", JSON_TEXTS, ids=lambda t: repr(t)[:24])
def test_a_stored_json_text_reads_as_json_loads_reads_it(text: object) -> None:
    import json

    from mtvbench.ledger.sqlite import StoredRow, StoredValueError

    row = StoredRow(Path("store.sqlite"), "t", 1, {"c": text})
    try:
        expected = json.loads(text) if isinstance(text, (str, bytes)) else None
        ok = isinstance(text, (str, bytes))
    except (ValueError, RecursionError):
        ok = False
    if ok:
        got = row.json("c")
        assert got == expected or (got != got and expected != expected)
    else:
        with pytest.raises(StoredValueError, match="column c"):
            row.json("c")
