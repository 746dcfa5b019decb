"""How ``mtvbench agreement`` scales with the number of human raters (30, 300, 3,000 raters x 175 items).

    python benchmarks/agreement_scale.py                       # 30, 300 and 3000 raters
    python benchmarks/agreement_scale.py --raters 30 300 --items 175

One run directory is made first: the bundled sample, the ``oracle`` model and the offline judge with three
judge runs (no network). Its first ``--items`` checklist items are rated by every rater: item-level records
of ``human.jsonl`` as ``mtvbench review export`` writes them (``turn_id``, ``rater``, ``item``, ``verdict``,
``answer_digest`` on every second rater), each verdict the expected answer with probability 0.8, seeded.

Printed per size, each the median of ``--repeat`` timings: the time to read the records (``load_human``:
the reference, linear in the records by construction), the raters' agreement among themselves
(``human_agreement``: Fleiss' kappa over the items all rated, Krippendorff's alpha), the judge's agreement
with them (``judge_agreement``: correlations, Cohen's and Fleiss' kappa) and the whole ``agreement_report``
(read + both); each also as a ratio to reading the records of the same size, and the time per record. A
statistic that is linear in raters x items keeps its ratio as the raters grow.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def make_run(root: Path) -> Path:
    from mtvbench.data.sample import materialize
    from mtvbench.run.evaluate import evaluate
    from mtvbench.run.settings import build_config

    data = materialize(root / "sample")
    cfg = build_config({"data": data, "model": "oracle", "judge": "offline", "out": root / "run", "judge_runs": 3,
                        "cache_dir": root / "cache", "bootstrap": 0})
    evaluate(cfg)
    return root / "run"


def checklist_items(run: Any, n: int) -> list[tuple[str, str, str, str]]:
    """(turn id, answer key, expected answer, digest of the judged answer) of the run's first ``n`` scored
    checklist items."""
    from mtvbench.run.responses import judged_answer
    from mtvbench.scoring.human import answer_digest

    items = [(d.turn_id(r.index), it.answer_key, it.expected, answer_digest(judged_answer(d, r, run.responses)))
             for d in run.dialogues for r in d.scored_turns for it in r.checklist or []]
    if len(items) < n:
        raise SystemExit(f"the run has {len(items)} checklist items; ask for at most that many (--items)")
    return items[:n]


def human_file(path: Path, items: list[tuple[str, str, str, str]], raters: int, seed: int) -> Path:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for k in range(raters):
            for tid, key, expected, answer in items:
                verdict = expected if rng.random() < 0.8 else ("No" if expected == "Yes" else "Yes")
                rec: dict[str, Any] = {"turn_id": tid, "rater": f"r{k:05d}", "item": "Q" + key[1:],
                                       "verdict": verdict}
                if k % 2:
                    rec["answer_digest"] = answer
                f.write(json.dumps(rec) + "\n")
    return path


def timed(fn: Callable[[], Any], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raters", type=int, nargs="+", default=[30, 300, 3000])
    ap.add_argument("--items", type=int, default=175)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from mtvbench.analysis.agreement import agreement_report, judge_agreement
    from mtvbench.run.rundir import RunDirectory
    from mtvbench.scoring.human import human_agreement, load_human

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = make_run(Path(tmp))
        run = RunDirectory.open(run_dir).load(bootstrap=0)
        items = checklist_items(run, args.items)
        print(f"run: {run_dir.name} ({len(items)} checklist items rated by every rater; {args.repeat} timings each, "
              "median)")
        print(f"{'raters':>7} {'records':>9} | {'read s':>8} | {'raters s':>8} {'x read':>7} | {'judge s':>8} "
              f"{'x read':>7} | {'report s':>8} {'x read':>7} | {'us/record':>9}")
        for n in args.raters:
            path = human_file(Path(tmp) / f"human-{n}.jsonl", items, n, args.seed)
            records = load_human(path)
            read_s = timed(lambda p=path: load_human(p), args.repeat)
            raters_s = timed(lambda r=records: human_agreement(r), args.repeat)
            judge_s = timed(lambda r=records: judge_agreement(run, r), args.repeat)
            report_s = timed(lambda p=path: agreement_report(p, [run_dir]), args.repeat)
            people, fleiss, alpha, units = human_agreement(records)
            print(f"{n:>7} {len(records):>9} | {read_s:>8.3f} | {raters_s:>8.3f} {raters_s / read_s:>7.2f} | "
                  f"{judge_s:>8.3f} {judge_s / read_s:>7.2f} | {report_s:>8.3f} {report_s / read_s:>7.2f} | "
                  f"{1e6 * report_s / len(records):>9.1f}")
            print(f"{'':>7} raters {people}, Fleiss' kappa {fleiss:.4f}, Krippendorff's alpha {alpha:.4f} over "
                  f"{units} items")


if __name__ == "__main__":
    main()
