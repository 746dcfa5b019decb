"""Moved: the records and rules of human verification are :mod:`mtvbench.review.decisions` ("model" names a
model that answers, :mod:`mtvbench.models`; what a person does in the review is their *job*, "role" the part a
model plays). The names work from here for one release, with a DeprecationWarning."""

from mtvbench.util.moved import moved_names

_NEW = "mtvbench.review.decisions"

__getattr__ = moved_names(__name__, dict.fromkeys(
    ("Annotation", "CRITERIA", "ChecklistMark", "Criterion", "CriterionKey", "DECISIONS", "Decision", "EDITS_MAX",
     "Edit", "EditField", "NAME_MAX", "PersonName", "Rating", "Referral", "ReferralReason",
     "ReviewConflictError", "ReviewError", "ReviewItem", "ReviewQueue", "STATUSES", "Status", "TEXT_MAX",
     "UnknownItemError", "Verdict", "apply_edits", "check_decision", "check_marks", "check_name",
     "check_verdict", "content_hash", "normalise_edits", "status_of"), _NEW)
    | {"ROLES": f"{_NEW}:JOBS", "Role": f"{_NEW}:Job", "WORK_ROLES": f"{_NEW}:WORK_JOBS"})
