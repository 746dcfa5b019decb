"""The review store: the SQLite file that holds every review decision (one transaction per decision).

The file has its own tables and uses the shared SQLite set-up and version rule of
:mod:`mtvbench.ledger.sqlite` (WAL, its format in the ``meta`` table, errors naming the file); a file of
another format is refused, naming both. Each person's copy of an item (their draft and their decision) has a
revision number (``revisions``) that every save moves on, so that a save from a tab whose copy is older is
refused instead of overwriting.

Several annotators (web app threads, the ``build review`` command line, other processes)
write to the same file at once: each decision is one ``BEGIN IMMEDIATE`` transaction that
checks the item's state and records the decision, so two annotators posting at once are
serialised and a third cannot take a slot the first two already hold. Nothing is kept only
in memory: a restart (or a killed process) loses no acknowledged decision and no saved draft.

The rules of a decision (:meth:`ReviewStore.record`): the first two annotators' decisions count;
a later decision by one of them replaces theirs, but once both have decided (or a senior has) the
change also goes to the senior as a new disagreement (a ``changed`` referral, never silently); a
decision by anyone else on a dialogue two others decided is refused, or with ``refer=True`` (the
web app) handed to the senior with its text (a ``taken`` referral). A senior's decision settles the
open referrals; overwriting a final decision another made needs ``confirm=True``.

Tables: ``items`` (the dialogues under review: id, order, task, video, current content
hash, active), ``reviews`` (one row per item, content hash and annotator; a later decision
replaces the earlier one), ``adjudications`` (the senior's decision per item and content
hash), ``referrals`` (decisions handed to the senior, open until a senior decides), ``claims``
(which annotator opened which item when: the queue hands an item to at most two annotators),
``history`` (every decision ever made, append-only: the audit trail; ``replaced`` keeps what a
decision replaced, so that the last one can be undone), ``ratings`` (a run directory's raters: each
rater's Yes/No answers to the checklists of a dialogue's rated turns, per content hash),
``drafts`` (what a person typed on an item
and has not submitted yet, per scope, item and person), ``users`` (names, jobs (column ``role``) and the SHA-256 of
their access tokens; tokens themselves are never stored), ``signing`` (a per-name signing epoch,
part of every signed video URL: removing a user or replacing their token moves it on, so the links
already handed out stop working at once) and ``settings`` (the key video URLs are signed with, so
that links survive a restart of the server, and a run directory's rating sample: the same for every rater
and every restart). ``revisions`` (per scope, item and person: the revision of their copy, moved on by
every draft saved or dropped and every decision, rating or undo; a page sends the revision it holds and a
save from an older one is refused with the newer copy, :class:`StaleCopyError`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.errors import InputError
from mtvbench.ledger.sqlite import Schema, connect, open_db, transaction
from mtvbench.review.decisions import (
    JOBS,
    Annotation,
    Criterion,
    Edit,
    Job,
    Rating,
    Referral,
    ReviewConflictError,
    ReviewError,
    ReviewItem,
    Status,
    UnknownItemError,
    check_decision,
    check_marks,
    check_name,
    check_verdict,
    status_of,
)

SCHEMA_VERSION = 3
#: an annotator's claim on an item they opened but did not decide frees its slot after this long
CLAIM_TTL_S = 3600.0
STORE_NAME = "review.sqlite"
#: largest draft (JSON text) a person may keep per item
DRAFT_MAX = 256 * 1024
#: the notices a person gets when their decision went to the senior (they say nothing of the others' decisions)
CHANGED_NOTICE = ("both annotators had decided this dialogue: your change is recorded and goes to the senior "
                  "annotator as a new disagreement")
TAKEN_NOTICE = ("two other annotators decided this dialogue: your decision, with its edits and comment, went to "
                "the senior annotator")
ADJUDICATE_HINT = ("a senior annotator decides on the senior page of `mtvbench review serve` or with "
                   "`mtvbench build review adjudicate`")

SCHEMA = Schema(
    kind="review store", version=SCHEMA_VERSION, records="the decision",
    ddl="""
