"""The human review of a build workspace: ``WS/review_queue.json`` and the workspace as a review source.

The queue file holds one item per generated dialogue (its rounds and checklists and a content
hash), written by the export (:mod:`mtvbench.construct.export`); the decisions live in the review
store ``WS/review.sqlite`` (:mod:`mtvbench.review.store`), shared by ``mtvbench review serve`` (the
web app, through :class:`mtvbench.construct.review_source.WorkspaceSource`) and
:func:`record_review` / :func:`adjudicate` (``mtvbench build review``). Each dialogue is reviewed
by two annotators; when they agree that is the outcome, when they disagree (or both revised) a
senior annotator decides.
"""

from __future__ import annotations

from pathlib import Path

from mtvbench.construct.workspace import Workspace
from mtvbench.review.decisions import CRITERIA, Criterion, Decision, ReviewError, ReviewQueue, UnknownItemError
from mtvbench.review.source import QUEUE_NAME, read_queue_file
from mtvbench.review.store import STORE_NAME, ItemState, ReviewStore
from mtvbench.util.files import atomic_write_json


def queue_path(ws: Workspace) -> Path:
    return ws.root / QUEUE_NAME


def store_path(ws: Workspace) -> Path:
    return ws.root / STORE_NAME


def load_queue(ws: Workspace) -> ReviewQueue:
    """The review queue with every item's current decisions (from the review store)."""
    p = queue_path(ws)
    if not p.exists():
        return ReviewQueue()
    q = read_queue_file(p)
    if store_path(ws).exists():
        states = ReviewStore(store_path(ws)).states({i: it.content_hash for i, it in q.items.items()})
        for i, it in q.items.items():
            states[i].apply_to(it)
    return q


def save_queue(ws: Workspace, q: ReviewQueue) -> None:
    """Write the queue's items (content only: decisions are in the review store)."""
    atomic_write_json(queue_path(ws), q.model_dump(mode="json", exclude={"items": {"__all__": {
        "annotations", "adjudication", "referrals"}}}))


def cli_criteria(decision: str, not_met: list[str] | tuple[str, ...]) -> dict[str, Criterion] | None:
    """The criteria of a decision made on the command line: every criterion met except those named
    (``--not-met``); recorded only when some are named or the decision is accept (which means all met)."""
    unknown = [c for c in not_met if c not in CRITERIA]
    if unknown:
        raise ReviewError(f"--not-met {unknown[0]}: the criteria are {', '.join(CRITERIA)}")
    if not not_met and decision != "accept":
        return None
    return {c: Criterion(met=c not in not_met) for c in CRITERIA}


def _decide(ws: Workspace, item_id: str, who: str, decision: str, note: str, senior: bool,
            not_met: list[str] | tuple[str, ...] = (), overwrite: bool = False) -> ItemState:
    q = read_queue_file(queue_path(ws)) if queue_path(ws).exists() else ReviewQueue()
    it = q.items.get(item_id)
    if it is None:
        raise UnknownItemError(f"no dialogue {item_id!r} in the review queue of {ws.root}",
                               hint="`mtvbench build review status -w WS` lists the ids")
    store = ReviewStore(store_path(ws))
    store.sync(list(q.items.values()))
    criteria = cli_criteria(decision, not_met)
    if senior:
        return store.adjudicate(it, who, decision, [], note, criteria=criteria, confirm=overwrite)
    return store.record(it, who, decision, [], note, criteria=criteria)


def record_review(ws: Workspace, item_id: str, annotator: str, decision: Decision, note: str = "",
                  not_met: list[str] | tuple[str, ...] = ()) -> ItemState:
    """One annotator's decision (an annotator's later decision replaces their earlier one; once both
    decided, the change also goes to the senior: the state's ``notice`` says so)."""
    return _decide(ws, item_id, annotator, decision, note, senior=False, not_met=not_met)


def adjudicate(ws: Workspace, item_id: str, senior: str, decision: Decision, note: str = "",
               not_met: list[str] | tuple[str, ...] = (), overwrite: bool = False) -> ItemState:
    """The senior annotator's final decision on a dialogue the two annotators disagree on
    (``overwrite``: also over a final decision someone else made)."""
    return _decide(ws, item_id, senior, decision, note, senior=True, not_met=not_met, overwrite=overwrite)
