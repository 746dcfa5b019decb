"""The one SQLite file that holds every review decision (one transaction per decision).

The file has its own tables and uses the one SQLite set-up and version rule of
:mod:`mtvbench.ledger.sqlite` (WAL, its format in the ``meta`` table, errors naming the file).

Several annotators (web app threads, the ``build review`` command line, other processes)
write to the same file at once: each decision is one ``BEGIN IMMEDIATE`` transaction that
checks the item's state and records the decision, so two annotators posting at once are
serialised and a third cannot take a slot the first two already hold. Nothing is kept only
in memory: a restart (or a killed process) loses no acknowledged decision.

Tables: ``items`` (the dialogues under review: id, order, task, video, current content
hash, active), ``reviews`` (one row per item, content hash and annotator; a later decision
replaces the earlier one), ``adjudications`` (the senior's decision per item and content
hash), ``claims`` (which annotator opened which item when: the queue hands an item to at
most two annotators, and the time to decide is measured from the claim), ``history`` (every
decision ever made, append-only: the audit trail), ``users`` (names, roles and the
SHA-256 of their access tokens; tokens themselves are never stored) and ``signing`` (a
per-name signing epoch, part of every signed video URL: removing a user or replacing their
token moves it on, so the links already handed out stop working at once).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.errors import InputError
from mtvbench.ledger.keys import parts_digest
from mtvbench.ledger.sqlite import Schema, connect, open_db, transaction
from mtvbench.review.model import (
    ROLES,
    Annotation,
    Edit,
    ReviewConflictError,
    ReviewError,
    ReviewItem,
    Role,
    Status,
    UnknownItemError,
    check_decision,
    check_name,
    status_of,
)

SCHEMA_VERSION = 1
#: an annotator's claim on an item they opened but did not decide frees its slot after this long
CLAIM_TTL_S = 3600.0
STORE_NAME = "review.sqlite"

SCHEMA = Schema(
    kind="review store", version=SCHEMA_VERSION, records="the decision", unversioned=SCHEMA_VERSION,
    ddl="""
