"""The call journal: every model reply a build stage paid for, committed the moment it arrives.

``WS/calls.sqlite`` (the shared SQLite set-up and version rule of :mod:`mtvbench.ledger.sqlite`; its format is
the workspace's: a journal of another format is refused, naming both) holds one row per reply: the video,
stage and item it was asked for, a key (:func:`request_key`: the model, the request id with its attempt
number, the prompt, the frame source and the generation settings) and the reply. A stage never
asks a request whose reply is in the journal: it reads the stored reply and parses it
again. So a killed build (even ``kill -9``) asks again at most the calls that were in
flight, a stage whose artifact is lost or stale is rebuilt from the stored replies
without asking, and only requests that really changed (another caption, another prompt,
another model) are asked.

Failed calls (``error``) are not stored: they are asked again. ``--force`` and
``--retry-failed`` mark rows *superseded* (they stay in the file, never read again), so
that those requests are asked afresh. API keys never reach the journal (only replies).
"""

from __future__ import annotations

import sqlite3
import time
import typing
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from mtvbench.ledger.keys import digest
from mtvbench.ledger.sqlite import Schema, StoredRow, errors_named, open_db, transaction
from mtvbench.records import GenerationRequest, GenerationResult, Outcome

SCHEMA = Schema(
    kind="call journal", version=2, records="replies",
    ddl="""
CREATE TABLE IF NOT EXISTS replies (
    video TEXT NOT NULL, stage TEXT NOT NULL, item TEXT NOT NULL, key TEXT NOT NULL,
    request_id TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL, raw_text TEXT NOT NULL,
    outcome TEXT NOT NULL, created REAL NOT NULL, superseded INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS replies_key ON replies (video, stage, key, superseded);
CREATE INDEX IF NOT EXISTS replies_item ON replies (video, stage, item);
""",
    hint="move the file away to start a new journal (its replies are then asked again)",
    write_hint="free some space, then run the same command again: every reply committed so far is kept")


class StoredReply(BaseModel):
    """A reply as the journal keeps it: its text, the raw text and the outcome."""

    text: str
    raw_text: str
    outcome: Outcome

    def result(self) -> GenerationResult:
        """The reply as the result a backend would have returned."""
        return GenerationResult(text=self.text, raw_text=self.raw_text, outcome=self.outcome)


def request_key(model: str, request: GenerationRequest, frames_key: str | None) -> str:
    """What identifies a request: model, id (with the attempt), prompt, frame source, generation settings
    (:func:`mtvbench.ledger.keys.digest`, the key every stored reply is saved under)."""
    g = request.generation
    return digest({"model": model, "id": request.id, "system": g.system or "", "prompt": request.prompt,
                   "frames": frames_key or "", "generation": [g.max_tokens, g.temperature, g.top_p, g.top_k],
                   "options": request.options}, length=64)


class CallJournal:
    """The call journal of a workspace (``WS/calls.sqlite``, see the module docstring), opened on first use."""

    FILENAME = "calls.sqlite"

    def __init__(self, root: Path):
        self.path = Path(root) / self.FILENAME
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_db(self.path, SCHEMA)
        return self._db

    def _run(self, sql: str, args: tuple, write: bool = False) -> sqlite3.Cursor:
        db = self._conn()
        if write:
            with transaction(db, self.path, SCHEMA):
                return db.execute(sql, args)
        with errors_named(self.path, SCHEMA, writing=False):
            return db.execute(sql, args)

    def get(self, video: str, stage: str, key: str) -> StoredReply | None:
        """The latest reply stored for ``key`` of ``stage`` on ``video`` that is not superseded, or None."""
        cur = self._run("SELECT rowid, text, raw_text, outcome FROM replies WHERE video=? AND stage=? AND key=? "
                        "AND superseded=0 ORDER BY created DESC LIMIT 1", (video, stage, key))
        found = cur.fetchone()
        if found is None:
            return None
        # read back like input: a value another program wrote there is one error naming its row and column
        row = StoredRow(self.path, "replies", found[0], dict(zip(("text", "raw_text", "outcome"), found[1:])),
                        hint=SCHEMA.hint)
        return StoredReply(text=row.text("text"), raw_text=row.text("raw_text"),
                           outcome=row.choice("outcome", typing.get_args(Outcome)))

    def put(self, video: str, stage: str, item: str, key: str, request_id: str, model: str,
            result: GenerationResult) -> None:
        """Store a reply the moment it arrives (committed at once)."""
        self._run("INSERT INTO replies (video, stage, item, key, request_id, model, text, raw_text, outcome, created)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (video, stage, item, key, request_id, model, result.text, result.raw_text,
                   result.outcome, time.time()), write=True)

    def supersede(self, video: str, stage: str, items: Iterable[str] | None = None) -> int:
        """Stop replaying the stored replies of ``items`` (all of the stage's when None); returns the count."""
        if items is None:
            return self._run("UPDATE replies SET superseded=1 WHERE video=? AND stage=? AND superseded=0",
                             (video, stage), write=True).rowcount
        n = 0
        for item in items:
            n += self._run("UPDATE replies SET superseded=1 WHERE video=? AND stage=? AND item=? AND superseded=0",
                           (video, stage, item), write=True).rowcount
        return n

    def count(self, video: str | None = None, stage: str | None = None) -> int:
        """Replies that are replayed (not superseded), optionally of one video and stage."""
        sql, args = "SELECT COUNT(*) FROM replies WHERE superseded=0", ()
        if video is not None:
            sql, args = sql + " AND video=?", (*args, video)
        if stage is not None:
            sql, args = sql + " AND stage=?", (*args, stage)
        return int(self._run(sql, args).fetchone()[0])

    def close(self) -> None:
        """Close the database file (it opens again on the next use)."""
        if self._db is not None:
            self._db.close()
            self._db = None
