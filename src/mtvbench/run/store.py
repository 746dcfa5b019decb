"""The run store: one SQLite file per run, written as results arrive.

Every model response and every judge verdict is committed the moment it exists (WAL
mode), so a killed run loses at most the calls in flight, and the next run of the same
command asks only for what is missing.

Each result row carries the fingerprint of what produced it (:mod:`mtvbench.run.identity`)
and its parts; a row whose fingerprint is no longer the expected one is kept (superseded)
but never scored. ``calls`` is an append-only ledger of every model and judge call (tokens, the
prompt tokens served from the provider's cache where it reported them (NULL: not recorded), seconds),
``sessions`` one row per ``run`` process: usage and cost come from these.

The file is opened with the one SQLite set-up and version rule (:mod:`mtvbench.ledger.sqlite`):
its ``meta`` table records the format (``schema_version``, shared with ``config.yaml``), the
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mtvbench._version import __version__
from mtvbench.config import RUN_SCHEMA_VERSION, identity_differences
from mtvbench.errors import RunDirError
from mtvbench.ledger.sqlite import (
    DatabaseFormatError,
    Schema,
    errors_named,
    get_meta,
    open_db,
    put_meta,
    transaction,
)
from mtvbench.records import GenerationResult, JudgeVerdict, Usage
from mtvbench.run.identity import ResultKey

#: response outcomes that are final (a resumed run does not ask again)
FINAL_OUTCOMES = ("ok", "blocked", "empty")
#: judge statuses that are final
FINAL_JUDGE = ("ok", "unparsed")

class RunStoreError(DatabaseFormatError, RunDirError):
    """A store.sqlite that cannot be read as a run store (also a :class:`~mtvbench.errors.RunDirError`)."""


SCHEMA = Schema(
    kind="run store", refusal=RunStoreError, version=RUN_SCHEMA_VERSION, records="results", unversioned=1,
    ddl="""
CREATE TABLE IF NOT EXISTS responses (
    turn_id TEXT NOT NULL, fingerprint TEXT NOT NULL, parts TEXT NOT NULL, prompt TEXT NOT NULL,
    text TEXT NOT NULL, raw_text TEXT NOT NULL, reasoning TEXT, outcome TEXT NOT NULL, error TEXT,
    usage TEXT NOT NULL, latency_s REAL, attempts INTEGER, created REAL NOT NULL, inputs TEXT,
    PRIMARY KEY (turn_id, fingerprint));
CREATE TABLE IF NOT EXISTS verdicts (
    turn_id TEXT NOT NULL, run INTEGER NOT NULL, fingerprint TEXT NOT NULL, parts TEXT NOT NULL,
    status TEXT NOT NULL, verdicts TEXT, raw TEXT NOT NULL, attempts INTEGER, error TEXT,
    usage TEXT NOT NULL, latency_s REAL, created REAL NOT NULL, reply TEXT,
    PRIMARY KEY (turn_id, run, fingerprint));
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY, session INTEGER, role TEXT NOT NULL, turn_id TEXT NOT NULL, outcome TEXT NOT NULL,
    requests INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, ended REAL, pid INTEGER, mtvbench_version TEXT NOT NULL);
