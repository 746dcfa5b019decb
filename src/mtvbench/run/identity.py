"""What a stored result means: fingerprints binding every answer and verdict to its inputs.

A stored model response is valid only for the exact input that produced it. Its
*fingerprint* is a hash over named *parts*:

- ``prompt``: the rendered inference prompt (Figure 15, or the authors' script's, with its chat turns)
  and its history (in self context with a
  placeholder for each of the model's own earlier answers, which ``answers`` covers), and,
  to say *why* it changed, ``question`` and ``history`` (golden context: every earlier
  round's User and dataset Assistant text; self context: the earlier User texts; none:
  nothing); ``answers`` (self context only: the model's own earlier answers); ``system``,
  ``generation`` (``GenerationConfig.CALL_FIELDS``: max_tokens, temperature, top_p, top_k,
  and the backend options that can change an answer), ``backend`` (the backend spec),
  ``frames`` (frame settings): these four are the run identity's own values
  (:meth:`mtvbench.config.RunConfig.identity`, the only function that computes it), hashed; ``video`` (the
  video's content key, :func:`mtvbench.media.cache.fingerprint`) and, for a backend that reads it (the ``oracle``
  baseline), ``golden`` (this round's golden answer).

A judge verdict is valid only for the exact answer and checklist it judged: ``answer``,
``checklist`` (the item keys and questions the judge saw; the expected Yes/No is applied
at scoring time, so flipping it re-scores without re-judging), ``judge`` (spec and
settings) and ``prompt`` (the protocol's judge prompt, with a placeholder answer). A judged round whose
answer is another round's (``authors`` protocol) or the authors' fixed placeholder is bound to that text.

Everything except ``answers`` (responses) and ``answer`` (verdicts) is known before any
call; its hash is the *input key*, stored per turn in ``benchmark.json``. The fingerprint
is the hash of the input key and the answers, so ``score`` can check every stored row
against the snapshot without the dataset, the videos or any API: only rows whose
fingerprint matches are scored. The parts are stored with each row, so a resumed run can
say *why* a result is no longer valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from mtvbench.config import RunConfig
from mtvbench.data.schema import Dialogue, Round
from mtvbench.ledger.keys import digest
from mtvbench.protocol import get_protocol
from mtvbench.records import GenerationConfig, JudgeVerdict
from mtvbench.run.plan import build_request, request_text, rounds_to_call

#: why a stored response no longer matches, by the first part that differs (in this order)
RESPONSE_REASONS: dict[str, str] = {
    "video": "video content changed",
    "question": "question edited",
    "history": "conversation history edited (an earlier question or golden answer)",
    "golden": "golden answer edited (the model reads it)",
    "answers": "an earlier answer of the model changed (self context)",
    "system": "system prompt changed",
    "generation": "generation settings changed",
    "backend": "model backend changed",
    "frames": "frame settings changed",
    "prompt": "inference prompt changed (another prompt template)",
}
#: why a stored verdict no longer matches
VERDICT_REASONS: dict[str, str] = {
    "answer": "answer asked again",
    "checklist": "checklist items edited",
    "judge": "judge or judge settings changed",
    "prompt": "judge prompt changed (another prompt template)",
}
#: a later self-context turn whose earlier answer is asked again
DEPENDS_ON_EARLIER = "an earlier turn of its dialogue is asked again (self context)"


def response_fingerprint(input_key: str, answers: str | None) -> str:
    return digest({"input": input_key, "answers": answers})


def verdict_fingerprint(judge_key: str, answer: str) -> str:
    return digest({"judge": judge_key, "answer": answer})


def answers_digest(answers: Sequence[str]) -> str:
    return digest(list(answers))


class ResultKey(BaseModel):
    """The fingerprint of one result and the parts it was computed from."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    parts: dict[str, str]


