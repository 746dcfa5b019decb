"""Run directories for the report/analysis tests.

``make_store_run`` writes a real run directory through the core's own writers (config,
snapshot, SQLite store, ``score_dir``) with answers scripted per turn and verdicts from the
offline judge (several judge runs, optionally disagreeing), so tests can set exact scores
without the frame pipeline. ``evaluate_run`` makes a run end to end with
``mtvbench.run.evaluate.evaluate`` (skipping when that pipeline is not importable yet).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mtvbench.config import RunConfig
from mtvbench.data.official import load_benchmark
from mtvbench.judge.offline import judge_items
from mtvbench.media.cache import fingerprint
from mtvbench.records import GenerationResult, JudgeVerdict
from mtvbench.run.evaluate import evaluate
from mtvbench.run.identity import RunKeys
from mtvbench.run.plan import rounds_to_call
from mtvbench.run.rescore import score_dir
from mtvbench.run.rundir import RunDirectory, RunSnapshot
from mtvbench.run.settings import build_config
from mtvbench.run.store import RunStore

AnswerFn = Callable[[str, int, str], str]  # (dialogue id, round, golden) -> answer


def make_store_run(data: Path, out: Path, model: str = "scripted", answer: AnswerFn | None = None,
                   judge_runs: int = 1, flip: Callable[[str, int, str], bool] | None = None,
                   context: str = "golden", bootstrap: int = 200) -> Path:
    """``flip(turn_id, run, key)`` -> True inverts that judge run's verdict on that item."""
    bench = load_benchmark(data)
    # a scripted model is no backend: the run config is built directly, without preset resolution
    cfg = RunConfig.model_validate({"data": data, "model": model, "judge": "offline", "out": out,
                                    "judge_runs": judge_runs, "context": context, "bootstrap": bootstrap})
    keys = RunKeys(cfg, {v: fingerprint(p) for v, p in bench.videos.items()})
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out)
    try:
        store.check_identity(cfg.identity())
        RunDirectory(out).write_config(cfg)
        RunDirectory(out).write_snapshot(RunSnapshot.of(cfg, bench, keys))
        for d in bench.dialogues:
            own: dict[int, str] = {}
            for r in rounds_to_call(d, cfg.context):  # self context: every round up to the last scored
                tid = d.turn_id(r.index)
                text = answer(d.id, r.index, r.assistant) if answer else r.assistant
                store.put_response(tid, "prompt", GenerationResult(text=text, raw_text=text),
                                   keys.response(d, r, own))
                own[r.index] = text
                if not r.checklist:
                    continue
                base = judge_items(text, [it.question for it in r.checklist])
                for run in range(judge_runs):
                    verdicts = {}
                    for it, v in zip(r.checklist, base):
                        if flip and flip(tid, run, it.answer_key):
                            v = not v
                        verdicts[it.answer_key] = "Yes" if v else "No"
                    store.put_verdict(tid, JudgeVerdict(run=run, status="ok", verdicts=verdicts, raw=["{}"],
                                                        attempts=1), keys.verdict(r, text))
    finally:
        store.close()
    score_dir(out)
    return out


def evaluate_run(values: dict) -> Path:
    cfg = build_config(values)
    evaluate(cfg)
    return Path(cfg.out)
