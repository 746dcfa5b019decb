"""The run store: one SQLite file per run, written as results arrive.

Every model response and every judge verdict is committed the moment it exists (WAL
mode), so a killed run loses at most the calls in flight, and the next run of the same
command asks only for what is missing.

Each result row carries the fingerprint of what produced it (:mod:`mtvbench.run.identity`)
and its parts; a row whose fingerprint is no longer the expected one is kept (superseded)
but never scored. ``calls`` is an append-only ledger of every model and judge call (tokens, the
prompt tokens served from the provider's cache where it reported them (NULL: not recorded), seconds),
``sessions`` one row per ``run`` process: usage and cost come from these. ``provider_resources`` holds
one row per resource a backend made on a provider's server (a Gemini context cache), written when it is
asked for and again when it is made or deleted: what a run could not delete (or a run killed with
``kill -9`` left) is named in ``scores.json`` and deleted by the next run in the directory.

The file is opened with the SQLite set-up and version rule every store shares (:mod:`mtvbench.ledger.sqlite`):
its ``meta`` table records the format (``schema_version``: the run-directory format,
:data:`~mtvbench.config.RUN_SCHEMA_VERSION`), the
mtvbench version that created it, and here also the run identity and the dataset it belongs
to. A store of another format is refused with a message naming the file and both versions, a
corrupt file with one line. A failed write (disk full, file too large, read-only) becomes one
:class:`~mtvbench.ledger.sqlite.DatabaseWriteError` and the transaction is rolled back, so the
store stays consistent.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtvbench._version import __version__
from mtvbench.config import RUN_SCHEMA_VERSION, identity_differences
from mtvbench.errors import RunDirError
from mtvbench.ledger.sqlite import (
    DatabaseFormatError,
    Schema,
    StoredRow,
    errors_named,
    get_meta,
    open_db,
    put_meta,
    transaction,
)
from mtvbench.ledger.sqlite import StoredValueError as LedgerStoredValueError
from mtvbench.records import GenerationResult, JudgeStatus, JudgeVerdict, Outcome, ProviderResource, Rejected, Usage
from mtvbench.run.identity import ResultKey
from mtvbench.util.storable import clean_text, storable_value

#: response outcomes that are final (a resumed run does not ask again)
FINAL_OUTCOMES = ("ok", "blocked", "empty")
#: judge statuses that are final
FINAL_JUDGE = ("ok", "unparsed")
#: what a stored response's outcome can be (final, or ``error``: asked again)
RESPONSE_OUTCOMES: tuple[str, ...] = typing.get_args(Outcome)
#: what a call of the ledger can end as (a response's outcome or a judge run's status)
OUTCOMES = tuple(dict.fromkeys((*RESPONSE_OUTCOMES, *typing.get_args(JudgeStatus))))
#: the roles of the ledger's calls
ROLES = ("model", "judge")

class RunStoreError(DatabaseFormatError, RunDirError):
    """A store.sqlite that cannot be read as a run store (also a :class:`~mtvbench.errors.RunDirError`)."""


def _reread_reply(raw: list[str]) -> list[tuple[str, str]] | None:
    """The ``authors`` protocol's reading of the last raw reply (its keys and values), storable; None when
    it has none."""
    from mtvbench.protocol.authors import read_reply

    if not raw:
        return None
    reading = read_reply(raw[-1])
    return None if isinstance(reading, Rejected) else storable_value(reading.reply)[0]


SCHEMA = Schema(
    kind="run store", refusal=RunStoreError, version=RUN_SCHEMA_VERSION, records="results",
    ddl="""
CREATE TABLE IF NOT EXISTS responses (
    turn_id TEXT NOT NULL, fingerprint TEXT NOT NULL, parts TEXT NOT NULL, prompt TEXT NOT NULL,
    text TEXT NOT NULL, raw_text TEXT NOT NULL, reasoning TEXT, outcome TEXT NOT NULL, error TEXT,
    usage TEXT NOT NULL, latency_s REAL, attempts INTEGER, created REAL NOT NULL, inputs TEXT,
    replaced_characters INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (turn_id, fingerprint));
