"""The review web app (Starlette): annotator, senior, rater and progress pages over a JSON API.

JSON API (every answer is JSON; errors are ``{"error": "..."}`` with an HTTP status)::

    GET    /api/session                  who you are ({name, job}), the mode, the source, the criteria
    GET    /api/items[?task=&status=]    [{id, video, task, event, mine, yours, status, decisions}]
    GET    /api/items/{id}[?claim=1]     one dialogue: rounds, checklists, video URL and start, time ranges,
                                         your decision and drafts; claim=1 hands it to you when a slot is free
    POST   /api/items/{id}/review        {annotator, decision, edits, comment, criteria, checklist,
                                          content_hash, active_seconds, revision} -> {mine, yours, notice, undo}
    POST   /api/items/{id}/adjudicate    {senior, decision, edits, comment, criteria, checklist, content_hash,
                                          confirm, revision}
    POST   /api/items/{id}/rating        {rater, marks: {"3.Q1": "Yes"|"No", ...}, content_hash, active_seconds,
                                          revision} -> {mine, undo} (a run directory: every question answered)
    POST   /api/items/{id}/undo          {seq}: take back your last decision or rating (nothing happened since)
    PUT    /api/items/{id}/draft         {scope, content_hash, data, revision}: keep what you typed (GET, DELETE
                                         ?scope=) -> {draft} (with its revision)
    GET    /api/items/{id}/video         {video_url}: a freshly signed video URL (when the old one stopped working)
    GET    /api/next[?after=ID]          {id}: the next dialogue for you (claimed for you); null when none is left
    GET    /api/progress                 seniors: everything (agreement per annotator pair, Krippendorff's
                                         alpha, active time); annotators: the task sizes and their own work
    GET    /media/{video}?u=&exp=&sig=   the video file with range requests (URLs come signed from the API,
                                         valid 12 hours; removing the user or replacing their token revokes them)

What an annotator may see of an item is decided by :mod:`mtvbench.review.views` (blind double
annotation); a decision that cannot count as one of the two is handed to the senior with its text
(:meth:`ReviewStore.record` with ``refer=True``), never discarded.

Several tabs of one person: an item's detail carries ``revisions`` (scope -> the revision of the person's copy:
their draft and their decision); the pages send it with every draft and decision, and a save from an older
copy (another tab saved or decided since) is refused with 409 and ``conflict: {revision, draft, decision}``
(the newer copy), which the page shows with what changed and a choice: reload (merged) or keep this tab's text.

A run directory (``work = "rate"``, :mod:`mtvbench.review.run_source`) is served to raters instead: the
same calls answer with the rater's view (the model's answers and the checklist questions, blind to the
expected answers, the judge and the other raters), ``/api/next`` hands out the sample in order, and
``/api/progress`` reports per rater (:mod:`mtvbench.review.rating`). Each job works on one kind of source
(:data:`~mtvbench.review.decisions.WORK_JOBS`): annotators verify, raters rate, seniors follow both.

Who is asking: with users registered (``mtvbench review add-user``), or whenever the app
listens on a non-loopback address, every API call carries ``Authorization: Bearer TOKEN``
and the token decides the name and job. On loopback without users ("open mode") the
pages send the name the person typed (``X-Review-User``, URL-encoded, and ``X-Review-Job``; ``X-Review-Role``
is its old name).
A decision's ``annotator``/``senior`` must be the caller; only seniors adjudicate. No cookie
is used, so another site cannot post for a signed-in annotator (and a JSON body or a custom
header forces a CORS preflight that this app never grants); in open mode the Host header
must be a loopback name (DNS rebinding). Video URLs are signed with a key kept in the store, so
they survive a restart of the server.
"""

from __future__ import annotations

