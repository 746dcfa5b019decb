"""Who sees what of a dialogue under review: the blind rule of the double annotation, in one place.

- An **annotator** (anyone who decided, opened or referred the item as an annotator, seniors
  included) sees the dialogue, their own decision, their own draft, and whether the item is still
  open to them (``yours``): ``open`` (their decision counts as one of the two, and they may change it
  freely), ``closed`` (they decided, and both annotators, or a senior, have decided: a change goes to
  the senior), ``taken`` (two others decided: a decision goes to the senior) or ``referred`` (their
  decision went to the senior). Nothing that depends on another person's decision: no status, no
  count of decisions, no other decision or name.
- A **senior** who is not one of the item's annotators sees everything: the status, both decisions,
  the decisions handed to the senior (with notices), the word diff of every edited field and the
  final decision.
- A **rater** (a run directory's items, paper §4.5) sees the dialogue, the model's answer of each rated
  turn, each checklist question without its expected answer, and their own rating: nothing of the judge
  (no verdict, no score) and nothing of the other raters (:func:`rating_summary`, :func:`rating_detail`).
  Everyone sees a run's items that way; how many raters rated an item is for seniors only.

The JSON that leaves the app is built here from an item and its state (:func:`summary`, :func:`detail`).
"""

from __future__ import annotations

from typing import Any, Literal

from mtvbench.data.schema import is_model_turn
from mtvbench.review.decisions import Annotation, Rating, ReviewItem
from mtvbench.review.diffs import compare
from mtvbench.review.store import ItemState, Principal
from mtvbench.util.timecodes import hms, ranges_in, segments

Yours = Literal["open", "closed", "taken", "referred"]


def sees_others(st: ItemState, me: Principal) -> bool:
    """Only a senior who neither decided, opened nor referred the item as an annotator sees the others."""
    return me.job == "senior" and me.name not in st.claims and st.review_of(me.name) is None and \
        st.referral_of(me.name) is None


def yours(st: ItemState, me: Principal) -> Yours:
    """Whether the item is still open to ``me`` (see the module docstring)."""
    if st.review_of(me.name) is not None:
        return "closed" if st.closed else "open"
    if st.referral_of(me.name) is not None:
        return "referred"
    return "taken" if st.closed else "open"


def dump(a: Annotation | Rating | None) -> dict[str, Any] | None:
    """A decision or rating as JSON-able data for a page, or None."""
    return a.model_dump(mode="json") if a is not None else None


def start_at(it: ReviewItem) -> float:
    """Where the player opens: the start of the unit's first range (a built workspace or dataset), else of
    the first time range the dialogue names, else 0."""
    if it.ranges:
        return min(a for a, _ in it.ranges)
    for r in it.rounds:
        for text in (r.get("User") or "", r.get("Assistant") or ""):
            found = ranges_in(text)
            if found:
                return found[0][0]
    return 0.0


def summary(it: ReviewItem, st: ItemState, me: Principal) -> dict[str, Any]:
    """One row of the item list."""
    mine = st.review_of(me.name)
    seer = sees_others(st, me)
    return {"id": it.id, "video": it.video, "task": it.task.value, "task_label": it.task.label, "event": it.event,
            "kind": it.kind, "mine": mine.decision if mine else None, "yours": yours(st, me),
            "status": st.status if seer else None, "decisions": len(st.reviews) if seer else None,
            "referred": len(st.open_referrals) if seer else None}


def _round_text(k: int, r: dict[str, str | None]) -> dict[str, Any]:
    """What every view shows of round ``k``: its texts with their time references, and its ability."""
    user, assistant = r.get("User") or "", r.get("Assistant") or ""
    return {"index": k, "ability": r.get("Ability"), "user": user, "assistant": assistant,
            "user_segments": [s.model_dump() for s in segments(user)],
            "assistant_segments": [s.model_dump() for s in segments(assistant)],
            "ranges": [list(x) for x in ranges_in(user) + ranges_in(assistant)]}


