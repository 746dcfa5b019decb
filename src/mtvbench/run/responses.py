"""``responses.jsonl``: every turn of a run, one JSON object per line (question, golden answer,
answer, raw answer and reasoning, what the backend fed the model when it recorded it (``inputs``),
checklist, the answer its checklist was judged against when that is not its own (``authors``
protocol: another round's answer, or the scripts' placeholder), every judge run's verdicts and
score, turn score)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mtvbench.data.schema import Dialogue, Round
from mtvbench.scoring.aggregate import DialogueScore


def judged_answer(d: Dialogue, r: Round, responses: Mapping[str, Any]) -> str | None:
    """The answer round ``r``'s checklist is judged against: the model's answer at the round the protocol
    names (its own, or another round's under ``authors``), or the scripts' fixed placeholder; None when
    the run has no answer there (yet)."""
    source = r.answer_index
    if source is None:
        return r.placeholder_answer
    rec = responses.get(d.turn_id(source))
    return rec["text"] if rec else None


def responses_jsonl(dialogues: list[Dialogue], responses: dict[str, Any], verdicts: dict[str, Any],
                    dscores: list[DialogueScore]) -> str:
    """The lines of ``responses.jsonl`` for the current ``responses`` and ``verdicts`` of a run."""
    turn_scores = {t.turn_id: t for ds in dscores for t in ds.turns}
    lines = []
    for d in dialogues:
        for r in d.rounds:
            tid = d.turn_id(r.index)
            rec = responses.get(tid)
            if rec is None and not r.scored and not r.not_judged:
                continue
            ts = turn_scores.get(tid)
            runs = verdicts.get(tid, {})
            source = r.answer_index
            judged = judged_answer(d, r, responses)
            lines.append(json.dumps({
                "turn_id": tid, "task": d.task.value, "video": d.video, "event": d.event, "round": r.index,
                "ability": r.ability, "model_turn": r.model_turn, "scored": r.scored,
                "question": r.user, "golden_answer": r.assistant,
                "answer": rec["text"] if rec else None, "raw_answer": rec["raw_text"] if rec else None,
                "reasoning": rec["reasoning"] if rec else None, "outcome": rec["outcome"] if rec else "missing",
                "usage": rec["usage"] if rec else None, "fingerprint": rec["fingerprint"] if rec else None,
                "inputs": rec.get("inputs") if rec else None,
                "checklist": [{"key": it.key, "question": it.question, "expected": it.expected} for it in
                              (r.checklist or [])],
                "judged_answer_round": source if r.scored and source != r.index else None,
                "judged_answer": judged if r.scored and source != r.index else None,
                "not_judged": r.not_judged,
                "judge_runs": [{"run": v.run, "status": v.status, "verdicts": v.verdicts, "reply": v.reply,
                                "score": None if ts is None or v.run not in ts.per_run else 100.0 * ts.per_run[v.run]}
                               for _, v in sorted(runs.items())],
                "turn_score": None if ts is None or ts.score is None else 100.0 * ts.score,
            }, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