import hashlib
import hmac
import mimetypes
import threading
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mtvbench.errors import InputError, MtvbenchError
from mtvbench.review.decisions import (
    CRITERIA,
    EDITS_MAX,
    JOBS,
    TEXT_MAX,
    WORK_JOBS,
    ChecklistMark,
    Criterion,
    CriterionKey,
    Decision,
    Edit,
    PersonName,
    Rating,
    ReviewConflictError,
    ReviewError,
    ReviewItem,
    UnknownItemError,
    Verdict,
    check_name,
)
from mtvbench.review.guidelines import render_guidelines
from mtvbench.review.progress import compute_progress, own_progress
from mtvbench.review.rating import next_to_rate, own_rating, rating_progress
from mtvbench.review.source import ReviewSource
from mtvbench.review.store import ConfirmRequiredError, ItemState, Principal, ReviewStore, StaleCopyError
from mtvbench.review.views import detail, dump, rating_detail, rating_summary, summary, yours
from mtvbench.util.jsonio import loads_strict

#: largest request body (a decision with edits of a long dialogue fits many times)
MAX_BODY = 512 * 1024
#: how long a signed video URL stays valid
MEDIA_TTL_S = 12 * 3600
#: page -> its title; each page's <main> is in static/<page>.html, wrapped in static/layout.html
PAGES = {"index": "Start", "annotate": "Annotate", "senior": "Senior", "rate": "Rate", "progress": "Progress"}
#: draft scope -> the jobs that keep drafts in it (the page that writes it)
DRAFT_SCOPES: dict[str, tuple[str, ...]] = {"review": WORK_JOBS["review"], "adjudicate": ("senior",),
                                            "rate": ("rater",)}
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_SECURITY_HEADERS = {"content-security-policy": _CSP, "x-content-type-options": "nosniff",
                     "referrer-policy": "no-referrer", "x-frame-options": "DENY",
                     "cross-origin-opener-policy": "same-origin", "cross-origin-resource-policy": "same-origin"}


class DecisionBody(BaseModel):
    """What a page sends with a decision: accept, revise or reject, the edits, a comment, the three criteria and the
    checklist marks, and the content and revision of the copy it was made on (a decision on other content or an
    older copy is refused)."""

    model_config = ConfigDict(extra="forbid")

    decision: Decision
    edits: list[Edit] = Field(default_factory=list, max_length=EDITS_MAX)
    comment: str = Field(default="", max_length=TEXT_MAX)
    criteria: dict[CriterionKey, Criterion] | None = None
    checklist: dict[str, ChecklistMark] | None = Field(default=None, max_length=EDITS_MAX)
    content_hash: str | None = Field(default=None, max_length=64)
    #: the revision of the caller's copy the page holds (None: not checked)
    revision: int | None = Field(default=None, ge=0)


class ReviewBody(DecisionBody):
    """An annotator's decision, with the page's active time on the item."""

    annotator: PersonName
    #: the page's active time on the item (see :mod:`mtvbench.review.progress`)
    active_seconds: float | None = Field(default=None, ge=0, le=7 * 86400)


class AdjudicateBody(DecisionBody):
    """The senior's final decision; ``confirm`` to overwrite a final decision someone else made."""

    senior: PersonName
    #: overwrite a final decision someone else made
    confirm: bool = False


class RatingBody(BaseModel):
    """A rater's answers to the checklists of one dialogue, with the content and revision they were made on and the
    page's active time."""

    model_config = ConfigDict(extra="forbid")

    rater: PersonName
    #: "3.Q1" (round 3, question Q1) -> the rater's answer
    marks: dict[str, Verdict] = Field(max_length=EDITS_MAX)
    content_hash: str | None = Field(default=None, max_length=64)
    active_seconds: float | None = Field(default=None, ge=0, le=7 * 86400)
    revision: int | None = Field(default=None, ge=0)


class UndoBody(BaseModel):
    """Which history entry to take back."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1)


class DraftBody(BaseModel):
    """What a person typed and has not submitted, for one kind of work (``scope``), with the content and revision of
    their copy."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["review", "adjudicate", "rate"] = "review"
    content_hash: str = Field(max_length=64)
    data: dict[str, Any]
    #: the revision of the caller's copy the page holds (None: not checked)
    revision: int | None = Field(default=None, ge=0)