CREATE TABLE IF NOT EXISTS items(
  id TEXT PRIMARY KEY, pos INTEGER NOT NULL, task TEXT NOT NULL, video TEXT NOT NULL, event TEXT NOT NULL,
  content_hash TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS reviews(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, annotator TEXT NOT NULL, decision TEXT NOT NULL,
  edits TEXT NOT NULL, comment TEXT NOT NULL, first_at TEXT NOT NULL, at TEXT NOT NULL, seconds REAL,
  criteria TEXT, checklist TEXT, PRIMARY KEY(item_id, content_hash, annotator));
CREATE TABLE IF NOT EXISTS adjudications(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, senior TEXT NOT NULL, decision TEXT NOT NULL,
  edits TEXT NOT NULL, comment TEXT NOT NULL, at TEXT NOT NULL, criteria TEXT, checklist TEXT,
  PRIMARY KEY(item_id, content_hash));
CREATE TABLE IF NOT EXISTS referrals(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, item_id TEXT NOT NULL, content_hash TEXT NOT NULL, who TEXT NOT NULL,
  reason TEXT NOT NULL, decision TEXT NOT NULL, edits TEXT NOT NULL, comment TEXT NOT NULL, criteria TEXT,
  checklist TEXT, seconds REAL, previous TEXT, history_seq INTEGER NOT NULL, at TEXT NOT NULL, settled_at TEXT,
  settled_by TEXT);
CREATE TABLE IF NOT EXISTS claims(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, annotator TEXT NOT NULL, opened_at REAL NOT NULL,
  PRIMARY KEY(item_id, content_hash, annotator));
CREATE TABLE IF NOT EXISTS history(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, item_id TEXT NOT NULL, content_hash TEXT NOT NULL,
  who TEXT NOT NULL, action TEXT NOT NULL, decision TEXT NOT NULL, edits TEXT NOT NULL, comment TEXT NOT NULL,
  criteria TEXT, checklist TEXT, replaced TEXT);
CREATE TABLE IF NOT EXISTS drafts(
  scope TEXT NOT NULL, item_id TEXT NOT NULL, who TEXT NOT NULL, content_hash TEXT NOT NULL, data TEXT NOT NULL,
  updated_at TEXT NOT NULL, PRIMARY KEY(scope, item_id, who));
CREATE TABLE IF NOT EXISTS users(
  name TEXT PRIMARY KEY, role TEXT NOT NULL, token_sha256 TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS signing(name TEXT PRIMARY KEY, epoch INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ratings(
  item_id TEXT NOT NULL, content_hash TEXT NOT NULL, rater TEXT NOT NULL, marks TEXT NOT NULL, first_at TEXT NOT NULL,
  at TEXT NOT NULL, seconds REAL, seq INTEGER NOT NULL, PRIMARY KEY(item_id, content_hash, rater));
CREATE TABLE IF NOT EXISTS revisions(
  scope TEXT NOT NULL, item_id TEXT NOT NULL, who TEXT NOT NULL, revision INTEGER NOT NULL,
  PRIMARY KEY(scope, item_id, who));
""",
    hint="open it with the mtvbench version that wrote it, or choose another file with --store FILE",
    write_hint="choose another place with --store FILE (or free some space); no decision was lost before this one")


def now_iso() -> str:
    """The current UTC time as ISO 8601 text to the second, as the store records times."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def token_digest(token: str) -> str:
    """SHA-256 of an access token (what ``users.token_sha256`` holds)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ConfirmRequiredError(ReviewConflictError):
    """A senior's decision would overwrite a final decision someone else made: ask again with confirm."""


class StaleCopyError(ReviewConflictError):
    """A save (draft or decision) from a copy older than the person's latest one, e.g. another tab's. ``current``
    is what the page needs to show what changed: ``{"revision", "draft", "decision"}`` (JSON-able)."""

    def __init__(self, message: str, current: dict[str, Any]):
        super().__init__(message)
        self.current = current


class Principal(BaseModel):
    """Who makes a request: a name and a job."""

    name: str
    job: Job


class UserInfo(BaseModel):
    """A user as the store lists them: name, job and when they were added (never their token)."""

    name: str
    job: Job
    created_at: str


class ItemState(BaseModel):
    """The decisions that count for an item: those made on its current content. ``seq`` and ``notice``
    describe the action that produced this state (the history entry to undo; what the person is told)."""

    id: str
    content_hash: str
    reviews: list[Annotation] = Field(default_factory=list)
    adjudication: Annotation | None = None
    #: decisions handed to the senior, open and settled, in order
    referrals: list[Referral] = Field(default_factory=list)
    #: annotator -> when they opened the item (epoch seconds)
    claims: dict[str, float] = Field(default_factory=dict)
    seq: int | None = None
    notice: str | None = None

    @property
    def status(self) -> Status:
        """The item's outcome from the decisions on its current content (:func:`status_of`)."""
        return status_of(self.reviews, self.adjudication, self.referrals)

    @property
    def open_referrals(self) -> list[Referral]:
        """The decisions handed to the senior that no senior has settled yet."""
        return [r for r in self.referrals if r.settled_at is None]

    @property
    def closed(self) -> bool:
        """Both annotators decided, or a senior did: a further decision goes to the senior."""
        return self.adjudication is not None or len(self.reviews) >= 2

    def review_of(self, who: str) -> Annotation | None:
        """``who``'s decision as an annotator on the item, or None."""
        return next((r for r in self.reviews if r.annotator == who), None)

    def referral_of(self, who: str) -> Referral | None:
        """``who``'s latest decision handed to the senior."""
        return next((r for r in reversed(self.referrals) if r.annotator == who), None)

    def holders(self, now: float, ttl: float = CLAIM_TTL_S) -> set[str]:
        """Annotators who decided the item or hold a live claim on it."""
        live = {a for a, t in self.claims.items() if now - t < ttl}
        return {r.annotator for r in self.reviews} | live

    def apply_to(self, item: ReviewItem) -> ReviewItem:
        """``item`` with these decisions (what the exports and the queue listing read)."""
        item.annotations, item.adjudication, item.referrals = self.reviews, self.adjudication, self.referrals
        return item


class ItemRow(BaseModel):
    """An item as the store lists it: its id and place in the source, task, video, event, the hash of the content it
    was last synced with, and whether the source still has it."""

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
    #: "review" | "adjudicate" | "refer" (handed to the senior) | "undo"
    action: str
    decision: str
    comment: str
    edits: list[Edit]
    criteria: dict[str, Criterion] | None = None
    checklist: dict[str, str] | None = None


class Draft(BaseModel):
    """What a person typed on an item and has not submitted (the page's own JSON object)."""

    scope: str
    item_id: str
    content_hash: str
    data: dict[str, Any]
    updated_at: str
    #: the revision of the person's copy this draft is (see ``revisions`` in the module docstring)
    revision: int = 0


def _json_or_none(text: str | None) -> Any:
    return json.loads(text) if text else None


def _ann(row: sqlite3.Row, who_col: str = "annotator") -> Annotation:
    keys = row.keys()
    return Annotation(annotator=row[who_col], decision=row["decision"], comment=row["comment"], at=row["at"],
                      edits=[Edit.model_validate(e) for e in json.loads(row["edits"])],
                      seconds=row["seconds"] if "seconds" in keys else None,
                      criteria=_json_or_none(row["criteria"]), checklist=_json_or_none(row["checklist"]))


def _referral(row: sqlite3.Row) -> Referral:
    a = _ann(row, "who")
    prev = _json_or_none(row["previous"])
    return Referral(**a.model_dump(), seq=row["seq"], reason=row["reason"], settled_at=row["settled_at"],
                    previous=Annotation.model_validate(prev) if prev else None)


def _edits_json(edits: list[Edit]) -> str:
    return json.dumps([e.model_dump() for e in edits], ensure_ascii=False)


def _dump(obj: Any) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    elif isinstance(obj, dict):
        obj = {k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in obj.items()}
    return json.dumps(obj, ensure_ascii=False)  # in the order given: criteria and checklist items as shown


def _same(a: Annotation, b: Annotation) -> bool:
    """The same decision, edits, comment, criteria and marks (a re-submission that changes nothing)."""
    fields = {"decision", "comment", "criteria", "checklist"}
    return a.model_dump(include=fields) == b.model_dump(include=fields) and \
        [e.path + (e.value,) for e in a.edits] == [e.path + (e.value,) for e in b.edits]


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
        there become inactive (their decisions stay)."""
        with self._tx(write=False) as db:
            have = {r["id"]: tuple(r) for r in db.execute(
                "SELECT id, pos, task, video, event, content_hash, active FROM items")}
        want = {it.id: (it.id, pos, it.task.value, it.video, it.event, it.content_hash, 1)
                for pos, it in enumerate(items)}
        stale = [i for i, row in have.items() if i not in want and row[6]]
        if not stale and all(have.get(i) == row for i, row in want.items()):
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

    def rows(self, active_only: bool = True) -> list[ItemRow]:
        """The items the store knows, in the source's order (with ``active_only``, only those the source still has)."""
        with self._tx(write=False) as db:
            sql = "SELECT * FROM items" + (" WHERE active=1" if active_only else "") + " ORDER BY active DESC, pos"
            return [ItemRow(**dict(r)) for r in db.execute(sql)]

    # ------------------------------------------------------------------ state
    def _states(self, db: sqlite3.Connection, current: dict[str, str]) -> dict[str, ItemState]:
        out = {i: ItemState(id=i, content_hash=h) for i, h in current.items()}

        def rows(sql: str) -> Iterator[tuple[ItemState, sqlite3.Row]]:
            for r in db.execute(sql):
                st = out.get(r["item_id"])
                if st is not None and st.content_hash == r["content_hash"]:
                    yield st, r

        for st, r in rows("SELECT * FROM reviews ORDER BY rowid"):
            st.reviews.append(_ann(r))
        for st, r in rows("SELECT * FROM adjudications"):
            st.adjudication = _ann(r, "senior")
        for st, r in rows("SELECT * FROM referrals ORDER BY seq"):
            st.referrals.append(_referral(r))
        for st, r in rows("SELECT * FROM claims"):
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
        """The state of one item as of ``content_hash`` (decisions made on other content do not count)."""
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
               comment: str = "", *, criteria: dict[str, Criterion] | None = None,
               checklist: dict[str, str] | None = None, expected_hash: str | None = None, strict: bool = False,
               active_seconds: float | None = None, refer: bool = False, revision: int | None = None) -> ItemState:
        """One annotator's decision, under the rules of the module docstring. ``strict``: the web app's
        rules (a rejection says why; the three criteria are given). ``active_seconds``: the page's
        active time on the item (kept for the first decision). ``refer``: hand a decision that cannot
        count to the senior instead of refusing it. ``revision``: the revision of the person's copy the page
        holds (None: not checked, the command line); an older one is refused (:class:`StaleCopyError`). The
        state's ``seq`` is the history entry (None when the decision repeats the recorded decision) and ``notice``
        what the person is told."""
        who = check_name(annotator)
        clean = check_decision(item, decision, list(edits or []), comment, strict)
        crit, marks = check_verdict(item, decision, clean, criteria, checklist, required=strict)
        new = Annotation(annotator=who, decision=decision, comment=comment, at=now_iso(), edits=clean,  # type: ignore[arg-type]
                         criteria=crit, checklist=marks)
        with self._tx() as db:
            st = self._current(db, item, expected_hash)
            self._check_revision(db, "review", item.id, who, revision, st.review_of(who) or st.referral_of(who))
            mine = st.review_of(who)
            if mine is not None and _same(mine, new):
                self._settle(db, "review", item.id, who)
                return st
            notice = None
            if mine is None and st.closed:
                if not refer:
                    who_has = (f"already has two annotators ({', '.join(r.annotator for r in st.reviews)})"
                               if len(st.reviews) >= 2 else f"was already decided by the senior annotator "
                                                                f"{st.adjudication.annotator}")  # type: ignore[union-attr]
                    raise ReviewConflictError(f"{item.id} {who_has}; {ADJUDICATE_HINT}")
                new.seconds = active_seconds
                seq = self._log(db, item.id, item.content_hash, "refer", new)
                self._refer(db, item, new, "taken", seq)
                notice = TAKEN_NOTICE
            else:
                if mine is None:
                    new.seconds = self._active(st, who, active_seconds)
                else:
                    new.seconds = mine.seconds
                self._put_review(db, item, new)
                seq = self._log(db, item.id, item.content_hash, "review", new, replaced=mine)
                if mine is not None and st.closed:
                    self._refer(db, item, new, "changed", seq, previous=mine)
                    notice = CHANGED_NOTICE
            self._settle(db, "review", item.id, who)
            out = self._states(db, {item.id: item.content_hash})[item.id]
            out.seq, out.notice = seq, notice
            return out

    @staticmethod
    def _active(st: ItemState, who: str, active_seconds: float | None) -> float | None:
        """The active time of a first decision: what the page measured, never more than the time since
        the item was handed to ``who`` (when it was)."""
        if active_seconds is None:
            return None
        opened = st.claims.get(who)
        bound = max(0.0, time.time() - opened) if opened is not None else None
        return max(0.0, min(active_seconds, bound) if bound is not None else active_seconds)

    def _put_review(self, db: sqlite3.Connection, item: ReviewItem, a: Annotation) -> bool:
        at = a.at or now_iso()
        sql = ("INSERT INTO reviews(item_id, content_hash, annotator, decision, edits, comment, first_at, at, seconds, "
               "criteria, checklist) VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(item_id, content_hash, annotator) DO "
               "UPDATE SET decision=excluded.decision, edits=excluded.edits, comment=excluded.comment, at=excluded.at, "
               "seconds=excluded.seconds, criteria=excluded.criteria, checklist=excluded.checklist")
        cur = db.execute(sql, (item.id, item.content_hash, a.annotator, a.decision, _edits_json(a.edits), a.comment,
                               at, at, a.seconds, _dump(a.criteria), _dump(a.checklist)))
        return cur.rowcount > 0

    def _refer(self, db: sqlite3.Connection, item: ReviewItem, a: Annotation, reason: str, seq: int,
               previous: Annotation | None = None) -> None:
        db.execute("INSERT INTO referrals(item_id, content_hash, who, reason, decision, edits, comment, criteria, "
                   "checklist, seconds, previous, history_seq, at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (item.id, item.content_hash, a.annotator, reason, a.decision, _edits_json(a.edits), a.comment,
                    _dump(a.criteria), _dump(a.checklist), a.seconds, _dump(previous), seq, a.at))

    def adjudicate(self, item: ReviewItem, senior: str, decision: str, edits: list[Edit] | None = None,
                   comment: str = "", *, criteria: dict[str, Criterion] | None = None,
                   checklist: dict[str, str] | None = None, expected_hash: str | None = None, strict: bool = False,
                   confirm: bool = False, revision: int | None = None) -> ItemState:
        """The senior annotator's final decision: on a disagreement, a decision handed to the senior, or
        (with ``confirm``) over a final decision someone else made. It settles the open referrals.
        ``revision``: as for :meth:`record`."""
        who = check_name(senior, "senior annotator")
        clean = check_decision(item, decision, list(edits or []), comment, strict)
        crit, marks = check_verdict(item, decision, clean, criteria, checklist, required=strict)
        with self._tx() as db:
            st = self._current(db, item, expected_hash)
            own = st.adjudication if st.adjudication is not None and st.adjudication.annotator == who else None
            self._check_revision(db, "adjudicate", item.id, who, revision, own)
            if len(st.reviews) < 2 and st.adjudication is None and not st.open_referrals:
                raise ReviewConflictError(f"{item.id} is {st.status}: a senior decides once both annotators have "
                                          "decided or a decision was handed to the senior")
            if who in {r.annotator for r in st.reviews}:
                raise ReviewError(f"{who} annotated {item.id}; the senior annotator must be someone else")
            prior = st.adjudication
            if not confirm and ((prior is not None and prior.annotator != who) or
                                (prior is None and st.status in ("accepted", "rejected"))):
                by = f"{prior.annotator}'s final decision ({prior.decision}, {prior.at})" if prior is not None \
                    else f"the two annotators' agreement ({st.status})"
                raise ConfirmRequiredError(f"{item.id}: this overwrites {by}; confirm to overwrite it (the senior "
                                          "page asks; `mtvbench build review adjudicate` takes --overwrite)")
            new = Annotation(annotator=who, decision=decision, comment=comment, at=now_iso(), edits=clean,  # type: ignore[arg-type]
                             criteria=crit, checklist=marks)
            db.execute("INSERT OR REPLACE INTO adjudications(item_id, content_hash, senior, decision, edits, comment, "
                       "at, criteria, checklist) VALUES(?,?,?,?,?,?,?,?,?)",
                       (item.id, item.content_hash, who, decision, _edits_json(clean), comment, new.at, _dump(crit),
                        _dump(marks)))
            seq = self._log(db, item.id, item.content_hash, "adjudicate", new, replaced=prior)
            db.execute("UPDATE referrals SET settled_at=?, settled_by=? WHERE item_id=? AND content_hash=? AND "
                       "settled_at IS NULL", (new.at, who, item.id, item.content_hash))
            self._settle(db, "adjudicate", item.id, who)
            out = self._states(db, {item.id: item.content_hash})[item.id]
            out.seq = seq
            return out

    def undo(self, item: ReviewItem, who: str, seq: int) -> ItemState:
        """Take back ``who``'s decision ``seq`` (a review or a decision handed to the senior) when nothing
        happened on the item since: what it replaced comes back, a referral it made goes."""
        with self._tx() as db:
            self._current(db, item, None)
            last = db.execute("SELECT * FROM history WHERE item_id=? AND content_hash=? ORDER BY seq DESC LIMIT 1",
                              (item.id, item.content_hash)).fetchone()
            if last is None or last["seq"] != seq or last["who"] != who or last["action"] not in ("review", "refer"):
                raise ReviewConflictError(f"{item.id}: that decision can no longer be undone (it was not your last "
                                          "action on this dialogue, or something happened on it since)")
            if last["action"] == "review":
                prev = _json_or_none(last["replaced"])
                if prev is None:
                    db.execute("DELETE FROM reviews WHERE item_id=? AND content_hash=? AND annotator=?",
                               (item.id, item.content_hash, who))
                else:
                    self._put_review(db, item, Annotation.model_validate(prev))
            db.execute("DELETE FROM referrals WHERE history_seq=?", (seq,))
            undone = Annotation(annotator=who, decision=last["decision"], comment=last["comment"], at=now_iso(),
                                edits=[Edit.model_validate(e) for e in json.loads(last["edits"])])
            out_seq = self._log(db, item.id, item.content_hash, "undo", undone)
            self._bump(db, "review", item.id, who)
            out = self._states(db, {item.id: item.content_hash})[item.id]
            out.seq = out_seq
            return out

    def _log(self, db: sqlite3.Connection, item_id: str, h: str, action: str, a: Annotation,
             replaced: Annotation | None = None) -> int:
        return self._history(db, item_id, h, a.annotator, action, a.at or now_iso(), decision=a.decision,
                             edits=_edits_json(a.edits), comment=a.comment, criteria=_dump(a.criteria),
                             checklist=_dump(a.checklist), replaced=_dump(replaced))

    @staticmethod
    def _history(db: sqlite3.Connection, item_id: str, h: str, who: str, action: str, at: str, *,
                 decision: str = "", edits: str = "[]", comment: str = "", criteria: str | None = None,
                 checklist: str | None = None, replaced: str | None = None) -> int:
        """Append one entry to the audit trail; its ``seq``."""
        cur = db.execute("INSERT INTO history(at, item_id, content_hash, who, action, decision, edits, comment, "
                         "criteria, checklist, replaced) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                         (at, item_id, h, who, action, decision, edits, comment, criteria, checklist, replaced))
        return int(cur.lastrowid or 0)

    def history(self) -> list[HistoryEvent]:
        """Every decision ever recorded, in the order it was made (the audit trail)."""
        with self._tx(write=False) as db:
            return [HistoryEvent(seq=r["seq"], at=r["at"], item_id=r["item_id"], content_hash=r["content_hash"],
                                 who=r["who"], action=r["action"], decision=r["decision"], comment=r["comment"],
                                 edits=[Edit.model_validate(e) for e in json.loads(r["edits"])],
                                 criteria=_json_or_none(r["criteria"]), checklist=_json_or_none(r["checklist"]))
                    for r in db.execute("SELECT * FROM history ORDER BY seq")]

    # ------------------------------------------------------------------ drafts
    def save_draft(self, scope: str, item_id: str, who: str, content_hash: str, data: dict[str, Any], *,
                   revision: int | None = None) -> Draft:
        """Keep what ``who`` typed on ``item_id`` (replacing their earlier draft there). ``revision``: the
        revision of their copy the page holds (None: not checked); an older one is refused
        (:class:`StaleCopyError`, with the newer draft or decision). The draft saved has the next revision."""
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        if len(text) > DRAFT_MAX:
            raise ReviewError(f"{item_id}: the draft is larger than {DRAFT_MAX // 1024} KiB")
        at = now_iso()
        with self._tx() as db:
            row = db.execute("SELECT content_hash FROM items WHERE id=? AND active=1", (item_id,)).fetchone()
            if row is None:
                raise UnknownItemError(f"no dialogue {item_id!r} in the review queue")
            if revision is not None and revision != self._revision(db, scope, item_id, who):
                self._check_revision(db, scope, item_id, who, revision,
                                     self._decision_of(db, scope, item_id, row[0], who))
            db.execute("INSERT OR REPLACE INTO drafts VALUES(?,?,?,?,?,?)",
                       (scope, item_id, who, content_hash, text, at))
            rev = self._bump(db, scope, item_id, who)
        return Draft(scope=scope, item_id=item_id, content_hash=content_hash, data=data, updated_at=at, revision=rev)

    def draft(self, scope: str, item_id: str, who: str) -> Draft | None:
        """``who``'s unsubmitted draft on the item in ``scope``, or None."""
        with self._tx(write=False) as db:
            return self._draft(db, scope, item_id, who)

    def _draft(self, db: sqlite3.Connection, scope: str, item_id: str, who: str) -> Draft | None:
        r = db.execute("SELECT * FROM drafts WHERE scope=? AND item_id=? AND who=?", (scope, item_id, who)).fetchone()
        if r is None:
            return None
        return Draft(scope=scope, item_id=item_id, content_hash=r["content_hash"], data=json.loads(r["data"]),
                     updated_at=r["updated_at"], revision=self._revision(db, scope, item_id, who))

    def drop_draft(self, scope: str, item_id: str, who: str) -> None:
        """Throw away ``who``'s draft on the item; the revision of their copy moves on, so a tab still holding the
        draft is told when it saves."""
        with self._tx() as db:
            self._settle(db, scope, item_id, who)

    def _settle(self, db: sqlite3.Connection, scope: str, item_id: str, who: str) -> None:
        """``who``'s draft on the item is done with (a decision recorded, or dropped): it goes, and the revision
        of their copy moves on (a tab still holding the draft is told when it saves)."""
        db.execute("DELETE FROM drafts WHERE scope=? AND item_id=? AND who=?", (scope, item_id, who))
        self._bump(db, scope, item_id, who)

    # ------------------------------------------------------------------ revisions of a person's copy
    def revision(self, scope: str, item_id: str, who: str) -> int:
        """The revision of ``who``'s copy of the item in ``scope`` (0: never saved)."""
        with self._tx(write=False) as db:
            return self._revision(db, scope, item_id, who)

    @staticmethod
    def _revision(db: sqlite3.Connection, scope: str, item_id: str, who: str) -> int:
        row = db.execute("SELECT revision FROM revisions WHERE scope=? AND item_id=? AND who=?",
                         (scope, item_id, who)).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump(db: sqlite3.Connection, scope: str, item_id: str, who: str) -> int:
        db.execute("INSERT INTO revisions VALUES(?,?,?,1) ON CONFLICT(scope, item_id, who) DO UPDATE SET "
                   "revision=revision+1", (scope, item_id, who))
        return int(db.execute("SELECT revision FROM revisions WHERE scope=? AND item_id=? AND who=?",
                              (scope, item_id, who)).fetchone()[0])

    def _decision_of(self, db: sqlite3.Connection, scope: str, item_id: str, h: str, who: str) -> Any:
        """``who``'s own decision (or rating) on the item in ``scope``, or None."""
        st = self._states(db, {item_id: h})[item_id]
        if scope == "adjudicate":
            return st.adjudication if st.adjudication is not None and st.adjudication.annotator == who else None
        if scope == "rate":
            row = db.execute("SELECT * FROM ratings WHERE item_id=? AND content_hash=? AND rater=?",
                             (item_id, h, who)).fetchone()
            return self._rating_of(row) if row else None
        return st.review_of(who) or st.referral_of(who)

    def _check_revision(self, db: sqlite3.Connection, scope: str, item_id: str, who: str, revision: int | None,
                        decision: BaseModel | None) -> None:
        """Refuse a save from a copy older than ``who``'s latest (another tab's): :class:`StaleCopyError` with
        the newer draft or ``decision`` (their own, made in the other tab)."""
        if revision is None:
            return
        now = self._revision(db, scope, item_id, who)
        if revision == now:
            return
        draft = self._draft(db, scope, item_id, who)
        if draft is not None:
            what = f"a newer draft of {item_id} was saved in another tab or window at {draft.updated_at}"
        elif decision is not None:
            kind = getattr(decision, "decision", "a rating")
            what = f"you decided {item_id} in another tab or window ({kind}, at {decision.at})"  # type: ignore[attr-defined]
        else:
            what = f"your copy of {item_id} changed in another tab or window (its draft was dropped or undone)"
        raise StaleCopyError(what + ": nothing was saved from this tab; reload to see it, or keep this tab's text",
                             {"revision": now, "draft": draft.model_dump(mode="json") if draft else None,
                              "decision": decision.model_dump(mode="json") if decision is not None else None})

    # ------------------------------------------------------------------ signing key
    def signing_key(self) -> bytes:
        """The key video URLs are signed with, made once and kept in the store (links survive a restart)."""
        return bytes.fromhex(self.keep_setting("signing_key", secrets.token_hex(32)))

    def keep_setting(self, key: str, value: Any) -> Any:
        """The stored value of ``key`` (JSON-able), storing ``value`` first when there is none."""
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO settings VALUES(?, ?)",
                       (key, value if isinstance(value, str) else json.dumps(value)))
            stored = db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()[0]
        return stored if isinstance(value, str) else json.loads(stored)

    def setting(self, key: str) -> str | None:
        """The stored text of ``key`` (None: not set)."""
        with self._tx(write=False) as db:
            row = db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------------ ratings (a run directory's raters)
    def rate(self, item: ReviewItem, rater: str, marks: dict[str, str], *, expected_hash: str | None = None,
             active_seconds: float | None = None, revision: int | None = None) -> Rating:
        """``rater``'s complete rating of ``item`` (every checklist question answered Yes/No); a later
        rating by the same rater replaces theirs (the audit trail keeps both). ``active_seconds`` is
        kept for the first rating. ``revision``: as for :meth:`record`."""
        who = check_name(rater, "rater")
        clean = check_marks(item, marks)
        with self._tx() as db:
            self._current(db, item, expected_hash)
            prev = self._rating(db, item, who)
            self._check_revision(db, "rate", item.id, who, revision, prev)
            if prev is not None and prev.marks == clean:
                self._settle(db, "rate", item.id, who)
                return prev
            at = now_iso()
            seconds = prev.seconds if prev is not None else \
                (max(0.0, active_seconds) if active_seconds is not None else None)
            seq = self._history(db, item.id, item.content_hash, who, "rate", at, checklist=_dump(clean),
                                replaced=_dump(prev))
            new = Rating(rater=who, marks=clean, at=at, seconds=seconds, seq=seq)
            self._put_rating(db, item, new)
            self._settle(db, "rate", item.id, who)
            return new

    def unrate(self, item: ReviewItem, rater: str, seq: int) -> Rating | None:
        """Take back ``rater``'s rating ``seq`` while it is their latest on the item: the rating it replaced
        comes back (None: the item is unrated again)."""
        with self._tx() as db:
            self._current(db, item, None)
            mine = self._rating(db, item, rater)
            if mine is None or mine.seq != seq:
                raise ReviewConflictError(f"{item.id}: that rating can no longer be undone (it is not your latest "
                                          "rating of this dialogue)")
            prev = _json_or_none(db.execute("SELECT replaced FROM history WHERE seq=?", (seq,)).fetchone()[0])
            if prev is None:
                db.execute("DELETE FROM ratings WHERE item_id=? AND content_hash=? AND rater=?",
                           (item.id, item.content_hash, rater))
            else:
                self._put_rating(db, item, Rating.model_validate(prev))
            self._history(db, item.id, item.content_hash, rater, "undo", now_iso(), checklist=_dump(mine.marks))
            self._bump(db, "rate", item.id, rater)
            return Rating.model_validate(prev) if prev is not None else None

    @staticmethod
    def _put_rating(db: sqlite3.Connection, item: ReviewItem, r: Rating) -> None:
        """Insert ``r``, or replace the rater's rating (keeping when they first rated the item)."""
        db.execute("INSERT INTO ratings(item_id, content_hash, rater, marks, first_at, at, seconds, seq) "
                   "VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(item_id, content_hash, rater) DO UPDATE SET "
                   "marks=excluded.marks, at=excluded.at, seconds=excluded.seconds, seq=excluded.seq",
                   (item.id, item.content_hash, r.rater, _dump(r.marks), r.at, r.at, r.seconds, r.seq))

    @staticmethod
    def _rating_of(row: sqlite3.Row) -> Rating:
        return Rating(rater=row["rater"], marks=json.loads(row["marks"]), at=row["at"], seconds=row["seconds"],
                      seq=row["seq"])

    def _rating(self, db: sqlite3.Connection, item: ReviewItem, rater: str) -> Rating | None:
        row = db.execute("SELECT * FROM ratings WHERE item_id=? AND content_hash=? AND rater=?",
                         (item.id, item.content_hash, rater)).fetchone()
        return self._rating_of(row) if row else None

    def ratings(self, current: dict[str, str]) -> tuple[dict[str, list[Rating]], int]:
        """The ratings of each item made on its current content (``current``: id -> content hash), in the
        order they were first made, and how many ratings of those items were made on other content."""
        out: dict[str, list[Rating]] = {i: [] for i in current}
        other = 0
        with self._tx(write=False) as db:
            for row in db.execute("SELECT * FROM ratings ORDER BY first_at, rowid"):
                if row["item_id"] not in current:
                    continue
                if current[row["item_id"]] == row["content_hash"]:
                    out[row["item_id"]].append(self._rating_of(row))
                else:
                    other += 1
        return out, other

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
        if st.closed or len(st.holders(now) - {who}) >= 2:
            return False
        db.execute("INSERT OR REPLACE INTO claims VALUES(?,?,?,?)", (st.id, st.content_hash, who, now))
        st.claims[who] = now
        return True

    def next_for(self, who: str, after: str | None = None) -> str | None:
        """The item ``who`` should review next, claimed for them; None when nothing is left.

        Their own undecided claim comes first (unless ``after`` is given: then the next item after that one);
        otherwise the first item in queue order that they have not decided and that two others do not already
        hold (so every dialogue still goes to two annotators). Nothing else about the others counts: what
        another annotator merely opened never changes ``who``'s next dialogue (nothing of their activity shows)."""
        now = time.time()
        with self._tx() as db:
            order = [(r["id"], r["content_hash"]) for r in db.execute(
                "SELECT id, content_hash FROM items WHERE active=1 ORDER BY pos")]
            states = self._states(db, dict(order))
            ids = [i for i, _ in order]
            if after is not None and after in ids:
                k = ids.index(after) + 1
                ids = ids[k:] + ids[:k - 1]

            def open_to_me(i: str) -> bool:
                st = states[i]
                return not (st.closed or st.review_of(who) is not None or st.referral_of(who) is not None
                            or len(st.holders(now) - {who}) >= 2)

            candidates = [i for i in ids if open_to_me(i)]
            mine = [i for i in candidates if who in states[i].claims] if after is None else []
            pick = (mine or candidates or [None])[0]
            if pick is None:
                return None
            self._take(db, states[pick], who, now)
            return pick

    # ------------------------------------------------------------------ users
    def add_user(self, name: str, job: str, *, replace: bool = False) -> str:
        """Register a user and return their new access token (only its SHA-256 is stored)."""
        who = check_name(name, "user")
        if job not in JOBS:
            raise ReviewError(f"job must be one of {', '.join(JOBS)}, got {job!r}")
        token = secrets.token_urlsafe(32)
        with self._tx() as db:
            exists = db.execute("SELECT 1 FROM users WHERE name=?", (who,)).fetchone()
            if exists and not replace:
                raise ReviewError(f"user {who!r} exists already",
                                  hint="pass --replace to give them a new token (the old one stops working)")
            db.execute("INSERT OR REPLACE INTO users VALUES(?,?,?,?)", (who, job, token_digest(token), now_iso()))
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
        """Every user, by name."""
        with self._tx(write=False) as db:
            return [UserInfo(name=r["name"], job=r["role"], created_at=r["created_at"])
                    for r in db.execute("SELECT * FROM users ORDER BY name")]

    def has_users(self) -> bool:
        """Whether any user is registered (without one, the app serves only on a loopback address, where no access
        token is needed)."""
        with self._tx(write=False) as db:
            return db.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None

    def authenticate(self, token: str) -> Principal | None:
        """The user an access token belongs to, or None for an unknown, empty or overlong token (only the token's
        SHA-256 is compared)."""
        if not token or len(token) > 256:
            return None
        with self._tx(write=False) as db:
            row = db.execute("SELECT name, role FROM users WHERE token_sha256=?", (token_digest(token),)).fetchone()
        return Principal(name=row["name"], job=row["role"]) if row else None
