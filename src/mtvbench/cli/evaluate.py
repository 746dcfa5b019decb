"""``mtvbench validate | run | score | demo``: evaluation on the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from mtvbench.cli.common import console, err_console, fail, make_console, note, say
from mtvbench.config import ConfigError, build_config, load_yaml
from mtvbench.data.official import Problem, load_official
from mtvbench.report.leaderboard import leaderboard_table
from mtvbench.run.runner import Progress, RunSummary

T = TypeVar("T")


class RichRunProgress(Progress):
    def __init__(self, progress: RichProgress):
        self.p = progress
        self.ids: dict[str, Any] = {}

    def start(self, name: str, total: int) -> None:
        self.ids[name] = self.p.add_task(name, total=total)

    def advance(self, name: str, n: int = 1) -> None:
        if name in self.ids:
            self.p.advance(self.ids[name], n)


def _progress_bar(quiet: bool) -> RichProgress:
    return RichProgress(TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=make_console(stderr=True), disable=quiet, transient=False)


def _print_problems(problems: list[Problem]) -> None:
    from rich.text import Text

    for p in problems:
        err_console.print(Text(p.render(), style="red" if p.level == "error" else "yellow"), highlight=False)


def validate(path: Annotated[Path, typer.Argument(help="dataset root (mtqa/, checklist/, videos/)")],
             strict: Annotated[bool, typer.Option(help="treat warnings as errors")] = False) -> None:
    """Check a dataset in the released layout; list every problem at once."""
    bench, problems = load_official(path)
    _print_problems(problems)
    errors = sum(p.level == "error" for p in problems)
    warnings = len(problems) - errors
    if bench is not None:
        n_scored = sum(len(d.scored_turns) for d in bench.dialogues)
        say(f"{path}: {len(bench.dialogues)} dialogues, {len(bench.videos)} videos, "
                      f"{n_scored} scored turns; {errors} errors, {warnings} warnings")
    else:
        say(f"{path}: {errors} errors, {warnings} warnings")
    if errors or (strict and warnings):
        raise typer.Exit(1)


def parse_options(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"option {item!r} must look like KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _run_with_progress(fn: Callable[[Progress], T], quiet: bool) -> T:
    with _progress_bar(quiet) as bar:
        return fn(RichRunProgress(bar))


def _summarise(summary: RunSummary) -> None:
    for video, msg in summary.failed_videos.items():
        note("video failed", f"{video}: {msg}", style="red")
    if summary.blocked or summary.empty:
        note("not answered", f"{summary.blocked} replies blocked by the provider's content filter, {summary.empty} "
             "empty (e.g. max_tokens spent thinking); final, scored as wrong answers")
    if summary.call_errors or summary.pending_turns or summary.judge_errors:
        note("incomplete", f"{summary.call_errors} model calls failed, {summary.pending_turns} turns "
             f"not reached, {summary.judge_errors} judge calls failed; run the same command again to retry them")


def run(
    data: Annotated[Path | None, typer.Option(help="dataset root in the released layout")] = None,
    model: Annotated[str | None, typer.Option(help="model under test: openai:NAME, oracle, refuse")] = None,
    judge: Annotated[str | None, typer.Option(help="judge: openai:NAME or offline")] = None,
    out: Annotated[Path | None, typer.Option(help="run directory (resumable)")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML file with the same settings")] = None,
    model_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the model")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the judge")] = None,
    model_api_key_env: Annotated[str | None, typer.Option(help="env var holding the model's key")] = None,
    judge_api_key_env: Annotated[str | None, typer.Option(help="env var holding the judge's key")] = None,
    frames: Annotated[int | None, typer.Option(help="frames sampled uniformly over the whole video")] = None,
    max_side: Annotated[int | None, typer.Option(help="longer side of a frame at most this (px)")] = None,
    frame_size: Annotated[str | None, typer.Option(help="fixed frame size WxH, e.g. 448x448")] = None,
    context: Annotated[str | None, typer.Option(help="golden | self | none")] = None,
    judge_runs: Annotated[int | None, typer.Option(help="judge runs per turn, averaged")] = None,
    concurrency: Annotated[int | None, typer.Option(help="model calls in flight")] = None,
    limit: Annotated[int | None, typer.Option(help="at most N dialogues per task")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="max new tokens of the model")] = None,
    temperature: Annotated[float | None, typer.Option(help="sampling temperature of the model")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="frame cache folder")] = None,
    model_option: Annotated[list[str] | None, typer.Option(
        help="backend setting KEY=VALUE (YAML value), repeatable, e.g. input=upload, batch_size=8")] = None,
    judge_option: Annotated[list[str] | None, typer.Option(help="judge backend setting KEY=VALUE")] = None,
    quiet: Annotated[bool, typer.Option(help="no progress bars")] = False,
) -> None:
    """Evaluate a model on a dataset; rerun the same command to resume.

    --model takes a preset of the paper's models (see `mtvbench models`), or a backend spec:
    openai:NAME, gemini:NAME, hf:PATH_OR_ID, vllm:PATH_OR_ID, oracle, refuse."""
    from mtvbench.run.evaluate import evaluate

    values: dict[str, Any] = load_yaml(config) if config else {}
    flags = {"data": data, "model": model, "judge": judge, "out": out, "frames": frames,
             "max_side": max_side, "frame_size": frame_size, "context": context, "judge_runs": judge_runs,
             "concurrency": concurrency, "limit": limit, "cache_dir": cache_dir}
    values.update({k: v for k, v in flags.items() if v is not None})
    for role, url, env, opts in (("model_settings", model_base_url, model_api_key_env, model_option),
                                 ("judge_settings", judge_base_url, judge_api_key_env, judge_option)):
        sub = dict(values.get(role) or {})
        if opts:
            sub["extra"] = {**(sub.get("extra") or {}), **parse_options(opts)}
        if url is not None:
            sub["base_url"] = url
        if env is not None:
            sub["api_key_env"] = env
        if role == "model_settings":
            if max_tokens is not None:
                sub["max_tokens"] = max_tokens
            if temperature is not None:
                sub["temperature"] = temperature
        if sub:
            values[role] = sub
    missing = [k for k in ("data", "model", "out") if k not in values]
    if missing:
        fail(f"missing setting(s): {', '.join('--' + m for m in missing)} (flag or --config)")
    cfg = build_config(values, source=str(config) if config else "command line")
    scores, summary = _run_with_progress(lambda p: evaluate(cfg, p), quiet)
    _summarise(summary)
    console.print(leaderboard_table([(cfg.model, scores)], title=f"MT-Video-Bench — {cfg.out}"))
    say(f"wrote {cfg.out}/scores.json, leaderboard.md, responses.jsonl")
    if summary.call_errors or summary.pending_turns:
        raise typer.Exit(3)


def score(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Recompute scores from what is stored (no API calls)."""
    from mtvbench.run.outputs import score_run

    scores, _ = score_run(run_dir)
    console.print(leaderboard_table([(scores.model, scores)], title=f"MT-Video-Bench — {run_dir}"))
    say(json.dumps(scores.counts.model_dump()))


