"""Checklist generation (paper Figure 16), shared by the construction pipeline and ``mtvbench checklists``."""

from mtvbench.checklists.dataset import ChecklistFailure, FillReport, atomic_write_json, fill_checklists
from mtvbench.checklists.generator import (
    ChecklistError,
    ChecklistOutcome,
    check_checklist,
    checklist_outcome,
    entry_from_items,
    generate_checklist,
    parse_checklist_reply,
)

__all__ = [
    "ChecklistError",
    "ChecklistFailure",
    "ChecklistOutcome",
    "FillReport",
    "atomic_write_json",
    "check_checklist",
    "checklist_outcome",
    "entry_from_items",
    "fill_checklists",
    "generate_checklist",
    "parse_checklist_reply",
]
