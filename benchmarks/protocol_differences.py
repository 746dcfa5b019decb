"""Measure what each difference between the ``authors`` and ``paper`` protocols does to a score.

    python benchmarks/protocol_differences.py            # the bundled sample, 200 seeds per rate
    python benchmarks/protocol_differences.py --seeds 50 --json out.json

Nothing is asked of a model: the judge's replies are scripted. Each judge run of each judged turn
answers every checklist item correctly with probability ``--p`` (seeded per turn, run and item), in the
A1..A5 order, so both protocols score the same replies. Then one quirk at a time is put into a share of
the judge runs (reply shapes) or of the judged turns (dataset shapes), and the change of the Overall is
measured against the same seeds without it:

- per occurrence: the mean change of the score of the run (or turn) it hits, in points (0-100);
- at 1% and 5% of runs/turns: the mean change of the Overall (points) over ``--seeds`` draws.

A reply the ``authors`` protocol cannot read is asked again by both protocols; the quirk "JSON in prose on
every ask" is the case where it never becomes readable (that run is left out). For the dataset shapes the
scripted judge answers a placeholder or a misaligned answer with "No" to every item (it addresses none).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mtvbench.data.official import load_official  # noqa: E402
from mtvbench.data.schema import Benchmark, Dialogue, Round  # noqa: E402
from mtvbench.protocol import get_protocol  # noqa: E402
from mtvbench.records import JudgeVerdict  # noqa: E402
from mtvbench.scoring.aggregate import compute_scores  # noqa: E402

SAMPLE = ROOT / "src" / "mtvbench" / "data" / "sample"
RUNS = 3
Reply = list[tuple[str, str]]


def scripted(rnd: Round, tid: str, run: int, p: float, source: str) -> Reply:
    """A1..An, each right with probability p; an answer that is not the round's own gets 'No' everywhere."""
    out = []
    for it in rnd.checklist or []:
        if source != "own":
            out.append((it.answer_key, "No"))
            continue
        right = random.Random(f"{tid}/{run}/{it.key}").random() < p
        out.append((it.answer_key, it.expected if right else ("No" if it.expected == "Yes" else "Yes")))
    return out


REPLY_QUIRKS: dict[str, tuple[str, Callable[[Reply], Reply | None]]] = {
    "six keys": ("a reply with a sixth key (A6)", lambda r: [*r, ("A6", "Yes")]),
    "four keys": ("a reply missing its last key", lambda r: r[:-1]),
    "keys out of order": ("a reply listing the keys in reverse order", lambda r: list(reversed(r))),
    "'Yes.' values": ("values written 'Yes.' / 'No.'", lambda r: [(k, v + ".") for k, v in r]),
    "empty object": ("a reply '{}'", lambda r: []),
    "JSON in prose": ("JSON without a fence in prose, on every ask (never read by eval.py)", lambda r: None),
}


def verdict(run: int, reply: Reply | None, protocol: str) -> JudgeVerdict:
    if reply is None:  # authors: unreadable after every ask; paper reads JSON in prose
        if protocol == "authors":
            return JudgeVerdict(run=run, status="unparsed")
        return JudgeVerdict(run=run, status="ok", verdicts={})
    verdicts = {k: v for k, v in reply if v in ("Yes", "No")}
    return JudgeVerdict(run=run, status="ok", verdicts=verdicts, reply=reply)


def score(bench: Benchmark, protocol: str, p: float, quirk: Callable[[Reply], Reply | None] | None = None,
          rate: float = 0.0, seed: int = 0) -> tuple[float, list[float], dict[str, float | None]]:
    """The Overall (points), the per-occurrence changes of the hit runs (points) and the dialogue scores."""
    rng = random.Random(seed)
    proto = get_protocol(protocol)
    dialogues = [proto.apply(d) for d in bench.dialogues]
    responses, verdicts, deltas = {}, {}, []
    for d in dialogues:
        for r in d.scored_turns:
            tid = d.turn_id(r.index)
            src = r.answer_index
            if src is not None:
                responses[d.turn_id(src)] = {"text": "answer"}
            source = "own" if src == r.index else "other"
            runs = {}
            for run in range(RUNS):
                reply = scripted(r, tid, run, p, source)
                if quirk is not None and rng.random() < rate:
                    hit = quirk(reply)
                    v = verdict(run, hit, protocol)
                    base = proto.run_score(r, verdict(run, reply, protocol))
                    after = proto.run_score(r, v) if v.status == "ok" and (v.reply or v.verdicts) is not None else None
                    if after is not None:
                        deltas.append(100 * (after - base))
                    runs[run] = v
                else:
                    runs[run] = verdict(run, reply, protocol)
            verdicts[tid] = runs
    s, dscores = compute_scores(dialogues, responses, verdicts, model="m", judge="scripted", judge_runs=RUNS,
                                bootstrap=0, protocol=protocol)
    overall = s.overall if s.overall is not None else s.overall_partial or 0.0
    return overall, deltas, {ds.dialogue_id: ds.score for ds in dscores}


