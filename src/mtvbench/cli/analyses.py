"""Reports and analyses of stored runs: ``report``, ``compare``, ``agreement``, ``stats``,
``scenes``, ``sweep`` and ``checklists`` (mounted at the top level of ``mtvbench``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from mtvbench.analysis.compare import DEFAULT_MIN_N
from mtvbench.cli.common import fail
from mtvbench.cli.data import data_path
from mtvbench.config import build_config
from mtvbench.errors import ConfigError
from mtvbench.extras import require_backend, require_scene_detection
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    emit,
    note,
    print_leaderboard,
    print_tables,
    resolve_format,
    say,
)
from mtvbench.util.files import atomic_write_text


def _csv_list(text: str | None, cast: Any = int) -> list[Any]:
    if not text:
        return []
    try:
        return [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as e:
        fail(f"bad list {text!r}: {e}")


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run directories")],
    out: Annotated[Path, typer.Option(help="output folder")] = Path("report"),
    metadata: Annotated[Path | None, typer.Option(help="CSV/JSON with category, scenes, duration per video/event")
                        ] = None,
    scene_cache: Annotated[Path | None, typer.Option(help="scene-count cache folder (default: the user cache)")
                           ] = None,
    estimate_scenes: Annotated[bool, typer.Option(help="run PySceneDetect now for uncached scene counts")] = False,
    thumbnails: Annotated[int, typer.Option(help="thumbnail frames per video in the explorer (0: none)")] = 4,
    bootstrap: Annotated[int | None, typer.Option(help="bootstrap draws for the CIs (default: the run's)")] = None,
    title: Annotated[str, typer.Option(help="report title")] = "MT-Video-Bench report",
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Leaderboard (MD/CSV/LaTeX), breakdowns and a self-contained report.html from stored runs."""
    from mtvbench.analysis.report import build_report

    if estimate_scenes:
        require_scene_detection()
    res = build_report(run_dirs, out, metadata_file=metadata, scene_cache_dir=scene_cache,
                       estimate_scenes=estimate_scenes, thumbs=thumbnails, title=title, bootstrap=bootstrap)
    for n in res.notes:
        note("note", n)
    print_leaderboard(res.rows, output_format, title=title,
                      markdown=(out / "leaderboard.md").read_text(encoding="utf-8"))
    note("wrote", f"{len(res.files)} files to {out} (open {out / 'report.html'})", style="green")