def _rounds(it: ReviewItem) -> list[dict[str, Any]]:
    rounds = []
    for k, r in enumerate(it.rounds, 1):
        model_turn = is_model_turn(it.task, r.get("Ability"))
        checklist = it.checklists.get(k, [])
        rounds.append(_round_text(k, r) | {"model_turn": model_turn, "scored": model_turn and bool(checklist),
                                           "checklist": [c.model_dump() for c in checklist]})
    return rounds


def _ranges(it: ReviewItem, rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The unit's time ranges and those the rounds name, once each, in order, as chips."""
    out: list[tuple[float, float]] = []
    for x in list(it.ranges) + [tuple(r) for rnd in rounds for r in rnd["ranges"]]:
        if x not in out:
            out.append(x)  # type: ignore[arg-type]
    return [{"start": a, "end": b, "label": f"{hms(a)}–{hms(b)}"} for a, b in sorted(out)]


def _notices(st: ItemState) -> list[str]:
    out = []
    for r in st.open_referrals:
        if r.reason == "changed":
            was = r.previous.decision if r.previous is not None else "?"
            out.append(f"{r.annotator} changed their decision after both had decided: {was} -> {r.decision}")
        else:
            out.append(f"{r.annotator} decided ({r.decision}) after two others had: their decision is handed to you")
    return out


def detail(it: ReviewItem, st: ItemState, me: Principal, *, video_url: str | None,
           drafts: dict[str, Any]) -> dict[str, Any]:
    """One dialogue as ``me`` may see it."""
    rounds = _rounds(it)
    out = summary(it, st, me) | {
        "unit": it.unit, "content_hash": it.content_hash, "video_url": video_url, "start_at": start_at(it),
        "ranges": _ranges(it, rounds),
        "checklist_keys": it.checklist_keys(), "rounds": rounds, "mine": dump(st.review_of(me.name)),
        "my_referral": dump(st.referral_of(me.name)), "drafts": drafts, "claimed": me.name in st.claims,
        "reviews": None, "referrals": None, "notices": None, "diff": None, "adjudication": None}
    if sees_others(st, me):
        taken = [r for r in st.open_referrals if r.reason == "taken"]
        sides = list(st.reviews[:2]) + taken
        out |= {"reviews": [dump(r) for r in st.reviews], "adjudication": dump(st.adjudication),
                "referrals": [dump(r) for r in st.referrals], "notices": _notices(st),
                "sides": [dump(r) for r in sides],
                "diff": [d.model_dump() for d in compare(it, sides)] if sides else []}
    return out


# ------------------------------------------------------------------------------ rating (a run directory)

def rating_summary(it: ReviewItem, mine: Rating | None, me: Principal, raters: int | None = None) -> dict[str, Any]:
    """One row of a run's item list: the dialogue, its size, whether ``me`` rated it (``raters``, how
    many did, only for a senior)."""
    return {"id": it.id, "video": it.video, "task": it.task.value, "task_label": it.task.label, "event": it.event,
            "turns": len(it.answers), "questions": len(it.checklist_keys()), "mine": "rated" if mine else None,
            "raters": raters if me.job == "senior" else None}


def rating_detail(it: ReviewItem, mine: Rating | None, me: Principal, *, video_url: str | None,
                  drafts: dict[str, Any]) -> dict[str, Any]:
    """One dialogue of a run as a rater sees it: every round (question and golden answer), the model's
    answer of each rated turn and its checklist questions WITHOUT their expected answers, and ``me``'s own
    rating; nothing of the judge or of the other raters."""
    rounds = []
    for k, r in enumerate(it.rounds, 1):
        answer = it.answers.get(k)
        rounds.append(_round_text(k, r) | {
            "rated": answer is not None, "answer": answer,
            "answer_segments": [s.model_dump() for s in segments(answer)] if answer is not None else [],
            "questions": [{"key": c.key, "question": c.question} for c in it.checklists.get(k, [])]
            if answer is not None else []})
    return rating_summary(it, mine, me) | {
        "content_hash": it.content_hash, "video_url": video_url, "start_at": start_at(it),
        "ranges": _ranges(it, rounds), "question_keys": it.checklist_keys(), "rounds": rounds,
        "mine": dump(mine), "drafts": drafts}
