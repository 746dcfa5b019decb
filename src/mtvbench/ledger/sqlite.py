"""How mtvbench opens its SQLite files, and the version rule they all follow (run store, call journal, review store).

**Set-up** (:func:`connect`): WAL (readers never block the writer, a killed process loses nothing
committed), ``synchronous=NORMAL``, a 30 s busy timeout, autocommit mode: every transaction is explicit
(:func:`transaction`, ``BEGIN IMMEDIATE`` for writes), so several connections, threads and processes
share a file safely.

**Version rule** (:func:`open_db`): a file records its format in a ``meta`` table (``key``, JSON ``value``):
``kind``, ``schema_version``, ``mtvbench_version`` (the version that created it) and ``created``.

- a file without tables is new: its tables and meta rows are created in one transaction;
- a file of a newer format is refused, naming the file and both versions (upgrade mtvbench);
- a file of an older format is migrated by the schema's listed steps (one per version) in one
  transaction, or refused when a step is missing;
- a file without a ``schema_version`` row is refused: as of no recorded format when it has the schema's
  tables, as not of this kind at all when it has none of them;
- a file of the current format is opened without a write;
- a ``kind`` row naming another kind is refused (a review store given as a run store).

**Errors** (:func:`mapped_error`) are one type, :class:`DatabaseError`, naming the file:
:class:`DatabaseFormatError` (also an ``InputError``: not SQLite, corrupt, another format) or
:class:`DatabaseWriteError` (also an ``OutputError``: the transaction was rolled back; a full disk or a
file that may not grow is said so plainly). A constraint violation is a bug of mtvbench and propagates.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtvbench._version import __version__
from mtvbench.errors import InputError, MtvbenchError, OutputError
from mtvbench.util.files import ensure_dir

META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
BUSY_TIMEOUT_S = 30.0
_NAMED = re.compile(r"CREATE\s+(TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)
#: SQLite's words for "the file cannot grow": a full disk, a quota, a file-size limit (an I/O error)
_NO_ROOM = ("full", "I/O")
_NOT_A_DB = ("not a database", "malformed", "file is encrypted")


class DatabaseError(MtvbenchError):
    """A database file of mtvbench that cannot be used as asked; the message names the file."""


class DatabaseFormatError(DatabaseError, InputError):
    """Not SQLite, corrupt, or of another format or kind."""


class DatabaseWriteError(DatabaseError, OutputError):
    """A write failed (disk full, file size limit, read-only); its transaction was rolled back."""


Migration = Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Schema:
    """One kind of database file: its tables and its format (see the module doc)."""

    #: what the file is, in messages and in its ``kind`` row: "run store"
    kind: str
    version: int
    #: ``CREATE TABLE|INDEX IF NOT EXISTS`` statements (the meta table is added)
    ddl: str
    #: what a failed write could not store: "cannot write results"
    records: str = "data"
    #: version v -> the step that makes a file of format v one of format v + 1
    migrations: Mapping[int, Migration] = field(default_factory=dict)
    #: what to do about a file that is refused (another format, corrupt)
    hint: str | None = None
    #: what to do after a failed write
    write_hint: str | None = None
    #: the class of a refusal (a subclass, when callers of this kind catch a narrower error too)
    refusal: type[DatabaseFormatError] = DatabaseFormatError

    def statements(self) -> list[str]:
        """The statements that create the schema: the meta table first, then every table and index of ``ddl``."""
        return [META_DDL] + [s.strip() for s in self.ddl.split(";") if s.strip()]

    def names(self) -> set[str]:
        """The tables and indexes the schema creates (meta left out)."""
        return {m.group(2) for m in _NAMED.finditer(self.ddl)}


# ----------------------------------------------------------------------------------- errors

def mapped_error(path: Path, schema: Schema, e: sqlite3.Error, *, writing: bool = True) -> DatabaseError:
    """The :class:`DatabaseError` that a failure of SQLite on ``path`` becomes (see the module doc)."""
    msg = str(e)
    if any(s in msg for s in _NOT_A_DB):
        return schema.refusal(f"{path}: not a {schema.kind} mtvbench can read (SQLite says: {msg})",
                              hint=schema.hint)
    if any(s in msg for s in _NO_ROOM):
        return DatabaseWriteError(f"{path}: cannot write {schema.records}: {msg} (the disk may be full, or the file "
                                  "may not grow any further)", hint=schema.write_hint)
    if writing or "unable to open" in msg or "readonly" in msg:
        return DatabaseWriteError(f"{path}: cannot write {schema.records}: {msg}", hint=schema.write_hint)
    return schema.refusal(f"{path}: cannot read the {schema.kind} ({msg})", hint=schema.hint)


@contextlib.contextmanager
def errors_named(path: Path, schema: Schema, *, writing: bool = True) -> Iterator[None]:
    """SQLite failures inside the block become :func:`mapped_error`; a constraint violation is a bug."""
    try:
        yield
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise
    except sqlite3.Error as e:
        raise mapped_error(path, schema, e, writing=writing) from e


# ----------------------------------------------------------------------------------- reading back

#: the longest stored value a message quotes
_QUOTED = 60


class StoredValueError(DatabaseFormatError):
    """A value read back from a database file that is not what mtvbench writes there (the file was edited, or
    written by another program): named by file, table, row and column."""


@dataclass(frozen=True)
class StoredRow:
    """One row read back from a database file, whose values are checked like input: a value that is not what
    mtvbench writes there is one ``error`` (a :class:`StoredValueError`) naming the file, the table, the row and
    the column."""

    path: Path
    table: str
    #: the row's ``rowid`` (or its key, for a table without one)
    row: Any
    values: Mapping[str, Any]
    error: type[StoredValueError] = StoredValueError
    hint: str | None = None

    def fail(self, column: str, what: str) -> StoredValueError:
        """The error for a bad value in ``column``: file, table, row and column named, the value quoted (shortened),
        and what it should have been."""
        shown = repr(self.values.get(column))
        shown = shown if len(shown) <= _QUOTED else shown[:_QUOTED - 1] + "…"
        return self.error(f"{self.path}: table {self.table}, row {self.row}, column {column}: {shown} is not {what}",
                          hint=self.hint)

    def count(self, column: str, *, null: bool = False) -> int | None:
        """A whole number >= 0 (tokens, requests, attempts); None only where ``null``."""
        v = self.values.get(column)
        if v is None and null:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(column, "a count (a whole number >= 0)")
        return v

    def seconds(self, column: str, *, null: bool = False) -> float | None:
        """A finite number of seconds >= 0 (a latency); None only where ``null``."""
        v = self.values.get(column)
        if v is None and null:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise self.fail(column, "a number of seconds (finite, >= 0)")
        return float(v)

    def time(self, column: str, *, null: bool = False) -> float | None:
        """A point in time (seconds since the epoch, finite, >= 0); None only where ``null``."""
        v = self.values.get(column)
        if v is None and null:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise self.fail(column, "a time (seconds since 1970, finite)")
        return float(v)

    def text(self, column: str, *, null: bool = False) -> str | None:
        """A text value; None only where ``null``."""
        v = self.values.get(column)
        if v is None and null:
            return None
        if not isinstance(v, str):
            raise self.fail(column, "text")
        return v

    def choice(self, column: str, allowed: tuple[str, ...]) -> str:
        """One of the words ``allowed`` (a role, an outcome)."""
        v = self.values.get(column)
        if v not in allowed:
            raise self.fail(column, f"one of {', '.join(allowed)}")
        return v

    def json(self, column: str, kinds: type | tuple[type, ...] = object, *, null: bool = False) -> Any:
        """A JSON value of one of ``kinds`` (``dict``, ``list``), stored as text; None only where ``null``."""
        v = self.values.get(column)
        if v is None and null:
            return None
        out = _loads(v)
        if out is _NOT_JSON or not isinstance(out, kinds):
            names = kinds.__name__ if isinstance(kinds, type) else " or ".join(k.__name__ for k in kinds)
            raise self.fail(column, "JSON" if kinds is object else f"JSON of a {names.replace('dict', 'mapping')}")
        return out


_NOT_JSON = object()
#: the scanner of ``json.loads`` (its defaults): one JSON value read from a place in a text, and where it ends
_SCAN = json.JSONDecoder().scan_once


def _loads(v: Any) -> Any:
    """``json.loads`` of a stored text (``str`` or ``bytes``), or ``_NOT_JSON``. A text that is one JSON value from
    its first character to its last (what a writer stores) is read by ``json.loads``'s own scanner directly, the
    same value without its wrappers (a run store holds hundreds of thousands); any other is left to ``json.loads``
    (spaces around the value, or not JSON)."""
    if isinstance(v, str):
        try:
            out, end = _SCAN(v, 0)
            if end == len(v):
                return out
        except (StopIteration, ValueError, RecursionError):
            pass
    if not isinstance(v, (str, bytes)):
        return _NOT_JSON
    try:
        return json.loads(v)
    except (ValueError, RecursionError):
        return _NOT_JSON


# ----------------------------------------------------------------------------------- set-up

def connect(path: Path, schema: Schema, *, threads: bool = False) -> sqlite3.Connection:
    """A connection with the set-up of the module doc; ``threads``: usable from any thread."""
    with errors_named(path, schema):
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=not threads)
    try:
        with errors_named(path, schema, writing=False):
            db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            db.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def transaction(db: sqlite3.Connection, path: Path, schema: Schema, *, write: bool = True
                ) -> Iterator[sqlite3.Connection]:
    """One explicit transaction: committed when the block ends, rolled back on any exception."""
    with errors_named(path, schema, writing=write):
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def get_meta(db: sqlite3.Connection, key: str) -> Any:
    """A meta value (JSON), or None when the row or the meta table is missing."""
    if not _has_meta(db):
        return None
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def put_meta(db: sqlite3.Connection, values: Mapping[str, Any]) -> None:
    """Meta rows (JSON values, keys sorted), inside the caller's transaction."""
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                   [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()])