def demo(
    workdir: Annotated[Path, typer.Option(help="where the sample and the runs are written")] = Path(
        "mtvbench-demo"),
    judge_runs: Annotated[int, typer.Option(help="judge runs per turn")] = 1,
    quiet: Annotated[bool, typer.Option(help="no progress bars")] = False,
) -> None:
    """Offline demo on the bundled sample: oracle and refuse baselines, offline judge."""
    from mtvbench.data.sample import materialize
    from mtvbench.run.evaluate import evaluate

    data = materialize(workdir / "sample")
    rows = []
    for model in ("oracle", "refuse"):
        cfg = build_config({"data": data, "model": model, "judge": "offline", "out": workdir / "runs" / model,
                            "judge_runs": judge_runs, "cache_dir": workdir / "frame-cache"}, "demo")
        scores, _ = _run_with_progress(lambda p, cfg=cfg: evaluate(cfg, p), quiet)
        rows.append((model, scores))
    console.print(leaderboard_table(rows, title="MT-Video-Bench demo (bundled sample)"))
    note("note", "judged by the offline lexical matcher; these numbers check the pipeline "
         "and are not comparable to the paper's. Use --model/--judge openai:... with `mtvbench run` "
         "for real evaluations.")
    say(f"runs written to {workdir / 'runs'}")