class ApiError(Exception):
    """A request the API refuses: the HTTP status and a message for the person."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def host_name(host_header: str) -> str:
    """The host of a Host header without its port (``[::1]:8765`` -> ``::1``)."""
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[1:h.index("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class _Guard:
    """Security headers on every answer; in open mode only loopback Host names are served."""

    def __init__(self, app: ASGIApp, trusted_hosts: frozenset[str] | None):
        self.app = app
        self.trusted = trusted_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.trusted is not None and host_name(Headers(scope=scope).get("host", "")) not in self.trusted:
            await PlainTextResponse("unknown Host: open the app through 127.0.0.1 or localhost", 421)(
                scope, receive, send)
            return
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in _SECURITY_HEADERS.items():
                    headers.setdefault(k, v)
                if api:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class ReviewApp:
    """The state behind the app: the source's items (reloaded when its files change) and the store."""

    def __init__(self, source: ReviewSource, store: ReviewStore, *, require_tokens: bool = False):
        self.source = source
        self.store = store
        self.require_tokens = require_tokens
        self.secret = store.signing_key()
        self.items: dict[str, ReviewItem] = {}
        self.videos: dict[str, Path] = {}
        self.source_error: str | None = None
        self._fp: object = None
        self._lock = threading.Lock()
        source.prepare(store)
        self.reload(force=True)

    # ------------------------------------------------------------------ items
    def reload(self, force: bool = False) -> None:
        """Re-read the source when its files changed (a re-export while the app runs)."""
        fp = self.source.fingerprint()
        if not force and fp == self._fp:
            return
        with self._lock:
            if not force and fp == self._fp:
                return
            try:
                items = self.source.load()
                self.store.sync(items)
            except MtvbenchError as e:
                if force:
                    raise
                self.source_error, self._fp = str(e), fp  # keep serving what was loaded before
                return
            self.items = {it.id: it for it in items}
            self.videos = self.source.videos()
            self.source_error, self._fp = None, fp

    def item(self, item_id: str) -> ReviewItem:
        """The item ``item_id`` as last loaded; :class:`UnknownItemError` when there is none."""
        it = self.items.get(item_id)
        if it is None:
            raise UnknownItemError(f"no dialogue {item_id!r} under review")
        return it

    def state(self, it: ReviewItem) -> ItemState:
        """The decisions that count for ``it`` (those made on its current content)."""
        return self.store.state(it.id, it.content_hash)

    # ------------------------------------------------------------------ who
    def token_mode(self) -> bool:
        """Whether requests must sign in with an access token: when the server is not on a loopback address, or once
        the store has users."""
        return self.require_tokens or self.store.has_users()

    def who(self, request: Request) -> Principal:
        """The person making ``request``, refused (403) unless their job does this server's kind of work."""
        me = self._who(request)
        work = self.source.work
        if me.job not in WORK_JOBS[work]:
            what = "rates a run's answers" if work == "rate" else f"verifies the dialogues of a {self.source.kind}"
            raise ApiError(403, f"{me.name} is a{'n' if me.job[0] in 'aeiou' else ''} {me.job}; this server {what}: "
                                f"sign in as {' or '.join(WORK_JOBS[work])}")
        return me

    def _who(self, request: Request) -> Principal:
        if self.token_mode():
            scheme, _, token = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise ApiError(401, "sign in with your login link (the annotation lead makes one with "
                                    "`mtvbench review add-user`)")
            p = self.store.authenticate(token.strip())
            if p is None:
                raise ApiError(401, "unknown or revoked token: ask the annotation lead for a new login link")
            return p
        raw = request.headers.get("x-review-user", "")
        if not raw:
            raise ApiError(401, "say who you are: enter your name on the start page")
        job = request.headers.get("x-review-job") or request.headers.get("x-review-role", "annotator")
        if job not in JOBS:
            raise ApiError(401, f"job must be one of {', '.join(JOBS)}")
        try:
            return Principal(name=check_name(unquote(raw)), job=job)  # type: ignore[arg-type]
        except ReviewError as e:
            raise ApiError(401, e.message) from None

    # ------------------------------------------------------------------ video links
    def media_url(self, video: str, me: Principal) -> str | None:
        """A signed link to ``video`` for ``me``, valid for 12 hours; None when the source has no such video file."""
        path = self.videos.get(video)
        if path is None or not path.is_file():
            return None
        exp = int(time.time()) + MEDIA_TTL_S
        return f"/media/{quote(video)}?u={quote(me.name)}&exp={exp}&sig={self._sign(video, me.name, exp)}"

    def _sign(self, video: str, who: str, exp: int) -> str:
        """The signature of a video link: the video, the user, the user's signing epoch in the store
        (removing the user moves it on, which revokes the link) and the expiry."""
        epoch = self.store.signing_epoch(who)
        return hmac.new(self.secret, f"{video}\x00{who}\x00{epoch}\x00{exp}".encode(), hashlib.sha256).hexdigest()

    def media_allowed(self, video: str, who: str, exp: str, sig: str) -> bool:
        """Whether a video link is one this server signed for ``who`` and has not expired or been revoked."""
        if not exp.isdigit() or int(exp) < time.time() or len(sig) != 64:
            return False
        return hmac.compare_digest(self._sign(video, who, int(exp)), sig)

    # ------------------------------------------------------------------ views
    def drafts(self, it: ReviewItem, me: Principal) -> dict[str, Any]:
        """``me``'s drafts on ``it``, by kind of work."""
        out = {}
        for scope, jobs in DRAFT_SCOPES.items():
            if me.job in jobs and (d := self.store.draft(scope, it.id, me.name)) is not None:
                out[scope] = d.model_dump(mode="json")
        return out

    def revisions(self, it: ReviewItem, me: Principal) -> dict[str, int]:
        """Scope -> the revision of ``me``'s copy of the item (what the pages send back with each save)."""
        return {scope: self.store.revision(scope, it.id, me.name) for scope, jobs in DRAFT_SCOPES.items()
                if me.job in jobs}

    def detail(self, it: ReviewItem, st: ItemState, me: Principal) -> dict[str, Any]:
        """``it`` as ``me`` may see it, with its video link, drafts and the revisions of ``me``'s copy."""
        return detail(it, st, me, video_url=self.media_url(it.video, me), drafts=self.drafts(it, me)) | {
            "revisions": self.revisions(it, me)}

    # ------------------------------------------------------------------ ratings (a run directory)
    @property
    def rating(self) -> bool:
        """Whether this server rates a run's answers (a run directory) rather than verifying dialogues."""
        return self.source.work == "rate"

    def ratings(self) -> dict[str, list[Rating]]:
        """The ratings of each item made on its current content."""
        return self.store.ratings({i: it.content_hash for i, it in self.items.items()})[0]

    def rating_detail(self, it: ReviewItem, me: Principal) -> dict[str, Any]:
        """``it`` as rater ``me`` sees it (their own rating, no expected answers), with its video link, drafts and
        revisions."""
        mine = next((r for r in self.ratings().get(it.id, []) if r.rater == me.name), None)
        return rating_detail(it, mine, me, video_url=self.media_url(it.video, me), drafts=self.drafts(it, me)) | {
            "revisions": self.revisions(it, me)}