""",
    # added within format 2 (absent: not recorded): the judge's reply; what a response's model was fed; the
    # prompt tokens a call got from the provider's prefix cache (NULL: not reported, or a call made before)
    columns=(("verdicts", "reply", "TEXT"), ("responses", "inputs", "TEXT"), ("calls", "cached_tokens", "INTEGER")),
    hint="evaluate into a new --out, or use the mtvbench version that wrote this run directory",
    write_hint="free some space (or choose another --out); everything committed so far is kept in store.sqlite: "
               "run the same command again to resume")


class StoreMismatchError(RunDirError):
    pass


class RunStore:
    FILENAME = "store.sqlite"

    def __init__(self, run_dir: Path, create: bool = True):
        self.path = Path(run_dir) / self.FILENAME
        self.session: int | None = None
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if fresh and not create:
            raise RunDirError(f"{self.path}: no run store here (is this a run directory?)")
        self.db = open_db(self.path, SCHEMA)

    def close(self) -> None:
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
        with errors_named(self.path, SCHEMA, writing=False):
            return get_meta(self.db, key)

    def set_meta(self, key: str, value: Any) -> None:
        self._put_meta({key: value})

    def check_identity(self, identity: dict[str, Any]) -> None:
        """A run directory belongs to one model/judge/context/frames/generation/tasks setting
        (:func:`mtvbench.config.identity_differences`); the rest of the identity (the model's backend
        options, absent in a run directory made before they were recorded) is stored as it is now."""
        stored = self.get_meta("identity")
        current = json.loads(json.dumps(identity, sort_keys=True))
        if stored is None:
            self.set_meta("identity", identity)
            return
        diff = identity_differences(stored, current)
        if diff:
            raise StoreMismatchError(
                f"{self.path.parent}: this run directory holds results for other settings "
                f"({', '.join(diff)} differ); use another --out or the original settings")
        if stored != current:  # recorded, not refused: the fingerprints ask again what it changed
            self.set_meta("identity", current)

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
        with self._writing() as db:
            cur = db.execute("INSERT INTO sessions (started, pid, mtvbench_version) VALUES (?,?,?)",
                             (time.time(), os.getpid(), __version__))
        self.session = cur.lastrowid

    def end_session(self) -> None:
        if self.session is not None:
            with self._writing() as db:
                db.execute("UPDATE sessions SET ended=? WHERE id=?", (time.time(), self.session))

    # responses --------------------------------------------------------------------------
    def put_response(self, turn_id: str, prompt: str, res: GenerationResult, key: ResultKey) -> None:
        now = time.time()
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses (turn_id, fingerprint, parts, prompt, text, raw_text, reasoning, "
                "outcome, error, usage, latency_s, attempts, created, inputs) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (turn_id, key.fingerprint, json.dumps(key.parts, sort_keys=True), prompt, res.text, res.raw_text,
                 res.reasoning, res.outcome, res.error, res.usage.model_dump_json(), res.latency_s,
                 res.attempts, now, json.dumps(res.inputs, sort_keys=True) if res.inputs is not None else None))
            self._ledger(db, "model", turn_id, res.outcome, res.attempts, res.usage, res.latency_s, now)

    def _ledger(self, db: sqlite3.Connection, role: str, turn_id: str, outcome: str, requests: int, usage: Usage,
                latency_s: float, now: float) -> None:
        db.execute("INSERT INTO calls (session, role, turn_id, outcome, requests, prompt_tokens, completion_tokens,"
                   " latency_s, created, cached_tokens) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (self.session, role, turn_id, outcome, requests, usage.prompt_tokens, usage.completion_tokens,
                    latency_s or 0.0, now, usage.cached_tokens))

    @staticmethod
    def _response_row(rec: dict[str, Any]) -> dict[str, Any]:
        rec["usage"] = json.loads(rec["usage"])
        rec["parts"] = json.loads(rec["parts"])
        rec["inputs"] = json.loads(rec["inputs"]) if rec.get("inputs") else None
        return rec

    def response_rows(self, details: bool = True) -> list[dict[str, Any]]:
        """Every stored response row (current, superseded and failed). Without ``details`` only what scoring
        and the report read (turn id, fingerprint, text, outcome, created): not the prompt, the raw reply,
        the parts or the usage, which a report over many runs would read and parse for nothing."""
        if not details:
            cur = self._read("SELECT turn_id, fingerprint, text, outcome, created FROM responses ORDER BY created")
            return [{"turn_id": t, "fingerprint": f, "text": x, "outcome": o, "created": c} for t, f, x, o, c in cur]
        cur = self._read("SELECT * FROM responses ORDER BY created")
        cols = [c[0] for c in cur.description]
        return [self._response_row(dict(zip(cols, row))) for row in cur.fetchall()]

    def responses(self) -> dict[str, dict[str, Any]]:
        """The latest stored response per turn (for inspection; scoring uses only matching rows)."""
        return {rec["turn_id"]: rec for rec in self.response_rows()}

    # verdicts ---------------------------------------------------------------------------
    def put_verdict(self, turn_id: str, v: JudgeVerdict, key: ResultKey) -> None:
        now = time.time()
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO verdicts (turn_id, run, fingerprint, parts, status, verdicts, raw, attempts, "
                "error, usage, latency_s, created, reply) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (turn_id, v.run, key.fingerprint, json.dumps(key.parts, sort_keys=True), v.status,
                 json.dumps(v.verdicts) if v.verdicts is not None else None, json.dumps(v.raw), v.attempts,
                 v.error, v.usage.model_dump_json(), v.latency_s, now,
                 json.dumps(v.reply) if v.reply is not None else None))
            self._ledger(db, "judge", turn_id, v.status, v.attempts, v.usage, v.latency_s, now)

    def verdict_rows(self, details: bool = True) -> list[dict[str, Any]]:
        """Every stored verdict row; ``verdict`` holds the :class:`JudgeVerdict`. Without ``details`` the
        verdict has no raw replies and no usage, and the row no parts (what only a resumed run's reasons and
        the score files read)."""
        if not details:
            cur = self._read("SELECT turn_id, run, fingerprint, status, verdicts, attempts, error, latency_s, created, "
                             "reply FROM verdicts ORDER BY created")
            return [{"turn_id": tid, "run": run, "fingerprint": fp, "created": created,
                     "verdict": JudgeVerdict(run=run, status=status, verdicts=json.loads(said) if said else None,
                                             attempts=attempts or 0, error=error, latency_s=latency or 0.0,
                                             reply=json.loads(reply) if reply else None)}
                    for tid, run, fp, status, said, attempts, error, latency, created, reply in cur]
        out = []
        cur = self._read("SELECT turn_id, run, fingerprint, parts, status, verdicts, raw, attempts, error, usage, "
                         "latency_s, created, reply FROM verdicts ORDER BY created")
        for tid, run, fp, parts, status, verdicts, raw, attempts, error, usage, latency, created, reply in cur:
            v = JudgeVerdict(run=run, status=status, verdicts=json.loads(verdicts) if verdicts else None,
                             raw=json.loads(raw), attempts=attempts or 0, error=error, usage=json.loads(usage),
                             latency_s=latency or 0.0, reply=json.loads(reply) if reply else None)
            out.append({"turn_id": tid, "run": run, "fingerprint": fp, "parts": json.loads(parts), "verdict": v,
                        "created": created})
        return out

    # usage ------------------------------------------------------------------------------
    def call_rows(self) -> list[dict[str, Any]]:
        cur = self._read("SELECT role, outcome, requests, prompt_tokens, completion_tokens, latency_s, created, "
                         "session, cached_tokens FROM calls ORDER BY id")
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def session_rows(self) -> list[dict[str, Any]]:
        cur = self._read("SELECT id, started, ended FROM sessions ORDER BY id")
        return [{"id": i, "started": s, "ended": e} for i, s, e in cur.fetchall()]

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