def _edit_rounds(bench: Benchmark, rate: float, seed: int, edit: Callable[[Dialogue, Round], Round | None]
                 ) -> tuple[Benchmark, set[str]]:
    """``bench`` with ``edit`` applied to a share ``rate`` of the rounds; the ids of the dialogues hit."""
    rng = random.Random(seed)
    out, hit = [], set()
    for d in bench.dialogues:
        rounds = []
        for r in d.rounds:
            new = edit(d, r) if rng.random() < rate else None
            if new is not None:
                hit.add(d.id)
            rounds.append(new or r)
        out.append(d.model_copy(update={"rounds": rounds}))
    return bench.model_copy(update={"dialogues": out}), hit


def _placeholder(d: Dialogue, r: Round) -> Round | None:
    """A context round that gets a checklist (copied from a scored round of the dialogue)."""
    donor = next((x for x in d.rounds if x.checklist), None)
    if r.model_turn or r.checklist or donor is None:
        return None
    return r.model_copy(update={"checklist": donor.checklist, "checklist_raw": donor.checklist_raw})


def _trailing_space(d: Dialogue, r: Round) -> Round | None:
    if not (r.checklist and r.model_turn and r.ability and d.task.value not in ("topic_shifting",
                                                                                "proactive_interaction")):
        return None
    return r.model_copy(update={"ability": r.ability + " "})


def _text_index(d: Dialogue, r: Round) -> Round | None:
    return r.model_copy(update={"checklist_index_text": True}) if r.checklist else None


def _swapped(d: Dialogue, r: Round) -> Round | None:
    """Round k written after round k+1 in the file (their positions swapped)."""
    nxt = next((x for x in d.rounds if x.index == r.index + 1), None)
    if nxt is None or not r.checklist:
        return None
    return r.model_copy(update={"position": r.file_position + 1})


DATA_QUIRKS: dict[str, tuple[str, Callable[[Dialogue, Round], Round | None]]] = {
    "placeholder turns": ("a context round with a checklist: judged against the placeholder answer", _placeholder),
    "label with a trailing space": ("'Memory Recall ' etc.: the round is no model turn, its checklist judges the "
                                    "placeholder", _trailing_space),
    "round index as text": ("'round index': \"3\": the checklist is never judged (dropped)", _text_index),
    "round out of file order": ("round k after round k+1 in the file: answers misaligned", _swapped),
}


def _fix_positions(bench: Benchmark) -> Benchmark:
    """After a swap, the next round moves one place up (positions stay a permutation)."""
    out = []
    for d in bench.dialogues:
        moved = {r.index for r in d.rounds if r.position is not None and r.file_position != r.index - 1}
        rounds = [r.model_copy(update={"position": r.file_position - 1}) if (r.index - 1) in moved else r
                  for r in d.rounds]
        out.append(d.model_copy(update={"rounds": rounds}))
    return bench.model_copy(update={"dialogues": out})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--p", type=float, default=0.7, help="chance that a scripted verdict is right")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    bench, problems = load_official(SAMPLE, check_videos=False)
    assert bench is not None, [p.render() for p in problems]
    base = {proto: score(bench, proto, args.p)[0] for proto in ("authors", "paper")}
    base_d = score(bench, "authors", args.p)[2]
    print(f"bundled sample: {len(bench.dialogues)} dialogues; scripted judge right with p={args.p}, {RUNS} runs")
    print(f"Overall with the same replies: authors {base['authors']:.4f}, paper {base['paper']:.4f} "
          f"(rounding alone: {base['authors'] - base['paper']:+.4f} points)")
    rows = []
    for name, (what, quirk) in REPLY_QUIRKS.items():
        per, at = [], {}
        for rate in (0.01, 0.05):
            ds = []
            for seed in range(args.seeds):
                o, deltas, _ = score(bench, "authors", args.p, quirk, rate, seed)
                ds.append(o - base["authors"])
                per += deltas
            at[rate] = sum(ds) / len(ds)
        rows.append({"difference": name, "what": what, "unit": "judge run",
                     "per_occurrence": sum(per) / len(per) if per else None, "at_1pct": at[0.01],
                     "at_5pct": at[0.05]})
    for name, (what, edit) in DATA_QUIRKS.items():
        at, per = {}, []
        for rate in (0.01, 0.05):
            ds = []
            for seed in range(args.seeds):
                b, hit = _edit_rounds(bench, rate, seed, edit)
                if edit is _swapped:
                    b = _fix_positions(b)
                o, _, dscores = score(b, "authors", args.p)
                ds.append(o - base["authors"])
                per += [100 * ((dscores[i] or 0.0) - (base_d[i] or 0.0)) for i in hit]
            at[rate] = sum(ds) / len(ds)
        rows.append({"difference": name, "what": what, "unit": "round",
                     "per_occurrence": sum(per) / len(per) if per else None, "at_1pct": at[0.01],
                     "at_5pct": at[0.05]})
    print(f"{'difference':<30} {'unit':<10} {'per occurrence':>15} {'Overall @1%':>12} {'Overall @5%':>12}")
    for r in rows:
        per_txt = "-" if r["per_occurrence"] is None else f"{r['per_occurrence']:+.2f}"
        print(f"{r['difference']:<30} {r['unit']:<10} {per_txt:>15} {r['at_1pct']:>+12.3f} {r['at_5pct']:>+12.3f}")
    print("per occurrence: change of the hit judge run's score (reply quirks) or of the hit dialogue's score "
          "(dataset quirks), in points; Overall @r: mean change of the Overall (the mean of the six task scores) "
          "when a share r of the runs/rounds is hit")
    if args.json:
        args.json.write_text(json.dumps({"base": base, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