CREATE TABLE IF NOT EXISTS items(
  id TEXT PRIMARY KEY, pos INTEGER NOT NULL, task TEXT NOT NULL, video TEXT NOT NULL, event TEXT NOT NULL,
  content_hash TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS reviews(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, annotator TEXT NOT NULL, decision TEXT NOT NULL,
  edits TEXT NOT NULL, comment TEXT NOT NULL, first_at TEXT NOT NULL, at TEXT NOT NULL, seconds REAL,
  PRIMARY KEY(item_id, content_hash, annotator));
CREATE TABLE IF NOT EXISTS adjudications(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, senior TEXT NOT NULL, decision TEXT NOT NULL,
  edits TEXT NOT NULL, comment TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY(item_id, content_hash));
CREATE TABLE IF NOT EXISTS claims(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, annotator TEXT NOT NULL, opened_at REAL NOT NULL,
  PRIMARY KEY(item_id, content_hash, annotator));
CREATE TABLE IF NOT EXISTS history(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, item_id TEXT NOT NULL, content_hash TEXT NOT NULL,
  who TEXT NOT NULL, action TEXT NOT NULL, decision TEXT NOT NULL, edits TEXT NOT NULL, comment TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users(
  name TEXT PRIMARY KEY, role TEXT NOT NULL, token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS signing(name TEXT PRIMARY KEY, epoch INTEGER NOT NULL);
""",
    hint="open it with the mtvbench version that wrote it, or choose another file with --store FILE",
    write_hint="choose another place with --store FILE (or free some space); no decision was lost before this one")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def token_digest(token: str) -> str:
    """SHA-256 of an access token (what ``users.token_sha256`` holds)."""
    return parts_digest((token,))


class Principal(BaseModel):
    """Who makes a request: a name and a role."""

    name: str
    role: Role


class UserInfo(BaseModel):
    name: str
    role: Role
    created_at: str


class ItemState(BaseModel):
    """The decisions that count for an item: those made on its current content."""

    id: str
    content_hash: str
    reviews: list[Annotation] = Field(default_factory=list)
    adjudication: Annotation | None = None
    #: annotator -> when they opened the item (epoch seconds)
    claims: dict[str, float] = Field(default_factory=dict)

    @property
    def status(self) -> Status:
        return status_of(self.reviews, self.adjudication)

    def review_of(self, who: str) -> Annotation | None:
        return next((r for r in self.reviews if r.annotator == who), None)

    def holders(self, now: float, ttl: float = CLAIM_TTL_S) -> set[str]:
        """Annotators who decided the item or hold a live claim on it."""
        live = {a for a, t in self.claims.items() if now - t < ttl}
        return {r.annotator for r in self.reviews} | live


class ItemRow(BaseModel):
    id: str
    pos: int
    task: str
    video: str
    event: str
    content_hash: str
    active: bool


class HistoryEvent(BaseModel):
    """One decision as it was made (the audit trail keeps replaced and outdated ones too)."""

    seq: int
    at: str
    item_id: str
    content_hash: str
    who: str
    action: str  # "review" | "adjudicate"
    decision: str
    comment: str
    edits: list[Edit]


def _ann(row: sqlite3.Row, who_col: str = "annotator") -> Annotation:
    return Annotation(annotator=row[who_col], decision=row["decision"], comment=row["comment"], at=row["at"],
                      edits=[Edit.model_validate(e) for e in json.loads(row["edits"])],
                      seconds=row["seconds"] if who_col == "annotator" else None)


def _edits_json(edits: list[Edit]) -> str:
    return json.dumps([e.model_dump() for e in edits], ensure_ascii=False)


class ReviewStore:
    """Decisions on the items of one review source; see the module docstring."""

    def __init__(self, path: Path | str, *, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise InputError(f"{self.path}: no review store here (nothing has been reviewed yet)")
        open_db(self.path, SCHEMA, threads=True).close()

    # ------------------------------------------------------------------ plumbing
    def _connect(self) -> sqlite3.Connection:
        db = connect(self.path, SCHEMA, threads=True)
        db.row_factory = sqlite3.Row
        return db

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction on its own connection (``BEGIN IMMEDIATE`` for a decision: module doc)."""
        db = self._connect()
        try:
            with transaction(db, self.path, SCHEMA, write=write):
                yield db
        finally:
            db.close()

    # ------------------------------------------------------------------ items
    def sync(self, items: list[ReviewItem]) -> None:
        """Make the store's item list match ``items`` (order, content hashes); items no longer
        there become inactive (their decisions stay). Decisions an item carries (the
        ``review_queue.json`` of earlier mtvbench versions) are imported once."""
        with self._tx(write=False) as db:
            have = {r["id"]: tuple(r) for r in db.execute(
                "SELECT id, pos, task, video, event, content_hash, active FROM items")}
        want = {it.id: (it.id, pos, it.task.value, it.video, it.event, it.content_hash, 1)
                for pos, it in enumerate(items)}
        legacy = [it for it in items if it.annotations or it.adjudication is not None]
        stale = [i for i, row in have.items() if i not in want and row[6]]
        if not legacy and not stale and all(have.get(i) == row for i, row in want.items()):
            return
        with self._tx() as db:
            for row in want.values():
                if have.get(row[0]) != row:
                    db.execute("INSERT INTO items(id, pos, task, video, event, content_hash, active) "
                               "VALUES(?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET pos=excluded.pos, "
                               "task=excluded.task, video=excluded.video, event=excluded.event, "
                               "content_hash=excluded.content_hash, active=1", row)
            for i in stale:
                db.execute("UPDATE items SET active=0 WHERE id=?", (i,))
            for it in legacy:
                self._import_legacy(db, it)

    def _import_legacy(self, db: sqlite3.Connection, it: ReviewItem) -> None:
        for a in it.annotations:
            cur = db.execute("INSERT OR IGNORE INTO reviews VALUES(?,?,?,?,?,?,?,?,NULL)",
                             (it.id, it.content_hash, a.annotator, a.decision, _edits_json(a.edits), a.comment,
                              a.at or now_iso(), a.at or now_iso()))
            if cur.rowcount:
                self._log(db, it.id, it.content_hash, a.annotator, "review", a, at=a.at)
        a = it.adjudication
        if a is not None:
            cur = db.execute("INSERT OR IGNORE INTO adjudications VALUES(?,?,?,?,?,?,?)",
                             (it.id, it.content_hash, a.annotator, a.decision, _edits_json(a.edits), a.comment,
                              a.at or now_iso()))
            if cur.rowcount:
                self._log(db, it.id, it.content_hash, a.annotator, "adjudicate", a, at=a.at)

    def rows(self, active_only: bool = True) -> list[ItemRow]:
        with self._tx(write=False) as db:
            sql = "SELECT * FROM items" + (" WHERE active=1" if active_only else "") + " ORDER BY active DESC, pos"
            return [ItemRow(**dict(r)) for r in db.execute(sql)]

    # ------------------------------------------------------------------ state
    def _states(self, db: sqlite3.Connection, current: dict[str, str]) -> dict[str, ItemState]:
        out = {i: ItemState(id=i, content_hash=h) for i, h in current.items()}
        for r in db.execute("SELECT * FROM reviews ORDER BY rowid"):
            st = out.get(r["item_id"])
            if st is not None and st.content_hash == r["content_hash"]:
                st.reviews.append(_ann(r))
        for r in db.execute("SELECT * FROM adjudications"):
            st = out.get(r["item_id"])
            if st is not None and st.content_hash == r["content_hash"]:
                st.adjudication = _ann(r, "senior")
        for r in db.execute("SELECT * FROM claims"):
            st = out.get(r["item_id"])
            if st is not None and st.content_hash == r["content_hash"]:
                st.claims[r["annotator"]] = r["opened_at"]
        return out

    def states(self, current: dict[str, str] | None = None) -> dict[str, ItemState]:
        """State of each item (``current``: id -> content hash; default: the active items)."""
        with self._tx(write=False) as db:
            if current is None:
                current = {r["id"]: r["content_hash"] for r in db.execute(
                    "SELECT id, content_hash FROM items WHERE active=1")}
            return self._states(db, current)

    def state(self, item_id: str, content_hash: str) -> ItemState:
        return self.states({item_id: content_hash})[item_id]

    def _current(self, db: sqlite3.Connection, item: ReviewItem, expected_hash: str | None) -> ItemState:
        row = db.execute("SELECT content_hash, active FROM items WHERE id=?", (item.id,)).fetchone()
        if row is None or not row["active"]:
            raise UnknownItemError(f"no dialogue {item.id!r} in the review queue")
        if row["content_hash"] != item.content_hash or (expected_hash and expected_hash != item.content_hash):
            raise ReviewConflictError(f"{item.id}: the dialogue changed since it was opened (content "
                                      f"{expected_hash or item.content_hash} is now {row['content_hash']}); "
                                      "reload it and decide again")
        return self._states(db, {item.id: item.content_hash})[item.id]

    # ------------------------------------------------------------------ decisions
    def record(self, item: ReviewItem, annotator: str, decision: str, edits: list[Edit] | None = None,
               comment: str = "", *, expected_hash: str | None = None, require_reason: bool = False) -> ItemState:
        """One annotator's decision (a later decision by the same annotator replaces theirs)."""
        who = check_name(annotator)
        clean = check_decision(item, decision, list(edits or []), comment, require_reason)
        with self._tx() as db:
            st = self._current(db, item, expected_hash)
            if st.adjudication is not None:
                raise ReviewConflictError(f"{item.id} was already decided by the senior annotator "
                                          f"{st.adjudication.annotator}")
            mine = st.review_of(who)
            if mine is None and len(st.reviews) >= 2:
                raise ReviewConflictError(f"{item.id} already has two annotators "
                                          f"({', '.join(r.annotator for r in st.reviews)}); a senior annotator "
                                          "decides disagreements with `review adjudicate`")
            at = now_iso()
            opened = st.claims.get(who)
            seconds = max(0.0, time.time() - opened) if opened is not None and mine is None else None
            db.execute("INSERT INTO reviews VALUES(?,?,?,?,?,?,?,?,?) "
                       "ON CONFLICT(item_id, content_hash, annotator) DO UPDATE SET decision=excluded.decision, "
                       "edits=excluded.edits, comment=excluded.comment, at=excluded.at",
                       (item.id, item.content_hash, who, decision, _edits_json(clean), comment, at, at, seconds))
            new = Annotation(annotator=who, decision=decision, comment=comment, at=at, edits=clean)  # type: ignore[arg-type]
            self._log(db, item.id, item.content_hash, who, "review", new, at=at)
            return self._states(db, {item.id: item.content_hash})[item.id]

    def adjudicate(self, item: ReviewItem, senior: str, decision: str, edits: list[Edit] | None = None,
                   comment: str = "", *, expected_hash: str | None = None, require_reason: bool = False) -> ItemState:
        """The senior annotator's final decision on an item the two annotators disagree on."""
        who = check_name(senior, "senior annotator")
        clean = check_decision(item, decision, list(edits or []), comment, require_reason)
        with self._tx() as db:
            st = self._current(db, item, expected_hash)
            if st.status != "needs_adjudication" and st.adjudication is None:
                raise ReviewConflictError(f"{item.id} is {st.status}: adjudication is only for disagreements")
            if who in {r.annotator for r in st.reviews}:
                raise ReviewError(f"{who} annotated {item.id}; the senior annotator must be someone else")
            at = now_iso()
            db.execute("INSERT OR REPLACE INTO adjudications VALUES(?,?,?,?,?,?,?)",
                       (item.id, item.content_hash, who, decision, _edits_json(clean), comment, at))
            new = Annotation(annotator=who, decision=decision, comment=comment, at=at, edits=clean)  # type: ignore[arg-type]
            self._log(db, item.id, item.content_hash, who, "adjudicate", new, at=at)
            return self._states(db, {item.id: item.content_hash})[item.id]

    def _log(self, db: sqlite3.Connection, item_id: str, h: str, who: str, action: str, a: Annotation,
             at: str = "") -> None:
        db.execute("INSERT INTO history(at, item_id, content_hash, who, action, decision, edits, comment) "
                   "VALUES(?,?,?,?,?,?,?,?)",
                   (at or now_iso(), item_id, h, who, action, a.decision, _edits_json(a.edits), a.comment))

    def history(self) -> list[HistoryEvent]:
        with self._tx(write=False) as db:
            return [HistoryEvent(seq=r["seq"], at=r["at"], item_id=r["item_id"], content_hash=r["content_hash"],
                                 who=r["who"], action=r["action"], decision=r["decision"], comment=r["comment"],
                                 edits=[Edit.model_validate(e) for e in json.loads(r["edits"])])
                    for r in db.execute("SELECT * FROM history ORDER BY seq")]

    # ------------------------------------------------------------------ queue
    def claim(self, item_id: str, who: str) -> bool:
        """Hand an item to ``who`` (start their clock) unless two others hold it; True when they hold it."""
        with self._tx() as db:
            row = db.execute("SELECT content_hash FROM items WHERE id=? AND active=1", (item_id,)).fetchone()
            if row is None:
                return False
            st = self._states(db, {item_id: row["content_hash"]})[item_id]
            return self._take(db, st, who, time.time())

    def _take(self, db: sqlite3.Connection, st: ItemState, who: str, now: float) -> bool:
        if who in st.claims or st.review_of(who) is not None:
            return True
        if st.adjudication is not None or len(st.holders(now) - {who}) >= 2:
            return False
        db.execute("INSERT OR REPLACE INTO claims VALUES(?,?,?,?)", (st.id, st.content_hash, who, now))
        st.claims[who] = now
        return True

    def next_for(self, who: str, after: str | None = None) -> str | None:
        """The item ``who`` should review next, claimed for them; None when nothing is left.

        Their own undecided claim comes first (unless ``after`` is given: then the next item
        after that one); otherwise the first item that one other annotator already holds
        (pairs complete first), then the first free one, in queue order."""
        now = time.time()
        with self._tx() as db:
            order = [(r["id"], r["content_hash"]) for r in db.execute(
                "SELECT id, content_hash FROM items WHERE active=1 ORDER BY pos")]
            states = self._states(db, dict(order))
            ids = [i for i, _ in order]
            if after is not None and after in ids:
                k = ids.index(after) + 1
                ids = ids[k:] + ids[:k - 1]
            best: tuple[int, str] | None = None
            for i in ids:
                st = states[i]
                if st.adjudication is not None or st.review_of(who) is not None:
                    continue
                others = st.holders(now) - {who}
                if len(others) >= 2:
                    continue
                if who in st.claims and after is None:
                    best = (-1, i)
                    break
                rank = 0 if others else 1
                if best is None or rank < best[0]:
                    best = (rank, i)
                    if rank == 0:
                        break
            if best is None:
                return None
            self._take(db, states[best[1]], who, now)
            return best[1]

    # ------------------------------------------------------------------ users
    def add_user(self, name: str, role: str, *, replace: bool = False) -> str:
        """Register a user and return their new access token (only its SHA-256 is stored)."""
        who = check_name(name, "user")
        if role not in ROLES:
            raise ReviewError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        token = secrets.token_urlsafe(32)
        with self._tx() as db:
            exists = db.execute("SELECT 1 FROM users WHERE name=?", (who,)).fetchone()
            if exists and not replace:
                raise ReviewError(f"user {who!r} exists already",
                                  hint="pass --replace to give them a new token (the old one stops working)")
            db.execute("INSERT OR REPLACE INTO users VALUES(?,?,?,?)", (who, role, token_digest(token), now_iso()))
            if exists:
                self._revoke_links(db, who)
        return token

    def remove_user(self, name: str) -> bool:
        """Remove a user: their token and every video link signed for them stop working."""
        with self._tx() as db:
            removed = db.execute("DELETE FROM users WHERE name=?", (name,)).rowcount > 0
            if removed:
                self._revoke_links(db, name)
            return removed

    @staticmethod
    def _revoke_links(db: sqlite3.Connection, name: str) -> None:
        db.execute("INSERT INTO signing VALUES(?, 1) ON CONFLICT(name) DO UPDATE SET epoch=epoch+1", (name,))

    def signing_epoch(self, name: str) -> int:
        """The epoch signed into ``name``'s video links (see the module docstring)."""
        with self._tx(write=False) as db:
            row = db.execute("SELECT epoch FROM signing WHERE name=?", (name,)).fetchone()
        return int(row["epoch"]) if row else 0

    def users(self) -> list[UserInfo]:
        with self._tx(write=False) as db:
            return [UserInfo(name=r["name"], role=r["role"], created_at=r["created_at"])
                    for r in db.execute("SELECT * FROM users ORDER BY name")]

    def has_users(self) -> bool:
        with self._tx(write=False) as db:
            return db.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None

    def authenticate(self, token: str) -> Principal | None:
        if not token or len(token) > 256:
            return None
        with self._tx(write=False) as db:
            row = db.execute("SELECT name, role FROM users WHERE token_sha256=?", (token_digest(token),)).fetchone()
        return Principal(name=row["name"], role=row["role"]) if row else None