def reason(old_parts: Mapping[str, str], new_parts: Mapping[str, str], table: Mapping[str, str]) -> str:
    for part, text in table.items():
        if old_parts.get(part) != new_parts.get(part):
            return text
    return "stored by another format"


class RunKeys:
    """Fingerprints of what a run asks, computed from its settings, dialogues and video content keys."""

    def __init__(self, cfg: RunConfig, video_keys: Mapping[str, str], reads_golden: bool = False):
        self.context = cfg.context
        self.style = cfg.inference
        self.n_frames = cfg.frames
        self.protocol = get_protocol(cfg.protocol_name)
        self.video_keys = dict(video_keys)
        self.reads_golden = reads_golden
        # the settings parts: the run identity's values (computed by RunConfig.identity only)
        identity = cfg.identity()
        generation = identity["model_generation"]
        self.common = {
            "backend": identity["model"],
            "generation": digest([{k: generation[k] for k in GenerationConfig.CALL_FIELDS},
                                  identity["model_options"]]),
            "system": digest(generation["system"]),
            "frames": identity["frames"],
        }
        judge = cfg.judge_settings.answer_settings()
        self.judge_common = {"judge": digest([cfg.judge, judge["generation"], judge["options"]])}

    # responses --------------------------------------------------------------------------
    def input_parts(self, d: Dialogue, r: Round) -> dict[str, str]:
        earlier = d.earlier(r)
        history: list[Any]
        if self.context == "golden":
            history = [[x.user, x.assistant] for x in earlier]
        elif self.context == "self":
            history = [x.user for x in earlier]
        else:
            history = []
        placeholders = {x.index: f"<the model's answer to round {x.index}>" for x in earlier}
        request = build_request(d, r, self.context, None, placeholders, self.style, self.n_frames)
        parts = {**self.common, "video": self.video_keys.get(d.video, ""), "question": digest(r.user),
                 "history": digest(history), "prompt": digest(request_text(request))}
        if self.reads_golden:
            parts["golden"] = digest(r.assistant)
        return parts

    def input_key(self, d: Dialogue, r: Round) -> str:
        return digest(self.input_parts(d, r))

    def response(self, d: Dialogue, r: Round, own_answers: Mapping[int, str] | None = None) -> ResultKey:
        """The key of round ``r``; in self context ``own_answers`` holds every earlier round's answer."""
        parts = self.input_parts(d, r)
        answers = None
        if self.context == "self":
            own = own_answers or {}
            answers = answers_digest([own[x.index] for x in d.earlier(r)])
        fp = response_fingerprint(digest(parts), answers)
        return ResultKey(fingerprint=fp, parts={**parts, "answers": answers or ""})

    # verdicts ---------------------------------------------------------------------------
    def judge_parts(self, r: Round) -> dict[str, str]:
        items = r.checklist or []
        return {**self.judge_common, "checklist": digest([[it.key, it.question] for it in items]),
                "prompt": digest(self.protocol.judge_prompt("<the answer>", r))}

    def judge_key(self, r: Round) -> str:
        return digest(self.judge_parts(r))

    def verdict(self, r: Round, answer: str) -> ResultKey:
        parts = self.judge_parts(r)
        ans = digest(answer)
        return ResultKey(fingerprint=verdict_fingerprint(digest(parts), ans), parts={**parts, "answer": ans})

    # the snapshot -----------------------------------------------------------------------
    def turn_keys(self, dialogues: Iterable[Dialogue]) -> dict[str, str]:
        return {d.turn_id(r.index): self.input_key(d, r) for d in dialogues for r in rounds_to_call(d, self.context)}

    def judge_keys(self, dialogues: Iterable[Dialogue]) -> dict[str, str]:
        return {d.turn_id(r.index): self.judge_key(r) for d in dialogues for r in d.scored_turns}