CREATE TABLE IF NOT EXISTS verdicts (
    turn_id TEXT NOT NULL, run INTEGER NOT NULL, fingerprint TEXT NOT NULL, parts TEXT NOT NULL,
    status TEXT NOT NULL, verdicts TEXT, raw TEXT NOT NULL, attempts INTEGER, error TEXT,
    usage TEXT NOT NULL, latency_s REAL, created REAL NOT NULL, reply TEXT,
    replaced_characters INTEGER NOT NULL DEFAULT 0, reply_from_raw INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (turn_id, run, fingerprint));
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY, session INTEGER, role TEXT NOT NULL, turn_id TEXT NOT NULL, outcome TEXT NOT NULL,
    requests INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL, created REAL NOT NULL, cached_tokens INTEGER);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, ended REAL, pid INTEGER, mtvbench_version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS provider_resources (
    token TEXT PRIMARY KEY, kind TEXT NOT NULL, backend TEXT NOT NULL, url TEXT NOT NULL, name TEXT,
    created REAL NOT NULL, expires REAL, deleted REAL, error TEXT, session INTEGER);
""",
    hint="evaluate into a new --out, or use the mtvbench version that wrote this run directory",
    write_hint="free some space (or choose another --out); everything committed so far is kept in store.sqlite: "
               "run the same command again to resume")


class StoredValueError(LedgerStoredValueError, RunStoreError):
    """A value in store.sqlite that mtvbench does not write there (negative tokens, text for a number, broken
    JSON): named by table, row and column."""


class StoreMismatchError(RunDirError):
    """The run directory holds results for other settings or another dataset than the command asks for."""


class RunStore:
    """The SQLite file ``store.sqlite`` of one run directory (see the module docstring): the model's
    responses, the judge's verdicts, the ledger of calls, the run sessions and the resources made on a
    provider's server. The runner is the only code that writes results to it; scoring and the analyses read
    it. ``create=False`` opens an existing store only (for reading a finished run)."""

    FILENAME = "store.sqlite"

    def __init__(self, run_dir: Path, create: bool = True):
        self.path = Path(run_dir) / self.FILENAME
        self.session: int | None = None
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if fresh and not create:
            raise RunDirError(f"{self.path}: no run store here (is this a run directory?)")
        self.db = open_db(self.path, SCHEMA)

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    # writing ----------------------------------------------------------------------------
    def _writing(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One committed transaction; any SQLite failure -> rollback and one clear error (ledger.sqlite)."""
        return transaction(self.db, self.path, SCHEMA)

    def _put_meta(self, values: dict[str, Any]) -> None:
        with self._writing() as db:
            put_meta(db, values)

    # meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        """A meta value; one that is not JSON is a :class:`StoredValueError` naming the row."""
        with errors_named(self.path, SCHEMA, writing=False):
            try:
                return get_meta(self.db, key)
            except (ValueError, RecursionError):
                raise StoredValueError(f"{self.path}: table meta, row '{key}', column value: not JSON",
                                       hint=SCHEMA.hint) from None

    def set_meta(self, key: str, value: Any) -> None:
        """Write one meta value (JSON) in its own committed transaction."""
        self._put_meta({key: value})

    def holds_results(self) -> bool:
        """Whether any call ever gave a result here: a final response (answered, blocked, empty) or a final
        verdict. A directory whose every call failed (a server that refused the model name) holds none."""
        with errors_named(self.path, SCHEMA, writing=False):
            marks = ",".join("?" * len(FINAL_OUTCOMES))
            answered = self.db.execute(f"SELECT 1 FROM responses WHERE outcome IN ({marks}) LIMIT 1",
                                       FINAL_OUTCOMES).fetchone()
            marks = ",".join("?" * len(FINAL_JUDGE))
            judged = self.db.execute(f"SELECT 1 FROM verdicts WHERE status IN ({marks}) LIMIT 1",
                                     FINAL_JUDGE).fetchone()
        return answered is not None or judged is not None

    def check_identity(self, identity: dict[str, Any]) -> str | None:
        """A run directory belongs to one model/judge/context/frames/generation/tasks setting
        (:func:`mtvbench.config.identity_differences`); the rest of the identity (the model's backend
        options, absent in a run directory made before they were recorded) is stored as it is now.

        A directory that holds no result (:meth:`holds_results`: every call failed) is not locked to the
        settings it was tried with: it takes the new ones, and the earlier settings are kept in the meta
        table (``earlier_identities``) beside the failed calls, whose usage stays counted. Returns a note
        then."""
        stored = self.get_meta("identity")
        current = json.loads(json.dumps(identity, sort_keys=True))
        if stored is not None and not isinstance(stored, dict):
            raise StoredValueError(f"{self.path}: table meta, row 'identity', column value: not a mapping of "
                                   "settings", hint=SCHEMA.hint)
        if stored is None:
            self.set_meta("identity", identity)
            return None
        diff = identity_differences(stored, current)
        if diff and self.holds_results():
            raise StoreMismatchError(
                f"{self.path.parent}: this run directory holds results for other settings "
                f"({', '.join(diff)} differ); use another --out or the original settings")
        if diff:
            earlier = [*(self.get_meta("earlier_identities") or []), {"identity": stored, "until": time.time()}]
            self._put_meta({"identity": current, "earlier_identities": earlier})
            return (f"no call had succeeded here under the earlier settings ({', '.join(diff)} differ): the run "
                    "directory now holds these settings; the failed calls stay counted in the usage, their "
                    "settings kept in store.sqlite")
        if stored != current:  # recorded, not refused: the fingerprints ask again what it changed
            self.set_meta("identity", current)
        return None

    def check_dataset(self, root: Path, dialogue_ids: list[str]) -> str | None:
        """One dataset per run directory. Accepted: the same data root (its dialogues may have been
        edited, added or removed, as long as some are shared), or the same dialogue ids under
        another root (a moved copy). Refused: another root with other dialogue ids, or no shared
        dialogue at all. Returns a note when the data moved."""
        stored = self.get_meta("dataset")
        current = {"root": str(root), "dialogue_ids": sorted(dialogue_ids)}
        if stored is None:
            self.set_meta("dataset", current)
            return None
        if not (isinstance(stored, dict) and isinstance(stored.get("root"), str)
                and isinstance(stored.get("dialogue_ids"), list)
                and all(isinstance(i, str) for i in stored["dialogue_ids"])):
            raise StoredValueError(f"{self.path}: table meta, row 'dataset', column value: not a dataset record "
                                   "(root and dialogue_ids)", hint=SCHEMA.hint)
        old_ids, new_ids = set(stored["dialogue_ids"]), set(current["dialogue_ids"])
        same_root = stored["root"] == current["root"]
        shared = len(old_ids & new_ids)
        if (same_root and shared) or old_ids == new_ids:
            self.set_meta("dataset", current)
            if not same_root:
                return f"the dataset moved from {stored['root']} to {root} (same dialogues): results are kept"
            return None
        raise StoreMismatchError(
            f"{self.path.parent}: this run directory holds results for the dataset at {stored['root']} "
            f"({len(old_ids)} dialogues); {root} has {len(new_ids)} dialogues, {shared} of them shared: "
            "a different dataset", hint="use another --out for another dataset")

    # sessions ---------------------------------------------------------------------------
    def begin_session(self) -> None:
        """Record the start of this ``run`` process; the calls stored from now on are counted under it."""
        with self._writing() as db:
            cur = db.execute("INSERT INTO sessions (started, pid, mtvbench_version) VALUES (?,?,?)",
                             (time.time(), os.getpid(), __version__))
        self.session = cur.lastrowid

    def end_session(self) -> None:
        """Record the end of this ``run`` process (a process killed before this leaves its end empty)."""
        if self.session is not None:
            with self._writing() as db:
                db.execute("UPDATE sessions SET ended=? WHERE id=?", (time.time(), self.session))

    # responses --------------------------------------------------------------------------
    def put_response(self, turn_id: str, prompt: str, res: GenerationResult, key: ResultKey) -> None:
        """Commit the model's result for one turn, under the fingerprint of what produced it (``key``), and
        its line in the ledger of calls, in one transaction. A row of the same turn and fingerprint (a
        failed call asked again) is replaced; rows of other fingerprints are kept, never scored."""
        now = time.time()
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses (turn_id, fingerprint, parts, prompt, text, raw_text, reasoning, "
                "outcome, error, usage, latency_s, attempts, created, inputs, replaced_characters) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (turn_id, key.fingerprint, json.dumps(key.parts, sort_keys=True), clean_text(prompt),
                 clean_text(res.text), clean_text(res.raw_text), clean_text(res.reasoning), res.outcome,
                 clean_text(res.error), res.usage.model_dump_json(), res.latency_s, res.attempts, now,
                 json.dumps(res.inputs, sort_keys=True) if res.inputs is not None else None,
                 res.replaced_characters))
            self._ledger(db, "model", turn_id, res.outcome, res.attempts, res.usage, res.latency_s, now)

    def _ledger(self, db: sqlite3.Connection, role: str, turn_id: str, outcome: str, requests: int, usage: Usage,
                latency_s: float, now: float) -> None:
        db.execute("INSERT INTO calls (session, role, turn_id, outcome, requests, prompt_tokens, completion_tokens,"
                   " latency_s, created, cached_tokens) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (self.session, role, turn_id, outcome, requests, usage.prompt_tokens, usage.completion_tokens,
                    latency_s or 0.0, now, usage.cached_tokens))

    def _rows(self, table: str, sql: str) -> Iterator[StoredRow]:
        """The rows of ``sql`` (its first column the rowid), each checked as it is read (:class:`StoredRow`)."""
        cur = self._read(sql)
        cols = [c[0] for c in cur.description][1:]
        for rowid, *values in cur.fetchall():
            yield StoredRow(self.path, table, rowid, dict(zip(cols, values)), StoredValueError, SCHEMA.hint)

    def response_rows(self, details: bool = True) -> list[dict[str, Any]]:
        """Every stored response row (current, superseded and failed), its values checked. Without ``details``
        only what scoring and the report read (turn id, fingerprint, text, outcome, created, the characters
        replaced): not the prompt, the raw reply, the parts or the usage, which a report over many runs would
        read and parse for nothing."""
        if not details:
            return [{"turn_id": row.text("turn_id"), "fingerprint": row.text("fingerprint"), "text": row.text("text"),
                     "outcome": row.choice("outcome", RESPONSE_OUTCOMES), "created": row.time("created"),
                     "replaced_characters": row.count("replaced_characters")}
                    for row in self._rows("responses", "SELECT rowid, turn_id, fingerprint, text, outcome, created, "
                                                       "replaced_characters FROM responses ORDER BY created")]
        out = []
        for row in self._rows("responses", "SELECT rowid, * FROM responses ORDER BY created"):
            usage = row.json("usage", dict)
            try:
                Usage.model_validate(usage)
            except ValidationError:
                raise row.fail("usage", "the tokens of a call") from None
            if any(isinstance(v, bool) or (v is not None and (not isinstance(v, int) or v < 0))
                   for v in usage.values()):
                raise row.fail("usage", "the tokens of a call (counts >= 0)")
            out.append({"turn_id": row.text("turn_id"), "fingerprint": row.text("fingerprint"),
                        "parts": row.json("parts", dict), "prompt": row.text("prompt"), "text": row.text("text"),
                        "raw_text": row.text("raw_text"), "reasoning": row.text("reasoning", null=True),
                        "outcome": row.choice("outcome", RESPONSE_OUTCOMES), "error": row.text("error", null=True),
                        "usage": usage,
                        "latency_s": row.seconds("latency_s", null=True), "attempts": row.count("attempts", null=True),
                        "created": row.time("created"), "inputs": row.json("inputs", dict, null=True),
                        "replaced_characters": row.count("replaced_characters")})
        return out

    def responses(self) -> dict[str, dict[str, Any]]:
        """The latest stored response per turn (for inspection; scoring uses only matching rows)."""
        return {rec["turn_id"]: rec for rec in self.response_rows()}

    # verdicts ---------------------------------------------------------------------------
    def put_verdict(self, turn_id: str, v: JudgeVerdict, key: ResultKey) -> None:
        """Commit one judge run's verdict for a turn, under the fingerprint of what was judged (``key``), and
        its line in the ledger of calls, in one transaction. A reply that is the ``authors`` protocol's reading
        of the last raw reply is not stored a second time: ``reply_from_raw`` marks it, and it is read again
        from ``raw`` when the row is read, so a 3 MB reply is stored once."""
        now = time.time()
        raw = storable_value(v.raw)[0]
        reply = None if v.reply is None else [list(kv) for kv in storable_value(v.reply)[0]]
        from_raw = reply is not None and _reread_reply(raw) == [tuple(kv) for kv in reply]
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO verdicts (turn_id, run, fingerprint, parts, status, verdicts, raw, attempts, "
                "error, usage, latency_s, created, reply, replaced_characters, reply_from_raw) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (turn_id, v.run, key.fingerprint, json.dumps(key.parts, sort_keys=True), v.status,
                 json.dumps(v.verdicts) if v.verdicts is not None else None, json.dumps(raw), v.attempts,
                 clean_text(v.error), v.usage.model_dump_json(), v.latency_s, now,
                 None if reply is None or from_raw else json.dumps(reply), v.replaced_characters, int(from_raw)))
            self._ledger(db, "judge", turn_id, v.status, v.attempts, v.usage, v.latency_s, now)

    def verdict_rows(self) -> list[dict[str, Any]]:
        """Every stored verdict row, its values checked; ``verdict`` holds the :class:`JudgeVerdict`. Always
        read whole: the protocol effects read the raw replies, and a reply stored once is read again from them."""
        out = []
        readings: dict[str, list[tuple[str, str]] | None] = {}  # by the last reply's text: a judge repeats its replies

        def reread(raw: list[Any]) -> list[tuple[str, str]] | None:
            last = raw[-1] if raw else None
            if not isinstance(last, str):  # no reply (or not text: the raw column's check names it)
                return None
            if last not in readings:
                readings[last] = _reread_reply(raw)
            return readings[last]

        for row in self._rows("verdicts", "SELECT rowid, turn_id, run, fingerprint, parts, status, verdicts, raw, "
                                          "attempts, error, usage, latency_s, created, reply, replaced_characters, "
                                          "reply_from_raw FROM verdicts ORDER BY created"):
            raw = row.json("raw", list)
            from_raw = bool(row.count("reply_from_raw"))
            fields = {"run": row.count("run"), "status": row.text("status"),
                      "verdicts": row.json("verdicts", dict, null=True), "raw": raw,
                      "attempts": row.count("attempts", null=True) or 0, "error": row.text("error", null=True),
                      "usage": row.json("usage", dict), "latency_s": row.seconds("latency_s", null=True) or 0.0,
                      "reply": reread(raw) if from_raw else row.json("reply", list, null=True),
                      "replaced_characters": row.count("replaced_characters")}
            try:
                v = JudgeVerdict.model_validate(fields)
            except ValidationError as e:
                column = str(e.errors()[0]["loc"][0])
                raise row.fail(column, f"a stored judge run ({e.errors()[0]['msg']})") from None
            if any(n is not None and n < 0 for n in v.usage.model_dump().values()):
                raise row.fail("usage", "the tokens of a call (counts >= 0)")
            out.append({"turn_id": row.text("turn_id"), "run": v.run, "fingerprint": row.text("fingerprint"),
                        "parts": row.json("parts", dict), "verdict": v, "created": row.time("created")})
        return out

    # usage ------------------------------------------------------------------------------
    def call_rows(self) -> list[dict[str, Any]]:
        """The ledger of calls, its values checked (tokens and requests counts, seconds finite and >= 0)."""
        out = []
        for row in self._rows("calls", "SELECT id, role, outcome, requests, prompt_tokens, completion_tokens, "
                                       "latency_s, created, session, cached_tokens FROM calls ORDER BY id"):
            out.append({"role": row.choice("role", ROLES), "outcome": row.choice("outcome", OUTCOMES),
                        "requests": row.count("requests"),
                        "prompt_tokens": row.count("prompt_tokens"),
                        "completion_tokens": row.count("completion_tokens"), "latency_s": row.seconds("latency_s"),
                        "created": row.time("created"), "session": row.count("session", null=True),
                        "cached_tokens": row.count("cached_tokens", null=True)})
        return out

    # resources on a provider's server ----------------------------------------------------
    def record_resource(self, resource: ProviderResource) -> None:
        """Write (or write over) the record of one resource a backend made on a provider's server."""
        r = resource
        with self._writing() as db:
            db.execute("INSERT OR REPLACE INTO provider_resources (token, kind, backend, url, name, created, expires, "
                       "deleted, error, session) VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (r.token, r.kind, r.backend, r.url, r.name, r.created, r.expires, r.deleted, r.error,
                        self.session))

    def resources_left(self, now: float | None = None) -> list[ProviderResource]:
        """The resources recorded as made and not deleted whose expiry has not passed at ``now`` (None: all
        of them, expired or not), oldest first."""
        cur = self._read("SELECT token, kind, backend, url, name, created, expires, deleted, error "
                         "FROM provider_resources WHERE deleted IS NULL ORDER BY created")
        cols = [c[0] for c in cur.description]
        rows = [ProviderResource(**dict(zip(cols, row))) for row in cur.fetchall()]
        return [r for r in rows if now is None or r.expires is None or r.expires > now]

    def session_rows(self) -> list[dict[str, Any]]:
        """One row per run session, its times checked."""
        return [{"id": row.row, "started": row.time("started"), "ended": row.time("ended", null=True)}
                for row in self._rows("sessions", "SELECT id, started, ended FROM sessions ORDER BY id")]

    # reading ----------------------------------------------------------------------------
    def _read(self, sql: str) -> sqlite3.Cursor:
        with errors_named(self.path, SCHEMA, writing=False):
            return self.db.execute(sql)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[RunStore]:
        """One read transaction: every read inside sees the same committed state, even while a
        run writes (WAL readers are not blocked and do not see later commits)."""
        self._read("BEGIN")
        try:
            yield self
        finally:
            self.db.execute("ROLLBACK")
