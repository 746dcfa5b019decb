"""Checklist generation (paper Figure 16) with mechanical rule checks and bounded re-asks.

One call asks a backend for ``n`` yes/no questions about a question/answer pair. The
reply is parsed (a JSON object ``{"Q1": ..., "A1": "Yes", ...}``, fenced or not, a JSON
list of ``{"question", "answer"}`` objects, or plain ``Q1: ...`` / ``A1: Yes`` lines) and
checked against the rules of Figure 16:

- exactly ``n`` items, numbered ``Q1..Qn``, each with a ``Yes``/``No`` answer;
- every question is a non-empty question ending in ``?``;
- self-contained: no "ground truth"/"GT" wording, no pointers to text the judge cannot
  see ("the above", "the reference answer", "the given answer", "the previous question");
- a mix of ``Yes`` and reversed-fact ``No`` items: at least one of each, and by default
  exactly ``n-1`` ``Yes`` and one ``No`` (the paper's "try to include only one No"; turn
  this into a soft target with ``exact_split=False``);
- no two questions identical.

A reply that breaks a rule is re-asked with the list of broken rules
(:data:`CHECKLIST_REASK`), at most ``max_attempts`` calls in all, through the shared loop
:func:`mtvbench.models.ask.ask` (:func:`checklist_check` is the check). When every
attempt fails, :func:`generate_checklist` raises :class:`ChecklistError` listing what
still fails (and :func:`checklist_outcome` returns it without raising).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.data.schema import ChecklistItem
from mtvbench.errors import MtvbenchError
from mtvbench.models.ask import ReaskPolicy, append_problems, ask
from mtvbench.models.backend import ModelBackend
from mtvbench.prompts.generation import render_checklist_prompt
from mtvbench.records import Check, GenerationConfig, GenerationRequest, Rejected
from mtvbench.util.jsonio import json_values, yes_no

#: how a rejected checklist is asked for again (the problems are listed after it)
CHECKLIST_REASK = append_problems("\n\nYour previous checklist was rejected because:\n- ",
                                  "\nWrite the whole checklist again.", sep="\n- ")
_Q_LINE = re.compile(r"^\W*Q(\d+)\W*[:.)\]]\s*(.+?)\s*$", re.IGNORECASE)
_A_LINE = re.compile(r"\bA(\d+)\W*[:.)\]]\s*\**\s*(yes|no)\b", re.IGNORECASE)
_INLINE_A = re.compile(
    r"\s*(?:[\(\[]\s*(?:(?:expected(?: answer)?|answer)\s*[:=]?\s*)?(yes|no)\s*[\)\]]"
    r"|[-–—]?\s*(?:expected(?: answer)?|answer)\s*[:=]\s*(yes|no))\s*\.?$",
    re.IGNORECASE,
)
_NOT_SELF_CONTAINED = re.compile(
    r"\bground[- ]truth\b|\bGT\b|\bthe above\b|\bmentioned above\b|\bthe reference answer\b|"
    r"\bthe given answer\b|\bthe standard answer\b|\bthe previous question\b|\bthe (?:original|golden) answer\b",
    re.IGNORECASE,
)


class ChecklistError(MtvbenchError):
    """No acceptable checklist after the allowed attempts; ``problems`` says what still fails."""

    def __init__(self, problems: list[str], items: list[ChecklistItem] | None = None):
        self.problems = problems
        self.items = items
        super().__init__("checklist rejected: " + "; ".join(problems))


class ChecklistOutcome(BaseModel):
    """The result of :func:`checklist_outcome`: accepted items, or the last problems."""

    ok: bool
    items: list[ChecklistItem] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    attempts: int = 0
    raw: list[str] = Field(default_factory=list)
    error: str | None = None


def _from_json(obj: Any) -> list[tuple[str, str | None]] | None:
    if isinstance(obj, dict) and isinstance(obj.get("checklist"), (list, dict)):
        obj = obj["checklist"]
    if isinstance(obj, dict):
        qs: dict[int, str] = {}
        ans: dict[int, str | None] = {}
        for k, v in obj.items():
            key = str(k).strip().upper()
            if m := re.fullmatch(r"Q(\d+)", key):
                qs[int(m.group(1))] = str(v).strip()
            elif m := re.fullmatch(r"A(\d+)", key):
                ans[int(m.group(1))] = yes_no(v)
        if not qs:
            return None
        return [(qs[i], ans.get(i)) for i in sorted(qs)]
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        out: list[tuple[str, str | None]] = []
        for x in obj:
            low = {str(k).lower(): v for k, v in x.items()}
            q = low.get("question") or low.get("q")
            a = next((low[k] for k in ("answer", "expected", "a") if k in low), None)
            if not isinstance(q, str):
                return None
            out.append((q.strip(), yes_no(a)))
        return out
    return None


def parse_checklist_reply(text: str) -> list[tuple[str, str | None]]:
    """``[(question, 'Yes'|'No'|None), ...]`` in item order; empty when nothing is found."""
    for value in json_values(text, arrays=True):
        parsed = _from_json(value)
        if parsed:
            return parsed
    # plain lines: "Q1: ...?" then "A1: Yes" (or "Q1: ...? (Yes)" / "Q1: ... A1: Yes" on one line)
    qs: dict[int, str] = {}
    ans: dict[int, str] = {}
    for line in text.splitlines():
        line = line.strip().strip("*").strip()
        for m in _A_LINE.finditer(line):
            ans.setdefault(int(m.group(1)), m.group(2).capitalize())
        m = _Q_LINE.match(line)
        if m:
            n, body = int(m.group(1)), m.group(2)
            body = re.split(r"\s+A\d+\s*[:.)]", body)[0].strip()
            if (im := _INLINE_A.search(body)) and n not in ans:
                ans[n] = (im.group(1) or im.group(2)).capitalize()
                body = body[: im.start()].strip()
            qs[n] = body.strip().strip("*").strip()
    return [(qs[i], ans.get(i)) for i in sorted(qs)]


def check_checklist(parsed: list[tuple[str, str | None]], n: int = 5, exact_split: bool = True) -> list[str]:
    """Every rule the parsed items break (empty when the checklist is acceptable)."""
    problems: list[str] = []
    if not parsed:
        return ["no checklist items could be read; use the JSON format {\"Q1\": ..., \"A1\": \"Yes\"}"]
    if len(parsed) != n:
        problems.append(f"exactly {n} questions are required, got {len(parsed)}")
    seen: set[str] = set()
    for i, (q, a) in enumerate(parsed, 1):
        if not q:
            problems.append(f"Q{i} is empty")
            continue
        if a is None:
            problems.append(f"A{i} must be 'Yes' or 'No'")
        if not q.rstrip().endswith("?"):
            problems.append(f"Q{i} is not a question (must end with '?')")
        if _NOT_SELF_CONTAINED.search(q):
            problems.append(f"Q{i} is not self-contained (mentions the ground truth/reference or 'the above')")
        key = re.sub(r"\W+", " ", q.lower()).strip()
        if key in seen:
            problems.append(f"Q{i} repeats an earlier question")
        seen.add(key)
    answers = [a for _, a in parsed if a is not None]
    n_no = answers.count("No")
    n_yes = answers.count("Yes")
    if n > 1 and len(answers) == len(parsed):
        if n_no == 0:
            problems.append("at least one 'No' question based on a reversed fact is required")
        elif n_yes == 0:
            problems.append("at least one 'Yes' question is required")
        elif exact_split and (n_no != 1 or n_yes != n - 1):
            problems.append(f"use exactly one 'No' (reversed fact) and {n - 1} 'Yes' questions, "
                            f"got {n_no} 'No' and {n_yes} 'Yes'")
    return problems


def _items(parsed: list[tuple[str, str | None]]) -> list[ChecklistItem]:
    return [ChecklistItem(key=f"Q{i}", question=q, expected=a)  # type: ignore[arg-type]
            for i, (q, a) in enumerate(parsed, 1) if q and a in ("Yes", "No")]


def checklist_check(n: int = 5, exact_split: bool = True) -> Check[list[ChecklistItem]]:
    """Parse a reply and apply the Figure 16 rules: the items, or :class:`Rejected` with the broken rules
    (``partial``: the items that could be read)."""

    def check(text: str) -> list[ChecklistItem] | Rejected:
        parsed = parse_checklist_reply(text)
        problems = check_checklist(parsed, n, exact_split)
        return Rejected(problems, _items(parsed)) if problems else _items(parsed)

    return check


def checklist_request(question: str, answer: str, n: int = 5, request_id: str = "checklist",
                      temperature: float | None = None) -> GenerationRequest:
    return GenerationRequest(id=request_id, prompt=render_checklist_prompt(question, answer, n),
                             generation=GenerationConfig(temperature=temperature))


async def checklist_outcome(
    backend: ModelBackend,
    question: str,
    answer: str,
    n: int = 5,
    *,
    max_attempts: int = 3,
    exact_split: bool = True,
    request_id: str = "checklist",
    temperature: float | None = None,
) -> ChecklistOutcome:
    """Ask for a checklist; re-ask (bounded) while rules are broken. Never raises for bad replies."""
    out = await ask(backend, checklist_request(question, answer, n, request_id, temperature),
                    checklist_check(n, exact_split), ReaskPolicy(max_attempts, CHECKLIST_REASK))
    if out.status == "ok":
        return ChecklistOutcome(ok=True, items=out.value or [], attempts=out.attempts, raw=out.raw)
    if out.status == "error":
        return ChecklistOutcome(ok=False, problems=out.problems or [f"backend error: {out.error}"],
                                attempts=out.attempts, raw=out.raw, error=out.error)
    return ChecklistOutcome(ok=False, items=out.partial or [], problems=out.problems, attempts=out.attempts,
                            raw=out.raw)


async def generate_checklist(
    backend: ModelBackend,
    question: str,
    answer: str,
    n: int = 5,
    *,
    max_attempts: int = 3,
    exact_split: bool = True,
) -> list[ChecklistItem]:
    """``n`` checked :class:`ChecklistItem` for one QA pair, or :class:`ChecklistError`."""
    out = await checklist_outcome(backend, question, answer, n, max_attempts=max_attempts, exact_split=exact_split)
    if not out.ok:
        raise ChecklistError(out.problems, out.items or None)
    return out.items

