"""The records of human verification (paper §3.2), shared by the store, the web app, the
command line and the exports.

A :class:`ReviewItem` is one dialogue under review: its rounds, the checklists of its
scored rounds, the time ranges it is about and a ``content_hash`` of the rounds and
checklists. Decisions are made against that hash: when a dialogue is regenerated its hash
changes and earlier decisions no longer count (they stay in the audit trail).

Two annotators decide each dialogue independently (:class:`Annotation`): ``accept``,
``revise`` (with :class:`Edit` records: the changed text of a round or of a checklist item)
or ``reject`` (with a reason). With the decision they record the paper's three criteria
(:data:`CRITERIA`: the dialogue fits its capability; each question-answer pair is grounded and
unambiguous; each turn follows from the history), each met / not met with an optional note,
and for each checklist item keep / revise (:func:`check_verdict`): accept needs every criterion
met and every checklist item kept; a criterion not met requires revise or reject.

The outcome (:func:`status_of`):

- both accept -> ``accepted``; both reject -> ``rejected``;
- different decisions, or both revised -> ``needs_adjudication``: a senior annotator picks
  or merges, and the senior's decision is final (``revise`` counts as accepted, with the
  senior's edits applied on export);
- a decision handed to the senior (:class:`Referral`: an annotator changed their mind after both
  had decided, or decided a dialogue two others hold) that no senior has settled yet ->
  ``needs_adjudication`` once the dialogue has two decisions or a senior's;
- fewer than two decisions -> ``pending``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field

from mtvbench.data.schema import ChecklistItem, Task
from mtvbench.errors import InputError
from mtvbench.ledger.keys import digest
from mtvbench.util.jsonio import yes_no

Decision = Literal["accept", "revise", "reject"]
DECISIONS: tuple[str, ...] = ("accept", "revise", "reject")
Status = Literal["pending", "accepted", "rejected", "needs_adjudication"]
STATUSES: tuple[str, ...] = ("pending", "accepted", "rejected", "needs_adjudication")
Job = Literal["annotator", "senior", "rater"]
JOBS: tuple[str, ...] = ("annotator", "senior", "rater")
#: what a source's people do -> the jobs they have: verify dialogues (a build workspace, a dataset), or
#: rate a run's answers against the checklists (a run directory; the senior follows the raters' progress)
WORK_JOBS: dict[str, tuple[str, ...]] = {"review": ("annotator", "senior"), "rate": ("rater", "senior")}
#: a rater's answer to one checklist question about the model's answer
Verdict = Literal["Yes", "No"]
EditField = Literal["user", "assistant", "question", "expected"]
CriterionKey = Literal["capability", "grounded", "coherent"]
#: the paper's three checks (§3.2 Human Verification), in the order the pages show them
CRITERIA: dict[str, str] = {
    "capability": "The dialogue fits its capability (e.g. answer refusal asks about an absent event; "
                  "object reference needs pronoun resolution)",
    "grounded": "Each question-answer pair is grounded in the video and unambiguous",
    "coherent": "Each turn follows from the history",
}
ChecklistMark = Literal["keep", "revise"]
#: why a decision went to the senior instead of counting as one of the two
ReferralReason = Literal["changed", "taken"]

#: longest name of an annotator or senior
NAME_MAX = 64
#: longest text of one edited field or comment (characters)
TEXT_MAX = 20_000
#: most edits in one decision
EDITS_MAX = 400
_NAME = re.compile(r"^\w[\w.@\- ]*$")
_ROUND_KEYS = {"user": "User", "assistant": "Assistant"}


class ReviewError(InputError):
    """A review action that cannot be done as asked (bad name, decision, edit, or state)."""


class UnknownItemError(ReviewError):
    """No dialogue with this id is under review."""


class ReviewConflictError(ReviewError):
    """The action conflicts with the item's state (two annotators already, adjudicated, content changed)."""


def check_name(name: object, what: str = "annotator") -> str:
    """A person's name as stored: stripped, 1-64 characters, letters/digits/space/``._-@``."""
    if not isinstance(name, str) or not name.strip():
        raise ReviewError(f"the {what} name is empty: give the name of the person deciding")
    n = unicodedata.normalize("NFC", name.strip())
    if len(n) > NAME_MAX:
        raise ReviewError(f"the {what} name is longer than {NAME_MAX} characters")
    if not _NAME.match(n):
        raise ReviewError(f"the {what} name {n!r} may only use letters, digits, spaces and . _ - @ "
                          "(starting with a letter or digit)")
    return n


def _name(v: str) -> str:
    try:
        return check_name(v)
    except ReviewError as e:
        raise ValueError(e.message) from None


