"""Human ratings of a run's turns: the file format the ``agreement`` analysis reads and ``mtvbench review
export`` writes (:class:`HumanRecord`, :func:`load_human`, :func:`human_jsonl`), and the agreement among
the humans themselves (:func:`human_agreement`). Here, below both, because the review app and the
analyses read the same file with the same reader; the format is described in
:mod:`mtvbench.analysis.agreement`.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from mtvbench.data.schema import STEM_TO_TASK, Task, dialogue_id
from mtvbench.errors import MtvbenchError
from mtvbench.ledger.keys import digest
from mtvbench.scoring.kappa import fleiss_kappa, krippendorff_alpha_nominal
from mtvbench.util.jsonio import JSONFileError, load_json_file, loads_strict, read_text_file
from mtvbench.util.rowfiles import csv_records, record_keys


class AgreementError(MtvbenchError, ValueError):
    """A human ratings file, or an agreement asked of it, that cannot be read as such (names the file and
    record)."""


# ------------------------------------------------------------------------------ human file

class HumanRecord(BaseModel):
    """One human rating of a turn, as the human file stores it: a score, or an item's Yes/No verdict, with who gave
    it, when, in which sample, and the digest of the answer rated."""

    turn_id: str
    annotator: str = ""
    score: float | None = None
    item: str | None = None  # "A3"
    verdict: Literal["Yes", "No"] | None = None
    #: when the rating was made (ISO 8601, as the review app records it)
    at: str | None = None
    #: the seed of the sample the turn was drawn in (``mtvbench review serve RUN_DIR --seed``)
    seed: int | None = None
    #: digest of the answer the human rated (:func:`answer_digest`)
    answer_digest: str | None = None


def answer_digest(answer: str) -> str:
    """The digest of an answer as a run's verdict fingerprints take it (what a rating names)."""
    return digest(answer)


def _task(v: str, where: str) -> Task:
    v = v.strip()
    if v in STEM_TO_TASK:
        return STEM_TO_TASK[v]
    try:
        return Task(v)
    except ValueError:
        raise AgreementError(f"{where}: field 'task': unknown task {v!r}; expected one of "
                             f"{', '.join(t.value for t in Task)} or a released file stem") from None


def _positive_int(v: Any, what: str, where: str) -> int:
    """An integer >= 1 from JSON (``3``) or a CSV cell (``"3"``); ``3.5``, ``true``, ``-1`` are errors."""
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v.strip())
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise AgreementError(f"{where}: field '{what}': must be a whole number >= 1, got {v!r}")
    return v


def _turn_id(rec: dict[str, Any], where: str) -> str:
    if rec.get("turn_id") not in (None, ""):
        if not isinstance(rec["turn_id"], str) or not rec["turn_id"].strip():
            raise AgreementError(f"{where}: field 'turn_id': must be text such as task/video/event#round, "
                                 f"got {rec['turn_id']!r}")
        return rec["turn_id"].strip()
    key = next((k for k in ("round", "turn", "round_index") if k in rec), "round")
    rnd = rec.get(key)
    if rnd in (None, ""):
        raise AgreementError(f"{where}: needs 'turn_id' or a 'round'")
    rnd = _positive_int(rnd, key, where)
    if rec.get("dialogue_id"):
        return f"{str(rec['dialogue_id']).strip()}#{rnd}"
    if all(rec.get(k) not in (None, "") for k in ("task", "video", "event")):
        did = dialogue_id(_task(str(rec["task"]), where), str(rec["video"]).strip(), str(rec["event"]).strip())
        return f"{did}#{rnd}"
    raise AgreementError(f"{where}: name the turn by turn_id, dialogue_id+round or task+video+event+round")


def _verdict(v: Any, where: str) -> Literal["Yes", "No"]:
    if isinstance(v, bool):
        return "Yes" if v else "No"
    s = str(v).strip().lower()
    if s in ("yes", "y", "1", "true"):
        return "Yes"
    if s in ("no", "n", "0", "false"):
        return "No"
    raise AgreementError(f"{where}: field 'verdict': verdict must be Yes or No, got {v!r}")


def _item_key(v: Any, where: str) -> str:
    s = str(v).strip().upper() if isinstance(v, (str, int)) and not isinstance(v, bool) else ""
    if s[:1] in ("Q", "A"):
        s = s[1:]
    if not s.isdigit() or int(s) < 1:
        raise AgreementError(f"{where}: field 'item': must name a checklist item (Q3, A3 or 3), got {v!r}")
    return f"A{int(s)}"


def _annotator(rec: dict[str, Any], where: str) -> str:
    """``annotator`` or its synonym ``rater`` (the same name when both are given)."""
    names = {k: str(rec[k]).strip() for k in ("annotator", "rater") if rec.get(k) not in (None, "")}
    if len(set(names.values())) > 1:
        raise AgreementError(f"{where}: fields 'annotator' and 'rater' name different people "
                             f"({names['annotator']!r}, {names['rater']!r}); give one")
    return next(iter(names.values()), "")