@dataclass
class Current:
    """The stored results that match what the snapshot expects, and what is stale."""

    #: turn id -> the valid final response row (outcome ok/blocked/empty)
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: turn id -> judge run -> the verdict for the valid answer (any status)
    verdicts: dict[str, dict[int, JudgeVerdict]] = field(default_factory=dict)
    #: turn id -> the latest final response row that does not match (only for turns without a valid one)
    stale_responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (turn id, judge run) -> the latest final verdict row that does not match (runs without a valid final one)
    stale_verdicts: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    #: final response rows / verdict rows in the store that belong to no current result
    superseded_responses: int = 0
    superseded_verdicts: int = 0

    def final_verdicts(self, final: Sequence[str]) -> dict[str, dict[int, JudgeVerdict]]:
        out: dict[str, dict[int, JudgeVerdict]] = {}
        for tid, runs in self.verdicts.items():
            kept = {r: v for r, v in runs.items() if v.status in final}
            if kept:
                out[tid] = kept
        return out


def _latest(rows: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    return max(rows, key=lambda r: r["created"], default=None)


def current_results(dialogues: Sequence[Dialogue], context: str, turn_keys: Mapping[str, str],
                    judge_keys: Mapping[str, str], response_rows: Iterable[dict[str, Any]],
                    verdict_rows: Iterable[dict[str, Any]], final_outcomes: Sequence[str],
                    final_judge: Sequence[str]) -> Current:
    """Pick, for every turn of ``dialogues``, the stored response and verdicts whose fingerprint is
    the fingerprint the snapshot expects (in self context turn by turn, each answer feeding the next key)."""
    by_tid: dict[str, dict[str, dict[str, Any]]] = {}
    for row in response_rows:
        if row["outcome"] in final_outcomes:
            by_tid.setdefault(row["turn_id"], {})[row["fingerprint"]] = row
    v_by_tid: dict[str, list[dict[str, Any]]] = {}
    for row in verdict_rows:
        v_by_tid.setdefault(row["turn_id"], []).append(row)
    cur = Current()
    for d in dialogues:
        own: list[str] = []
        answers: dict[int, str] = {}
        chain_ok = True
        for r in rounds_to_call(d, context):
            tid = d.turn_id(r.index)
            rows = by_tid.get(tid, {})
            row = None
            if chain_ok and tid in turn_keys:
                fp = response_fingerprint(turn_keys[tid], answers_digest(own) if context == "self" else None)
                row = rows.get(fp)
            if row is None:
                chain_ok = chain_ok and context != "self"  # a later self turn needs this answer
                if rows:
                    cur.stale_responses[tid] = _latest(rows.values())  # type: ignore[assignment]
                cur.superseded_responses += len(rows)
                continue
            cur.responses[tid] = row
            cur.superseded_responses += len(rows) - 1
            own.append(row["text"])
            answers[r.index] = row["text"]
        for r in d.scored_turns:
            tid = d.turn_id(r.index)
            source = r.answer_index
            answer = r.placeholder_answer if source is None else answers.get(source)
            if answer is None or tid not in judge_keys:  # no valid answer to judge (yet)
                cur.superseded_verdicts += sum(v["verdict"].status in final_judge for v in v_by_tid.get(tid, []))
                continue
            vfp = verdict_fingerprint(judge_keys[tid], digest(answer))
            runs: dict[int, JudgeVerdict] = {}
            stale: dict[int, list[dict[str, Any]]] = {}
            for vrow in v_by_tid.get(tid, []):
                if vrow["fingerprint"] == vfp:
                    runs[vrow["run"]] = vrow["verdict"]
                elif vrow["verdict"].status in final_judge:
                    stale.setdefault(vrow["run"], []).append(vrow)
            if runs:
                cur.verdicts[tid] = runs
            for run, srows in stale.items():
                cur.superseded_verdicts += len(srows)
                if run not in runs or runs[run].status not in final_judge:
                    cur.stale_verdicts[(tid, run)] = _latest(srows)  # type: ignore[assignment]
    return cur