async def _read_json(request: Request, model: type[BaseModel]) -> Any:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise ApiError(415, "send the decision as JSON (Content-Type: application/json)")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY:
        raise ApiError(413, f"request body larger than {MAX_BODY // 1024} KiB")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise ApiError(413, f"request body larger than {MAX_BODY // 1024} KiB")
    try:
        data = loads_strict(bytes(body).decode("utf-8"), "request body")
    except UnicodeDecodeError:
        raise ApiError(400, "request body is not UTF-8") from None
    except InputError as e:
        raise ApiError(400, e.message) from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "body"
        raise ApiError(422, f"{loc}: {first['msg']}") from None


_STATUS = {UnknownItemError: 404, ReviewConflictError: 409, ReviewError: 422}


def _endpoint(handler: Callable[[Request, Any], dict[str, Any]], body: type[BaseModel] | None = None
              ) -> Callable[[Request], Awaitable[Response]]:
    """An async endpoint: read and validate the body, run ``handler`` in a worker thread, answer JSON."""

    async def endpoint(request: Request) -> Response:
        try:
            parsed = await _read_json(request, body) if body is not None and request.method in ("POST", "PUT") \
                else None
            return JSONResponse(await run_in_threadpool(handler, request, parsed))
        except ApiError as e:
            return JSONResponse({"error": e.message}, status_code=e.status)
        except ReviewError as e:
            code = next((c for t, c in _STATUS.items() if isinstance(e, t)), 422)
            extra = {"confirm": True} if isinstance(e, ConfirmRequiredError) else \
                {"conflict": e.current} if isinstance(e, StaleCopyError) else {}
            return JSONResponse({"error": str(e)} | extra, status_code=code)
        except MtvbenchError as e:
            return JSONResponse({"error": str(e)}, status_code=503)

    return endpoint