def _provenance(rec: dict[str, Any], where: str) -> dict[str, Any]:
    """The optional ``at``, ``seed`` and ``answer_digest`` of a record, checked."""
    out: dict[str, Any] = {}
    if rec.get("at") not in (None, ""):
        if not isinstance(rec["at"], str):
            raise AgreementError(f"{where}: field 'at': must be a time as text (ISO 8601), got {rec['at']!r}")
        out["at"] = rec["at"].strip()
    if rec.get("seed") not in (None, ""):
        v = rec["seed"]
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v.strip())
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise AgreementError(f"{where}: field 'seed': must be a whole number >= 0, got {rec['seed']!r}")
        out["seed"] = v
    if rec.get("answer_digest") not in (None, ""):
        v = rec["answer_digest"]
        if not isinstance(v, str) or not v.strip() or any(c not in "0123456789abcdef" for c in v.strip()):
            raise AgreementError(f"{where}: field 'answer_digest': must be lower-case hex digits, got {v!r}")
        out["answer_digest"] = v.strip()
    return out


def _score(v: Any, where: str) -> float:
    """A turn score, 0-1 or 0-100: a finite number in [0, 100]."""
    try:
        x = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or not 0 <= x <= 100:
        raise AgreementError(f"{where}: field 'score': must be a number from 0 to 1 (or 0 to 100), got {v!r}")
    return x


def _raw_records(path: Path) -> list[tuple[str, Any]]:
    """(where, record) for every record of a CSV, JSON Lines or JSON file, read strictly."""
    what = "human scores file"
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return csv_records(path, what, AgreementError)
    if suffix == ".jsonl":
        out = []
        for n, line in enumerate(read_text_file(path, what).splitlines(), 1):
            if line.strip():
                try:
                    out.append((f"{path}: line {n}", loads_strict(line, str(path))))
                except JSONFileError as e:
                    raise AgreementError(f"{path}: line {n}: {e.located.removeprefix('line 1: ')}") from None
        return out
    raw = load_json_file(path, what)
    if isinstance(raw, dict) and "records" in raw:
        raw = raw["records"]
    if not isinstance(raw, list):
        raise AgreementError(f"{path}: expected a list of records")
    return [(f"{path}: record {i + 1}", rec) for i, rec in enumerate(raw)]


def load_human(path: Path) -> list[HumanRecord]:
    """The human file (see the module docstring), read strictly: a regular UTF-8 file, strict
    JSON, every record an object naming its turn, scores finite in [0, 100], rounds and items
    whole numbers >= 1, and each (turn, annotator, item) once; errors name the record."""
    path = Path(path)
    out = []
    seen: dict[tuple[str, str, str | None], str] = {}
    for where, rec in _raw_records(path):
        low = record_keys(rec, where, AgreementError)
        tid = _turn_id(low, where)
        common = {"turn_id": tid, "annotator": _annotator(low, where), **_provenance(low, where)}
        if low.get("item") not in (None, ""):
            r = HumanRecord(**common, item=_item_key(low["item"], where), verdict=_verdict(low.get("verdict"), where))
        elif low.get("score") not in (None, ""):
            r = HumanRecord(**common, score=_score(low["score"], where))
        else:
            raise AgreementError(f"{where}: needs 'score' (turn level) or 'item' + 'verdict' (item level)")
        key = (r.turn_id, r.annotator, r.item)
        if key in seen:
            raise AgreementError(f"{where}: the same turn{' and item' if r.item else ''} again for annotator "
                                 f"{r.annotator!r} (first at {seen[key].removeprefix(f'{path}: ')})")
        seen[key] = where
        out.append(r)
    return out


def human_jsonl(records: Sequence[HumanRecord]) -> str:
    """JSON Lines of ``records`` in the format :func:`load_human` reads (item level: ``item`` as the
    question key ``Q3``; the annotator as ``rater``); optional fields only when set."""
    lines = []
    for r in records:
        rec: dict[str, Any] = {"turn_id": r.turn_id}
        if r.annotator:
            rec["rater"] = r.annotator
        if r.item is not None:
            rec |= {"item": "Q" + r.item[1:], "verdict": r.verdict}
        else:
            rec["score"] = r.score
        rec |= {k: v for k in ("at", "seed", "answer_digest") if (v := getattr(r, k)) is not None}
        lines.append(json.dumps(rec, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def human_agreement(records: Sequence[HumanRecord]) -> tuple[int, float | None, float | None, int]:
    """Among the humans, over their item verdicts: how many there are, Fleiss' kappa over the items every
    one of them rated, Krippendorff's alpha (nominal; any number of raters per item) and its units."""
    anns = sorted({r.annotator for r in records})
    per_item: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for r in records:
        if r.item and r.verdict:
            per_item[(r.turn_id, r.item)][r.annotator] = r.verdict
    full = [[v[a] for a in anns] for v in per_item.values() if len(v) == len(anns)]
    hk = fleiss_kappa(full) if len(anns) >= 2 and full else None
    units = [list(v.values()) for v in per_item.values() if len(v) >= 2]
    return len(anns), hk, krippendorff_alpha_nominal(units) if units else None, len(units)


__all__ = ["AgreementError", "HumanRecord", "answer_digest", "human_agreement", "human_jsonl", "load_human"]
