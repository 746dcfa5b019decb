"""One evaluation end to end: load -> plan -> frames -> model -> judge -> scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mtvbench.config import RunConfig
from mtvbench.data.official import load_benchmark
from mtvbench.extras import require_backend
from mtvbench.judge.checklist import create_judge
from mtvbench.media.cache import FrameCache
from mtvbench.models.base import create_backend
from mtvbench.run.outputs import score_run, write_config, write_snapshot
from mtvbench.run.runner import Progress, Runner, RunSummary
from mtvbench.run.store import RunStore
from mtvbench.scoring.aggregate import Scores
from mtvbench.util.paths import cache_dir


def default_cache_dir() -> Path:
    return cache_dir("frames")


async def _execute(cfg: RunConfig, runner_args: dict, progress: Progress | None) -> RunSummary:
    model = create_backend(cfg.backend_spec, cfg.model_settings.backend_options())
    judge = create_judge(cfg.judge, cfg.judge_settings.backend_options(), cfg.judge_max_attempts,
                         cfg.judge_settings.temperature)
    try:
        runner = Runner(cfg, model=model, judge=judge, progress=progress, **runner_args)
        return await runner.execute()
    finally:
        await model.aclose()
        await judge.aclose()


def evaluate(cfg: RunConfig, progress: Progress | None = None) -> tuple[Scores, RunSummary]:
    require_backend(cfg.backend_spec, "model")  # a missing extra fails before the run directory exists
    require_backend(cfg.judge, "judge")
    bench = load_benchmark(cfg.data).limit(cfg.limit)
    run_dir = Path(cfg.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    store = RunStore(run_dir)
    try:
        store.check_identity(cfg.identity())
        write_config(run_dir, cfg)
        write_snapshot(run_dir, bench.dialogues, bench.videos)
        cache = FrameCache(cfg.cache_dir if cfg.cache_dir is not None else default_cache_dir())
        summary = asyncio.run(_execute(cfg, {"bench": bench, "store": store, "cache": cache}, progress))
    finally:
        store.close()
    scores, _ = score_run(run_dir)
    return scores, summary