def _has_meta(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() is not None


def _names(db: sqlite3.Connection) -> set[str]:
    return {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}


def _made_by(db: sqlite3.Connection) -> str:
    return get_meta(db, "mtvbench_version") or "an mtvbench that did not record its version"


def _found_version(db: sqlite3.Connection, path: Path, schema: Schema) -> int:
    """The file's format under the rule of the module doc (refusals raise)."""
    names = _names(db)
    kind = get_meta(db, "kind")
    if kind is not None and kind != schema.kind:
        raise schema.refusal(f"{path}: not a {schema.kind} (it is a {kind})", hint=schema.hint)
    found = get_meta(db, "schema_version")
    if found is None and not (names & schema.names()):
        raise schema.refusal(f"{path}: not a {schema.kind} (no format recorded, and none of its tables)",
                             hint=schema.hint)
    if found is None:
        raise schema.refusal(f"{path}: {schema.kind} of no recorded format (written by {_made_by(db)}); this "
                             f"mtvbench ({__version__}) reads format {schema.version}", hint=schema.hint)
    if not isinstance(found, int) or found > schema.version or (
            found < schema.version and any(v not in schema.migrations for v in range(found, schema.version))):
        newer = isinstance(found, int) and found > schema.version
        raise schema.refusal(
            f"{path}: {schema.kind.replace(' ', '-')} format {found} (written by {_made_by(db)}); this mtvbench "
            f"({__version__}) reads format {schema.version}",
            hint="upgrade mtvbench to open it" if newer else schema.hint)
    return found


def _needs_work(db: sqlite3.Connection, schema: Schema) -> bool:
    return bool(get_meta(db, "schema_version") != schema.version)


def _bring_up_to_date(db: sqlite3.Connection, path: Path, schema: Schema) -> None:
    """Inside a write transaction: create or migrate the file (see the module doc)."""
    fresh = not _names(db)
    found = schema.version if fresh else _found_version(db, path, schema)
    for v in range(found, schema.version):
        schema.migrations[v](db)
    for stmt in schema.statements():
        db.execute(stmt)
    values: dict[str, Any] = {"kind": schema.kind, "schema_version": schema.version}
    if fresh:
        values |= {"mtvbench_version": __version__, "created": time.time()}
    put_meta(db, values)


def open_db(path: Path, schema: Schema, *, threads: bool = False) -> sqlite3.Connection:
    """A connection to ``path`` set up and of the current format (created, migrated or refused: module doc)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise schema.refusal(f"{path}: is not a file", hint=schema.hint)
    ensure_dir(path.parent)
    db = connect(path, schema, threads=threads)
    try:
        with errors_named(path, schema, writing=False):
            fresh = not _names(db)
            if not fresh:
                _found_version(db, path, schema)  # a refusal writes nothing
        with errors_named(path, schema, writing=fresh):
            db.execute("PRAGMA journal_mode=WAL")  # recorded in the file: once set, a no-op
            work = fresh or _needs_work(db, schema)
        if work:
            with transaction(db, path, schema):
                _bring_up_to_date(db, path, schema)
    except BaseException:
        db.close()
        raise
    return db