def compare(
    run_a: Annotated[Path, typer.Argument(help="run directory A (baseline)")],
    run_b: Annotated[Path, typer.Argument(help="run directory B")],
    n_boot: Annotated[int, typer.Option("--bootstrap", help="bootstrap draws")] = 10000,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    min_n: Annotated[int, typer.Option(help="fewest paired dialogues per task for a CI and p-value")] = DEFAULT_MIN_N,
    common_only: Annotated[bool, typer.Option(help="compare only the dialogues both runs share (else different "
                                                   "dialogue sets are an error)")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """B - A per task and Overall, paired bootstrap over dialogues (95% CI, p-value, n per row).

    Runs over different dialogues are refused; different judges or contexts are flagged; rows
    with fewer than --min-n paired dialogues in a task get no CI or p-value. Exit 3 when
    dialogues were left out or a run is incomplete."""
    from mtvbench.analysis.compare import compare_run_dirs, comparison_table

    if min_n < 1:
        raise ConfigError("--min-n must be at least 1")
    comp = compare_run_dirs(run_a, run_b, n_boot=n_boot, seed=seed, min_n=min_n, common_only=common_only)
    if json_out:
        atomic_write_text(json_out, comp.model_dump_json(indent=2) + "\n")
    print_tables([comparison_table(comp)], output_format, json_obj=comp.model_dump(mode="json"))
    if not comp.complete:
        raise typer.Exit(3)


def agreement(
    run_dirs: Annotated[list[Path], typer.Argument(help="run directories, one per judge, of the same answers")],
    human: Annotated[Path, typer.Option(help="human scores: CSV/JSON/JSONL per (dialogue, turn) or per item")],
    level: Annotated[str, typer.Option(help="turn | dialogue")] = "turn",
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Judge-human agreement (Table 3: Spearman, Kendall-tau, Pearson), Cohen's and Fleiss' kappa."""
    from mtvbench.analysis.agreement import agreement_csv_table, agreement_report, agreement_tables

    if level not in ("turn", "dialogue"):
        fail("--level must be turn or dialogue")
    rep = agreement_report(human, run_dirs, level)  # type: ignore[arg-type]
    if json_out:
        atomic_write_text(json_out, rep.model_dump_json(indent=2))
    tables = [agreement_csv_table(rep)] if output_format == OutputFormat.csv else agreement_tables(rep)
    print_tables(tables, output_format, json_obj=rep.model_dump(mode="json"))


def stats(
    path: Annotated[Path, typer.Argument(help="dataset root (released layout), hf:ORG/NAME, or a run directory")],
    tokenizer: Annotated[str | None, typer.Option(help="local Hugging Face tokenizer folder (default: offline "
                                                       "regex tokenizer)")] = None,
    per_task: Annotated[bool, typer.Option(help="also one row per task")] = True,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Benchmark statistics in the layout of the paper's Table 1."""
    from mtvbench.analysis.stats import benchmark_stats, stats_table

    rows = benchmark_stats(data_path(path), tokenizer, per_task=per_task)
    records = [r.model_dump(mode="json") for r in rows]
    if json_out:
        atomic_write_text(json_out, json.dumps(records, indent=2))
    print_tables([stats_table(rows)], output_format, json_obj=records)


def scenes(
    path: Annotated[Path, typer.Argument(help="dataset root (released layout), hf:ORG/NAME, or a run directory")],
    cache_dir: Annotated[Path | None, typer.Option(help="scene-count cache folder (default: the user cache)")
                         ] = None,
    threshold: Annotated[float, typer.Option(help="ContentDetector threshold")] = 27.0,
    min_scene_len: Annotated[int, typer.Option(help="shortest scene, frames")] = 15,
    out: Annotated[Path | None, typer.Option(help="also write per-dialogue counts (JSON) here")] = None,
) -> None:
    """Estimate scene counts per dialogue (PySceneDetect) and cache them for `report`.

    Counts cover the time ranges the dialogue's questions name, or the whole video when none."""
    from mtvbench.analysis.breakdowns import SCENE_BINS, scene_bin
    from mtvbench.analysis.metadata import SceneCache, SceneSettings, dialogue_ranges
    from mtvbench.analysis.stats import load_dialogues

    require_scene_detection()
    path = data_path(path)

    def work() -> dict[str, Any]:
        dialogues, videos, _ = load_dialogues(path)
        cache = SceneCache(cache_dir, SceneSettings(threshold=threshold, min_scene_len=min_scene_len))
        res: dict[str, Any] = {}
        for d in dialogues:
            v = videos.get(d.video)
            if v is None or not Path(v).exists():
                res[d.id] = {"scenes": None, "ranges": None, "error": "video not found"}
                continue
            rng = dialogue_ranges(d)
            res[d.id] = {"scenes": cache.get(Path(v), rng), "ranges": rng}
        return res

    res = work()
    counts = {b: 0 for b in SCENE_BINS}
    for r in res.values():
        b = scene_bin(r["scenes"])
        if b:
            counts[b] += 1
    missing = sum(1 for r in res.values() if r["scenes"] is None)
    say("scene-count distribution (dialogues): " + ", ".join(f"{k}: {v}" for k, v in counts.items())
                  + (f"; {missing} without a video" if missing else ""))
    if out:
        atomic_write_text(out, json.dumps(res, indent=1))


def sweep(
    data: Annotated[Path, typer.Option(help="dataset root in the released layout, or hf:ORG/NAME")],
    model: Annotated[str, typer.Option(help="model under test")],
    out: Annotated[Path, typer.Option(help="sweep folder: one run directory per setting + the sweep report")],
    judge: Annotated[str, typer.Option(help="judge (required): openai:NAME, or offline (pipeline checks only)")],
    frames: Annotated[str | None, typer.Option(help="e.g. 16,32,64,128,256 (Figure 5b)")] = None,
    max_side: Annotated[str | None, typer.Option(help="e.g. 120,240,480,720,960 (Figure 5c)")] = None,
    context: Annotated[str | None, typer.Option(help="e.g. golden,self,none (Figure 4c)")] = None,
    model_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the model")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the judge")] = None,
    model_api_key_env: Annotated[str | None, typer.Option(help="env var holding the model's key")] = None,
    judge_api_key_env: Annotated[str | None, typer.Option(help="env var holding the judge's key")] = None,
    judge_runs: Annotated[int, typer.Option(help="judge runs per turn")] = 3,
    limit: Annotated[int | None, typer.Option(help="at most N dialogues per task")] = None,
    concurrency: Annotated[int, typer.Option(help="model calls in flight")] = 16,
    cache_dir: Annotated[Path | None, typer.Option(help="frame cache folder shared by all settings")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """One run per setting (resumable, sharing the frame cache), then Figure 5b/5c/4c tables and plots."""
    from mtvbench.analysis.sweep import point_label, run_sweep, sweep_csv, sweep_tables, write_sweep_report

    fr, ms, ctx = _csv_list(frames), _csv_list(max_side), _csv_list(context, str)
    if not (fr or ms or ctx):
        fail("give at least one of --frames, --max-side, --context")
    base: dict[str, Any] = {"data": data, "model": model, "judge": judge, "judge_runs": judge_runs,
                            "concurrency": concurrency, "limit": limit, "cache_dir": cache_dir}
    base = {k: v for k, v in base.items() if v is not None}
    for role, url, env in (("model_settings", model_base_url, model_api_key_env),
                           ("judge_settings", judge_base_url, judge_api_key_env)):
        sub = {k: v for k, v in (("base_url", url), ("api_key_env", env)) if v is not None}
        if sub:
            base[role] = sub

    probe = build_config({**base, "out": out}, "command line")
    require_backend(probe.backend_spec, "model")
    require_backend(probe.judge, "judge")
    base["data"] = data_path(data)
    points = run_sweep(base, out, frames=fr, max_sides=ms, contexts=ctx,
                       on_done=lambda p: note("done", point_label(p), style="green"))
    files = write_sweep_report(points, out, model)
    if resolve_format(output_format) == "csv":
        emit(sweep_csv(points))  # every axis in one long table
    else:
        print_tables(sweep_tables(points), output_format, json_obj=[p.model_dump(mode="json") for p in points])
    note("wrote", f"{len(files)} files to {out}", style="green")


def checklists(
    data: Annotated[Path, typer.Option(help="dataset root in the released layout, or hf:ORG/NAME")],
    generator: Annotated[str, typer.Option(help="checklist writer, e.g. openai:gpt-4o")],
    out: Annotated[Path | None, typer.Option(help="write a copy of the dataset with the new checklists here "
                                                  "(mtqa/ copied, videos/ linked); the data stays as it is")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="write the new checklists into DATA/checklist/")
                        ] = False,
    n: Annotated[int, typer.Option(help="items per checklist")] = 5,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the generator")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="env var holding the generator's key")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace existing (human-revised) entries too")] = False,
    max_attempts: Annotated[int, typer.Option(help="asks per turn while the rules are broken")] = 3,
    exact_split: Annotated[bool, typer.Option(help="require exactly one 'No' item (target 4/1)")] = True,
    concurrency: Annotated[int, typer.Option(help="calls in flight")] = 4,
) -> None:
    """Write missing checklists (paper Figure 16) in the released layout; resumable.

    Choose where: --out DIR (a copy of the dataset) or --in-place (into DATA). Exit 3 when some
    turns still have no checklist (listed)."""
    from mtvbench.checklist_gen.fill import fill_checklists
    from mtvbench.models.registry import create_backend
    from mtvbench.models.settings import BackendOptions

    if out is None and not in_place:
        fail(f"choose where the checklists go: --out DIR (a copy of {data} with the new checklists) "
             f"or --in-place (write into {data / 'checklist'})")
    if out is not None and in_place:
        fail("--out and --in-place exclude each other")
    require_backend(generator, "checklist generator")
    data = data_path(data)

    async def go() -> Any:
        backend = create_backend(generator, BackendOptions(base_url=base_url, api_key_env=api_key_env))
        try:
            return await fill_checklists(data, backend, out=out, n=n, overwrite=overwrite, concurrency=concurrency,
                                         max_attempts=max_attempts, exact_split=exact_split)
        finally:
            await backend.aclose()

    rep = asyncio.run(go())
    say(f"generated {rep.generated}, kept {rep.kept} existing, failed {len(rep.failed)} (written to {rep.out})")
    for f in rep.failed:
        note("failed", f"{f.task}/{f.video}/{f.event} round {f.round_index}: " + "; ".join(f.problems),
             style="red")
    if rep.failed:
        note("INCOMPLETE", f"{len(rep.failed)} turn(s) still have no checklist; run the same command again to "
             "ask for them again")
        raise typer.Exit(3)