def _pages(guidelines_html: str) -> dict[str, str]:
    static = resources.files("mtvbench.review").joinpath("static")
    layout = static.joinpath("layout.html").read_text("utf-8")
    return {name: layout.replace("@TITLE@", title).replace("@PAGE@", name).replace(
        "@BODY@", static.joinpath(f"{name}.html").read_text("utf-8")).replace("@GUIDELINES@", guidelines_html)
        for name, title in PAGES.items()}


class ReviewApi:
    """The JSON API's handlers (see the module docstring): each takes the request and its parsed body and
    answers a JSON object; :func:`_endpoint` runs them in a worker thread and maps errors."""

    def __init__(self, state: ReviewApp):
        self.state = state
        self.store = state.store

    def caller(self, request: Request) -> Principal:
        self.state.reload()
        return self.state.who(request)

    def own(self, request: Request) -> tuple[Principal, ReviewItem]:
        me = self.caller(request)
        return me, self.state.item(request.path_params["id"])

    def require_work(self, work: str) -> None:
        """Refuse a call of the other kind of work (a decision on a run directory, a rating on a dataset)."""
        if self.state.source.work != work:
            what = ("rates a run's answers: decisions are made on a build workspace or a dataset" if work == "review"
                    else f"verifies a {self.state.source.kind}: ratings are made on a run directory")
            raise ApiError(409, f"this server {what}")

    def session(self, request: Request, _: None) -> dict[str, Any]:
        """Who the caller is; ``name`` is null (with ``error`` saying why) when they are not signed in."""
        st = self.state
        work = st.source.work
        sample = getattr(st.source, "sample", None)
        out: dict[str, Any] = {"name": None, "job": None, "mode": "token" if st.token_mode() else "open",
                               "source": {"kind": st.source.kind, "name": st.source.root.name,
                                          "not_a_benchmark": mark.line if (mark := st.source.not_a_benchmark)
                                          else None},
                               "work": work, "jobs": list(WORK_JOBS[work]),
                               "sample": {"seed": sample.seed, "per_task": sample.per_task} if sample else None,
                               "items": len(st.items), "source_error": st.source_error, "criteria": CRITERIA}
        try:
            me = self.caller(request)
        except ApiError as e:
            return out | {"error": e.message}
        return out | {"name": me.name, "job": me.job}

    def list_items(self, request: Request, _: None) -> dict[str, Any]:
        me = self.caller(request)
        items = self.state.items
        if self.state.rating:
            task = request.query_params.get("task")
            ratings = self.state.ratings()
            return {"items": [rating_summary(it, next((r for r in ratings[i] if r.rater == me.name), None), me,
                                             len(ratings[i])) for i, it in items.items() if not task or
                              it.task.value == task]}
        states = self.store.states({i: it.content_hash for i, it in items.items()})
        task, status = request.query_params.get("task"), request.query_params.get("status")
        rows = [summary(it, states[i], me) for i, it in items.items()]
        return {"items": [r for r in rows if (not task or r["task"] == task) and (not status or r["status"] == status)]}

    def get_item(self, request: Request, _: None) -> dict[str, Any]:
        me, it = self.own(request)
        if self.state.rating:
            return self.state.rating_detail(it, me)
        if request.query_params.get("claim") == "1":
            self.store.claim(it.id, me.name)
        return self.state.detail(it, self.state.state(it), me)

    @staticmethod
    def decided(it: ReviewItem, st: ItemState, me: Principal) -> dict[str, Any]:
        """What a person is told after their decision (nothing about anyone else's)."""
        return {"id": it.id, "mine": dump(st.review_of(me.name)), "yours": yours(st, me),
                "my_referral": dump(st.referral_of(me.name)), "notice": st.notice, "undo": st.seq}

    def review(self, request: Request, body: ReviewBody) -> dict[str, Any]:
        me, it = self.own(request)
        self.require_work("review")
        if body.annotator != me.name:
            raise ApiError(403, f"you are signed in as {me.name}; you cannot record a decision for {body.annotator}")
        st = self.store.record(it, me.name, body.decision, body.edits, body.comment, criteria=body.criteria,
                               checklist=body.checklist, expected_hash=body.content_hash, strict=True,
                               active_seconds=body.active_seconds, refer=True, revision=body.revision)
        return self.decided(it, st, me)

    def undo(self, request: Request, body: UndoBody) -> dict[str, Any]:
        me, it = self.own(request)
        if self.state.rating:
            back = self.store.unrate(it, me.name, body.seq)
            return {"id": it.id, "mine": dump(back)}
        return self.decided(it, self.store.undo(it, me.name, body.seq), me)

    def rate(self, request: Request, body: RatingBody) -> dict[str, Any]:
        me, it = self.own(request)
        self.require_work("rate")
        if me.job != "rater":
            raise ApiError(403, f"{me.name} is a {me.job}; only raters rate (a senior follows their progress)")
        if body.rater != me.name:
            raise ApiError(403, f"you are signed in as {me.name}; you cannot rate for {body.rater}")
        r = self.store.rate(it, me.name, dict(body.marks), expected_hash=body.content_hash,
                            active_seconds=body.active_seconds, revision=body.revision)
        return {"id": it.id, "mine": dump(r), "undo": r.seq}

    def adjudicate(self, request: Request, body: AdjudicateBody) -> dict[str, Any]:
        me, it = self.own(request)
        self.require_work("review")
        if me.job != "senior":
            raise ApiError(403, f"{me.name} is an annotator; only a senior annotator adjudicates")
        if body.senior != me.name:
            raise ApiError(403, f"you are signed in as {me.name}; you cannot adjudicate as {body.senior}")
        st = self.store.adjudicate(it, me.name, body.decision, body.edits, body.comment, criteria=body.criteria,
                                   checklist=body.checklist, expected_hash=body.content_hash, strict=True,
                                   confirm=body.confirm, revision=body.revision)
        return {"id": it.id, "status": st.status, "adjudication": dump(st.adjudication)}

    def draft(self, request: Request, body: DraftBody | None) -> dict[str, Any]:
        me, it = self.own(request)
        scope = body.scope if body is not None else request.query_params.get("scope", "review")
        if me.job not in DRAFT_SCOPES.get(scope, ()):
            raise ApiError(403 if scope in DRAFT_SCOPES else 422, f"no drafts of scope {scope!r} for a {me.job}")
        if body is not None:
            return {"draft": self.store.save_draft(scope, it.id, me.name, body.content_hash, body.data,
                                                   revision=body.revision).model_dump()}
        if request.method == "DELETE":
            self.store.drop_draft(scope, it.id, me.name)
            return {"draft": None}
        d = self.store.draft(scope, it.id, me.name)
        return {"draft": d.model_dump() if d is not None else None}

    def video(self, request: Request, _: None) -> dict[str, Any]:
        me, it = self.own(request)
        return {"video_url": self.state.media_url(it.video, me)}

    def next_item(self, request: Request, _: None) -> dict[str, Any]:
        me = self.caller(request)
        after = request.query_params.get("after")
        if self.state.rating:
            ratings = self.state.ratings()
            rated = {i for i, rs in ratings.items() if any(r.rater == me.name for r in rs)}
            return {"id": next_to_rate(list(self.state.items.values()), rated, after)}
        return {"id": self.store.next_for(me.name, after)}

    def progress(self, request: Request, _: None) -> dict[str, Any]:
        me = self.caller(request)
        if self.state.rating:
            items, ratings = list(self.state.items.values()), self.state.ratings()
            if me.job != "senior":
                return own_rating(items, ratings, me.name).model_dump(mode="json")
            sample = getattr(self.state.source, "sample", None)
            return rating_progress(items, ratings, self.store.users(), sample.seed if sample else None,
                                   sample.per_task if sample else None).model_dump(mode="json")
        rows, states = self.store.rows(), self.store.states()
        if me.job == "senior":
            return compute_progress(rows, states, self.store.users()).model_dump(mode="json")
        return own_progress(rows, states, me.name).model_dump(mode="json")

    async def media(self, request: Request) -> Response:
        name = request.path_params["name"]
        q = request.query_params
        path = self.state.videos.get(name)
        if path is None or not await run_in_threadpool(self.state.media_allowed, name, q.get("u", ""),
                                                       q.get("exp", ""), q.get("sig", "")):
            return PlainTextResponse("not found", 404)
        if not path.is_file():
            return PlainTextResponse("video file missing", 404)
        ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(path, media_type=ctype, headers={"cache-control": "private, max-age=3600"})