PersonName = Annotated[str, AfterValidator(_name)]


class Edit(BaseModel):
    """One changed field: a round's ``user``/``assistant`` text, or a checklist item's
    ``question``/``expected`` (``item`` is its key, ``Q3``). ``before`` is filled in by the
    store from the content the decision was made on (the audit trail's before/after)."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(ge=1, le=10_000)
    field: EditField
    item: str | None = Field(default=None, pattern=r"^Q[1-9]\d{0,2}$")
    value: str = Field(max_length=TEXT_MAX)
    before: str | None = None

    @property
    def path(self) -> tuple[int, str, str | None]:
        """Where the edit applies, as a sortable key: (round, field, checklist item or None)."""
        return (self.round, self.field, self.item)

    def where(self) -> str:
        """Where the edit applies, in words for a message (``round 2 question of Q3``)."""
        return f"round {self.round} {self.field}" + (f" of {self.item}" if self.item else "")


class Criterion(BaseModel):
    """One of :data:`CRITERIA` as a person judged it."""

    model_config = ConfigDict(extra="forbid")

    met: bool
    note: str = Field(default="", max_length=TEXT_MAX)


class Annotation(BaseModel):
    """One person's decision on one dialogue (an annotator's, or the senior's adjudication).
    ``criteria`` and ``checklist`` are None for decisions recorded without them."""

    model_config = ConfigDict(populate_by_name=True)

    annotator: str
    decision: Decision
    comment: str = Field(default="", validation_alias=AliasChoices("comment", "note"))
    at: str = ""
    edits: list[Edit] = Field(default_factory=list)
    #: active seconds on the dialogue before the first decision: the page visible and input (or the video
    #: playing) within the last minute (None when decided outside the web app)
    seconds: float | None = None
    #: criterion key -> met / not met with a note
    criteria: dict[str, Criterion] | None = None
    #: checklist item (``"3.Q1"``: round 3, item Q1) -> keep / revise
    checklist: dict[str, ChecklistMark] | None = None


class Referral(Annotation):
    """A decision handed to the senior annotator instead of counting as one of the two: the
    annotator changed it after both had decided (``changed``; their decision is replaced and
    ``previous`` holds their earlier one), or two others had already decided the dialogue or a senior had
    decided it (``taken``; the decision is kept here with its text)."""

    seq: int
    reason: ReferralReason
    previous: Annotation | None = None
    #: when a senior's decision settled it (None: still open)
    settled_at: str | None = None


def status_of(reviews: list[Annotation], adjudication: Annotation | None,
              referrals: list[Referral] | None = None) -> Status:
    """The outcome of an item from its (first two) annotators' decisions, the senior's, and the
    decisions handed to the senior that no senior has settled yet."""
    if any(r.settled_at is None for r in referrals or []) and (adjudication is not None or len(reviews) >= 2):
        return "needs_adjudication"
    if adjudication is not None:
        return "rejected" if adjudication.decision == "reject" else "accepted"
    if len(reviews) < 2:
        return "pending"
    a, b = reviews[0].decision, reviews[1].decision
    if a == b == "accept":
        return "accepted"
    if a == b == "reject":
        return "rejected"
    return "needs_adjudication"


def content_hash(rounds: list[dict[str, Any]], checklists: dict[int, list[ChecklistItem]],
                 answers: dict[int, str] | None = None) -> str:
    """Fingerprint of a dialogue's rounds and checklists (what a decision was made on), and of the model's
    answers when they are rated (a run directory's items)."""
    obj: dict[str, Any] = {"rounds": rounds,
                           "checklists": {str(k): [i.model_dump() for i in v] for k, v in checklists.items()}}
    if answers:
        obj["answers"] = {str(k): v for k, v in answers.items()}
    return digest(obj, length=16)


class ReviewItem(BaseModel):
    """One dialogue under review. ``rounds[k-1]`` is ``Round k`` (``User``/``Assistant``/``Ability``)."""

    id: str  # "<video>/<unit>/<task>" in a build workspace, "<task>/<video>/<event>" in a dataset
    task: Task
    video: str
    event: str
    unit: str = ""
    kind: Literal["single", "cross"] | None = None
    ranges: list[tuple[float, float]] = Field(default_factory=list)
    rounds: list[dict[str, str | None]]
    checklists: dict[int, list[ChecklistItem]] = Field(default_factory=dict)
    content_hash: str
    annotations: list[Annotation] = Field(default_factory=list)
    adjudication: Annotation | None = None
    #: decisions handed to the senior (from the store; never written to a queue file)
    referrals: list[Referral] = Field(default_factory=list)
    #: scored round -> the model's answer its checklist is rated against (a run directory's items only)
    answers: dict[int, str] = Field(default_factory=dict)

    @property
    def status(self) -> Status:
        """The item's outcome so far, from its decisions (:func:`status_of`)."""
        return status_of(self.annotations, self.adjudication, self.referrals)

    def checklist_keys(self) -> list[str]:
        """Every checklist item as ``"<round>.<key>"`` (what :attr:`Annotation.checklist` is keyed by)."""
        return [f"{k}.{c.key}" for k in sorted(self.checklists) for c in self.checklists[k]]

    @property
    def final_edits(self) -> list[Edit]:
        """The edits an export applies: the senior's when they revised, else none."""
        adj = self.adjudication
        return list(adj.edits) if adj is not None and adj.decision == "revise" else []

    def final_content(self) -> tuple[list[dict[str, str | None]], dict[int, list[ChecklistItem]]]:
        """Rounds and checklists with the final revision applied."""
        return apply_edits(self.rounds, self.checklists, self.final_edits)

    def original(self, round_index: int, fld: str, item: str | None) -> str | None:
        """The current text of a field, or None when the round or item does not exist."""
        if not 1 <= round_index <= len(self.rounds):
            return None
        if fld in _ROUND_KEYS:
            v = self.rounds[round_index - 1].get(_ROUND_KEYS[fld])
            return v if isinstance(v, str) else None
        for it in self.checklists.get(round_index, []):
            if it.key == item:
                return it.question if fld == "question" else it.expected
        return None


def normalise_edits(item: ReviewItem, edits: list[Edit]) -> list[Edit]:
    """Edits checked against ``item``: the field exists, text is not blank, ``expected`` is
    Yes/No, each field at most once; edits that change nothing are dropped; ``before`` set."""
    if len(edits) > EDITS_MAX:
        raise ReviewError(f"{item.id}: more than {EDITS_MAX} edits in one decision")
    out: list[Edit] = []
    seen: set[tuple[int, str, str | None]] = set()
    for e in edits:
        where = f"{item.id}: edit of {e.where()}"
        if e.field in _ROUND_KEYS and e.item is not None:
            raise ReviewError(f"{where}: 'item' is only for checklist fields (question, expected)")
        if e.field not in _ROUND_KEYS and e.item is None:
            raise ReviewError(f"{where}: 'item' (Q1..Qn) is required for a checklist field")
        before = item.original(e.round, e.field, e.item)
        if before is None:
            what = f"round {e.round} has no checklist item {e.item}" if e.item else f"there is no round {e.round}"
            raise ReviewError(f"{where}: {what}")
        if e.path in seen:
            raise ReviewError(f"{where}: the same field is edited twice")
        seen.add(e.path)
        value = e.value
        if e.field == "expected":
            yn = yes_no(value)
            if yn is None:
                raise ReviewError(f"{where}: expected answer must be Yes or No, got {value[:40]!r}")
            value = yn
        elif not value.strip():
            raise ReviewError(f"{where}: the new text is empty")
        if value == before:
            continue
        out.append(Edit(round=e.round, field=e.field, item=e.item, value=value, before=before))
    return out


def apply_edits(rounds: list[dict[str, str | None]], checklists: dict[int, list[ChecklistItem]],
                edits: list[Edit]) -> tuple[list[dict[str, str | None]], dict[int, list[ChecklistItem]]]:
    """New rounds and checklists with ``edits`` applied (the inputs are not changed)."""
    new_rounds = [dict(r) for r in rounds]
    new_ck = {k: list(v) for k, v in checklists.items()}
    for e in edits:
        if e.field in _ROUND_KEYS:
            new_rounds[e.round - 1][_ROUND_KEYS[e.field]] = e.value
            continue
        items = new_ck.get(e.round, [])
        for i, it in enumerate(items):
            if it.key == e.item:
                upd = {"question": e.value} if e.field == "question" else {"expected": e.value}
                items[i] = it.model_copy(update=upd)
    return new_rounds, new_ck


def check_decision(item: ReviewItem, decision: object, edits: list[Edit], comment: str,
                   require_reason: bool = False) -> list[Edit]:
    """The edits of a valid decision, or one :class:`ReviewError` saying what is wrong
    (``require_reason``: a rejection must say why; the web app asks for one)."""
    if decision not in DECISIONS:
        raise ReviewError(f"{item.id}: decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    if len(comment) > TEXT_MAX:
        raise ReviewError(f"{item.id}: the comment is longer than {TEXT_MAX} characters")
    clean = normalise_edits(item, edits)
    if decision == "revise" and not clean:
        raise ReviewError(f"{item.id}: a revision must change at least one field (or choose accept)")
    if decision != "revise" and edits:
        raise ReviewError(f"{item.id}: edits are only recorded with the decision 'revise'")
    if require_reason and decision == "reject" and not comment.strip():
        raise ReviewError(f"{item.id}: a rejection needs a reason (comment)")
    return clean


def check_verdict(item: ReviewItem, decision: str, edits: list[Edit], criteria: dict[str, Criterion] | None,
                  checklist: dict[str, str] | None, required: bool = False
                  ) -> tuple[dict[str, Criterion] | None, dict[str, ChecklistMark] | None]:
    """The criteria and checklist marks of a valid decision (``edits`` already checked), or one
    :class:`ReviewError`. Every checklist item gets a mark: the ones given, ``revise`` for an edited
    item, else ``keep``. ``required``: the three criteria must be given (the web app asks for them);
    without criteria and marks nothing is recorded (None, None)."""
    if criteria is None:
        if required:
            raise ReviewError(f"{item.id}: mark each criterion met or not met ({', '.join(CRITERIA)})")
        if checklist is None:
            return None, None
    else:
        missing, extra = [c for c in CRITERIA if c not in criteria], [c for c in criteria if c not in CRITERIA]
        if missing or extra:
            what = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(sorted(extra))}"
            raise ReviewError(f"{item.id}: criteria must be exactly {', '.join(CRITERIA)} ({what})")
        criteria = {c: criteria[c] for c in CRITERIA}
        unmet = [c for c, v in criteria.items() if not v.met]
        if decision == "accept" and unmet:
            raise ReviewError(f"{item.id}: accept needs every criterion met ({', '.join(unmet)} not met): "
                              "choose revise or reject")
    keys = item.checklist_keys()
    unknown = sorted(set(checklist or {}) - set(keys))
    if unknown:
        raise ReviewError(f"{item.id}: no checklist item {unknown[0]} (items are named round.key, e.g. "
                          f"{keys[0] if keys else '3.Q1'})")
    bad = sorted(k for k, v in (checklist or {}).items() if v not in ("keep", "revise"))
    if bad:
        raise ReviewError(f"{item.id}: checklist item {bad[0]} must be keep or revise")
    edited = {f"{e.round}.{e.item}" for e in edits if e.item is not None}
    marks: dict[str, ChecklistMark] = {k: "revise" if k in edited else (checklist or {}).get(k, "keep")  # type: ignore[misc]
                                       for k in keys}
    revised = [k for k, v in marks.items() if v == "revise"]
    if decision == "accept" and revised:
        raise ReviewError(f"{item.id}: accept keeps every checklist item ({revised[0]} is marked revise): "
                          "choose revise or reject")
    return criteria, marks


class Rating(BaseModel):
    """One rater's answers to the checklists of one dialogue's scored turns about the model's answers
    (``"3.Q1"``: round 3, question Q1 -> Yes / No), as the judge answers them."""

    rater: str
    marks: dict[str, Verdict]
    at: str = ""
    #: active seconds on the dialogue before the first rating (see :class:`Annotation`)
    seconds: float | None = None
    #: the history entry that recorded it (what an undo names)
    seq: int = 0


def check_marks(item: ReviewItem, marks: dict[str, str]) -> dict[str, Verdict]:
    """A complete rating of ``item``: every checklist question of its rated turns answered Yes or No
    (in the item's order), or one :class:`ReviewError` naming what is missing or unknown."""
    keys = item.checklist_keys()
    unknown = sorted(set(marks) - set(keys))
    if unknown:
        raise ReviewError(f"{item.id}: no checklist question {unknown[0]} to rate (questions are named round.key, "
                          f"e.g. {keys[0] if keys else '3.Q1'})")
    missing = [k for k in keys if k not in marks]
    if missing:
        raise ReviewError(f"{item.id}: answer every checklist question Yes or No ({len(missing)} left, first "
                          f"{missing[0]})")
    out: dict[str, Verdict] = {}
    for k in keys:
        v = yes_no(marks[k])
        if v is None:
            raise ReviewError(f"{item.id}: {k} must be answered Yes or No, got {str(marks[k])[:40]!r}")
        out[k] = v  # type: ignore[assignment]
    return out


class ReviewQueue(BaseModel):
    """The items under review, keyed by id (``WS/review_queue.json`` of a build workspace)."""

    items: dict[str, ReviewItem] = Field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """How many items have each status (every status listed, zeros too)."""
        out: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for it in self.items.values():
            out[it.status] += 1
        return out
