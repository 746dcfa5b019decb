"""Benchmark what the fingerprint check costs when a run resumes or is scored.

    python benchmarks/resume_plan.py                      # 1000 dialogues x 6 rounds, 3 judge runs
    python benchmarks/resume_plan.py --dialogues 5000 --context self

A synthetic benchmark of the released size (``--dialogues`` dialogues of ``--rounds`` rounds,
every other round scored) is written into a real run store: one response per asked round and
``--judge-runs`` verdicts per scored round, plus ``--stale`` of the turns answered twice (an
old answer kept as superseded). The script times, on the same rows, the selection every
reader does now (:func:`mtvbench.run.identity.current_results`: recompute the expected keys,
match fingerprints, walk self-context chains) against the plain selection it replaced (the
latest final row per turn, no check), and the SQLite read both need, and prints the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mtvbench.config import RunConfig  # noqa: E402
from mtvbench.data.schema import Benchmark, ChecklistItem, Dialogue, Round, Task  # noqa: E402
from mtvbench.records import GenerationResult, JudgeVerdict  # noqa: E402
from mtvbench.run.identity import RunKeys, current_results  # noqa: E402
from mtvbench.run.plan import rounds_to_call  # noqa: E402
from mtvbench.run.store import FINAL_JUDGE, FINAL_OUTCOMES, RunStore  # noqa: E402


def synthetic(n: int, rounds: int) -> Benchmark:
    tasks = list(Task)
    items = [ChecklistItem(key=f"Q{i}", question=f"Does the model state fact {i}?", expected="Yes")
             for i in range(1, 6)]
    dialogues = []
    for i in range(n):
        rs = [Round(index=k, user=f"Question {k} of dialogue {i}? " * 4, assistant=f"Golden answer {k}. " * 8,
                    model_turn=k % 2 == 0, checklist=items if k % 2 == 0 else None) for k in range(1, rounds + 1)]
        dialogues.append(Dialogue(task=tasks[i % 6], video=f"video{i % 135}", event=str(i), rounds=rs))
    return Benchmark(root=Path("/bench"), dialogues=dialogues, videos={})


def best_of(fn, repeat: int = 3) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialogues", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--judge-runs", type=int, default=3)
    ap.add_argument("--context", default="golden", choices=["golden", "self", "none"])
    ap.add_argument("--stale", type=float, default=0.1, help="share of turns that also hold a superseded answer")
    a = ap.parse_args()
    bench = synthetic(a.dialogues, a.rounds)
    cfg = RunConfig.model_validate({"data": "/bench", "model": "openai:m", "judge": "openai:j", "out": "/tmp/x",
                                    "context": a.context,
                                    "judge_runs": a.judge_runs})
    keys = RunKeys(cfg, {f"video{i}": f"{i:032x}" for i in range(135)})
    turn_keys, judge_keys = keys.turn_keys(bench.dialogues), keys.judge_keys(bench.dialogues)
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        n_stale = 0
        for j, d in enumerate(bench.dialogues):
            own: dict[int, str] = {}
            for r in rounds_to_call(d, a.context):
                tid, text = d.turn_id(r.index), f"Answer {r.index} of {d.id}. " * 6
                if a.stale and (j * 7 + r.index) % max(1, round(1 / a.stale)) == 0:
                    old = keys.response(d, r.model_copy(update={"user": "old " + r.user}), own)
                    store.put_response(tid, "p", GenerationResult(text="old", raw_text="old"), old)
                    n_stale += 1
                store.put_response(tid, "p", GenerationResult(text=text, raw_text=text), keys.response(d, r, own))
                own[r.index] = text
                if r.scored:
                    vk = keys.verdict(r, text)
                    for run in range(a.judge_runs):
                        store.put_verdict(tid, JudgeVerdict(run=run, status="ok", verdicts={f"A{i}": "Yes" for i in
                                                                                            range(1, 6)}), vk)
        rows, vrows = store.response_rows(), store.verdict_rows()
        t_read = best_of(lambda: (store.response_rows(), store.verdict_rows()))
        store.close()

    def checked() -> None:
        current_results(bench.dialogues, a.context, turn_keys, judge_keys, rows, vrows, FINAL_OUTCOMES, FINAL_JUDGE)

    def plain() -> None:  # what the base selection did: latest final row per turn, no check
        latest = {r["turn_id"]: r for r in rows if r["outcome"] in FINAL_OUTCOMES}
        verdicts: dict[str, dict[int, JudgeVerdict]] = {}
        for v in vrows:
            if v["verdict"].status in FINAL_JUDGE:
                verdicts.setdefault(v["turn_id"], {})[v["run"]] = v["verdict"]
        assert latest

    def keys_only() -> None:
        keys.turn_keys(bench.dialogues)
        keys.judge_keys(bench.dialogues)

    t_checked, t_plain, t_keys = best_of(checked), best_of(plain), best_of(keys_only)
    print(f"{a.dialogues} dialogues x {a.rounds} rounds, context {a.context}: {len(rows)} response rows "
          f"({n_stale} superseded), {len(vrows)} verdict rows")
    print(f"read the store (SQLite)             {t_read * 1000:8.1f} ms")
    print(f"select, fingerprint-checked         {t_checked * 1000:8.1f} ms")
    print(f"select, plain (base, no check)      {t_plain * 1000:8.1f} ms")
    print(f"compute the snapshot keys (at run)  {t_keys * 1000:8.1f} ms")
    print(f"checked / plain selection: {t_checked / t_plain:.2f}x; "
          f"(read + checked) / (read + plain): {(t_read + t_checked) / (t_read + t_plain):.2f}x")


if __name__ == "__main__":
    main()