def _page(html: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return HTMLResponse(html, headers={"cache-control": "no-cache"})

    return endpoint


def create_app(source: ReviewSource, store: ReviewStore, *, require_tokens: bool = False,
               trusted_hosts: frozenset[str] | set[str] | None = None, guidelines: str | None = None) -> Starlette:
    """The ASGI app. ``require_tokens``: refuse callers without a token even when no user is
    registered (set when listening beyond loopback). ``trusted_hosts``: Host names served
    (None: any; the command line passes the loopback names in open mode). ``guidelines``: Markdown
    that replaces the built-in guidelines (rendered with its HTML escaped)."""
    state = ReviewApp(source, store, require_tokens=require_tokens)
    api = ReviewApi(state)
    pages = _pages(render_guidelines(guidelines))
    item = "/api/items/{id:path}"
    routes = [
        Route("/", _page(pages["index"])),
        *[Route(f"/{name}", _page(html)) for name, html in pages.items() if name != "index"],
        Route("/api/session", _endpoint(api.session)),
        Route("/api/items", _endpoint(api.list_items)),
        Route(f"{item}/review", _endpoint(api.review, ReviewBody), methods=["POST"]),
        Route(f"{item}/adjudicate", _endpoint(api.adjudicate, AdjudicateBody), methods=["POST"]),
        Route(f"{item}/rating", _endpoint(api.rate, RatingBody), methods=["POST"]),
        Route(f"{item}/undo", _endpoint(api.undo, UndoBody), methods=["POST"]),
        Route(f"{item}/draft", _endpoint(api.draft, DraftBody), methods=["GET", "PUT", "DELETE"]),
        Route(f"{item}/video", _endpoint(api.video)),
        Route(item, _endpoint(api.get_item)),
        Route("/api/next", _endpoint(api.next_item)),
        Route("/api/progress", _endpoint(api.progress)),
        Route("/media/{name:path}", api.media),
        Mount("/static", app=StaticFiles(packages=[("mtvbench.review", "static")]), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.review = state
    app.add_middleware(_Guard, trusted_hosts=frozenset(trusted_hosts) if trusted_hosts is not None else None)
    return app


__all__ = ["create_app", "ReviewApp", "ReviewApi", "LOOPBACK_NAMES", "MEDIA_TTL_S"]
