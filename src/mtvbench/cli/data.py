"""Dataset commands: ``mtvbench download`` (the Hub), ``mtvbench cache info|clear`` and
``mtvbench checklists`` (paper Figure 16 checklists for turns lacking one).

Every command that reads a dataset (``validate``, ``run``, ``stats``, ``scenes``, ``sweep``,
``checklists``) resolves its ``--data``/path argument with
:func:`mtvbench.render.console.dataset_path`: a folder is used as given, ``hf:ORG/NAME[@REV]``
is fetched from the Hugging Face Hub (or read from its cache) and laid out once
(:mod:`mtvbench.data.hub`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer

from mtvbench.cli.common import fail, new_app
from mtvbench.data.hub import DEFAULT_REPO, HF_PREFIX, HubSpec, is_hub_spec, prepare_from_hub
from mtvbench.data.layout import MTQA_DIR, VIDEOS_DIR, checklist_dir
from mtvbench.errors import ConfigError
from mtvbench.extras import require_backend
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    dataset_path,
    err_console,
    note,
    print_tables,
    say,
)
from mtvbench.render.tables import Col, TextTable, Value

cache_app = new_app("Look into and clear the frame, scene-count and report caches (safe to delete; recomputed "
                    "when needed).")


def _duration(seconds: float) -> str:
    m, sec = divmod(round(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{sec:02d}"


def check_dataset(path: Path, strict: bool = False, list_videos: bool = False) -> bool:
    """Validate a dataset: print every problem (one line each, however long), a summary line and
    the videos' durations; ``True`` when it passes. Every referenced video must open, have a video
    stream whose first frame decodes and not be truncated (verdicts cached by file content)."""
    from mtvbench.data.official import load_official
    from mtvbench.media.probe import ProbeCache, check_videos
    from mtvbench.util.escape import rich_text

    cache = ProbeCache()
    bench, problems = load_official(path, probe_cache=cache, require_scored=True)
    for p in problems:
        err_console.print(rich_text(p.render(), "red" if p.level == "error" else "yellow", multiline=True),
                          highlight=False, soft_wrap=True)
    errors = sum(p.level == "error" for p in problems)
    warnings = len(problems) - errors
    if bench is not None:
        n_scored = sum(len(d.scored_turns) for d in bench.dialogues)
        say(f"{path}: {len(bench.dialogues)} dialogues, {len(bench.videos)} videos, "
            f"{n_scored} scored turns; {errors} errors, {warnings} warnings")
        checks = check_videos(bench.videos, cache)  # answered from the cache filled just now
        if list_videos:
            for name, check in sorted(checks.items()):
                say(f"  video={name!r}: {check.summary()}")
        if checks:
            total = sum(c.duration_s for c in checks.values())
            shortest = min(checks, key=lambda n: checks[n].duration_s)
            longest = max(checks, key=lambda n: checks[n].duration_s)
            say(f"videos: {_duration(total)} in total; shortest {shortest!r} ({_duration(checks[shortest].duration_s)})"
                f", longest {longest!r} ({_duration(checks[longest].duration_s)})")
    else:
        say(f"{path}: {errors} errors, {warnings} warnings")
    return not (errors or (strict and warnings))


def download(
    repo: Annotated[str, typer.Argument(help="Hub dataset ORG/NAME (or hf:ORG/NAME[@REV])")] = DEFAULT_REPO,
    out: Annotated[Path | None, typer.Option(help="lay the dataset out here (default: the mtvbench cache, "
                                                  "where --data hf:ORG/NAME finds it)")] = None,
    revision: Annotated[str | None, typer.Option(help="branch, tag or commit (default: main)")] = None,
    offline: Annotated[bool, typer.Option(help="only the local Hugging Face cache (like HF_HUB_OFFLINE=1)")] = False,
    force: Annotated[bool, typer.Option(help="lay the folder out again even if it is complete")] = False,
    strict: Annotated[bool, typer.Option(help="validation warnings count as errors")] = False,
) -> None:
    """Download MT-Video-Bench from the Hugging Face Hub (gated: accept its terms first), lay it out as
    mtqa/ checklist/ videos/ (unpacking video archives) and validate it. Rerun to resume."""
    spec = HubSpec.parse(repo if repo.startswith(HF_PREFIX) else HF_PREFIX + repo)
    if revision:
        if spec.revision and spec.revision != revision:
            raise ConfigError(f"two revisions given: {spec.revision!r} in {repo!r} and --revision {revision!r}")
        spec = HubSpec.parse(f"{HF_PREFIX}{spec.repo_id}@{revision}")
    note("download", f"{spec.text} from {spec.page} (resumable; the Hugging Face cache keeps the files)",
         style="cyan")
    prepared = prepare_from_hub(spec, out, offline=offline, force=force,
                                note=lambda m: note("download", m, style="cyan"))
    for n in prepared.notes:
        note("note", n)
    rec = prepared.record
    state = "already laid out" if prepared.reused else f"laid out ({rec.videos} videos as {rec.video_files})"
    say(f"{spec.text} at commit {rec.commit[:12]}: {state} in {prepared.root}")
    ok = check_dataset(prepared.root, strict)
    use = f"--data {prepared.root}" if out is not None else f"--data {spec.text}"
    say(f"use it with: mtvbench run {use} --model ... --judge ... --out runs/NAME")
    if not ok:
        raise typer.Exit(1)


# ----------------------------------------------------------------------------------- cache

FramesDir = Annotated[Path | None, typer.Option(
    "--cache-dir", help="frame cache folder (default: $MTVBENCH_CACHE/frames or ~/.cache/mtvbench/frames)")]
ScenesDir = Annotated[Path | None, typer.Option(
    "--scene-cache", help="scene-count cache folder (default: $MTVBENCH_CACHE/scenes or ~/.cache/mtvbench/scenes)")]


def _roots(cache_dir: Path | None, scene_cache: Path | None) -> dict[str, Path]:
    from mtvbench.util.paths import cache_dir as default

    return {"frames": cache_dir or default("frames"), "scenes": scene_cache or default("scenes"),
            "reports": default("reports")}


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _when(t: float | None) -> str:
    return "–" if t is None else dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


@cache_app.command("info")
def cache_info(cache_dir: FramesDir = None, scene_cache: ScenesDir = None,
               output_format: FormatOption = OutputFormat.auto) -> None:
    """Where the caches are, how many entries and bytes they hold, and the datasets laid out from the Hub."""
    from mtvbench.data.hub import read_record
    from mtvbench.media.cache_admin import info
    from mtvbench.util.paths import cache_dir as default

    rows: list[list[Value]] = []
    for kind, root in _roots(cache_dir, scene_cache).items():
        i = info(kind, root)  # type: ignore[arg-type]
        extra = f" (+{i.temporary} unfinished)" if i.temporary else ""
        rows.append([kind, str(root), f"{i.entries}{extra}" if i.exists else "(none)", _gb(i.bytes),
                     _when(i.oldest), _when(i.newest)])
        if i.unrecognised:
            note("note", f"{root}: {len(i.unrecognised)} unrecognised name(s) left alone, e.g. "
                         f"{i.unrecognised[0]}")
    print_tables([TextTable(columns=[Col("cache", "id"), Col("folder", "id"), Col("entries"), Col("size"),
                                     Col("oldest", optional=True), Col("newest", optional=True)], rows=rows)],
                 output_format)
    datasets = default("datasets")
    found = sorted(p for p in datasets.glob("*/*") if p.is_dir()) if datasets.is_dir() else []
    for p in found:
        rec = read_record(p)
        what = f"{rec.source} commit {rec.commit[:12]}, {rec.videos} videos ({rec.video_files})" if rec else "?"
        say(f"dataset: {p}: {what}{'' if rec and rec.complete else ' [incomplete]'}")
    say(f"datasets from the Hub: {len(found)} in {datasets} (their videos are hard links into the Hugging Face "
        "cache where possible; remove a folder to drop it, the Hub cache stays)")


@cache_app.command("clear")
def cache_clear(
    cache_dir: FramesDir = None,
    scene_cache: ScenesDir = None,
    keep_frames: Annotated[bool, typer.Option("--keep-frames", help="leave the frame cache as it is")] = False,
    keep_scenes: Annotated[bool, typer.Option("--keep-scenes", help="leave the scene-count cache as it is")] = False,
    keep_reports: Annotated[bool, typer.Option("--keep-reports", help="leave the report cache as it is (what "
                                                                      "reports keep of runs)")] = False,
    older_than: Annotated[str | None, typer.Option(help="only entries written longer ago, e.g. 30d, 12h")] = None,
    dry_run: Annotated[bool, typer.Option(help="only say what would be removed")] = False,
) -> None:
    """Remove cache entries (only entries it recognises; entries being written are skipped)."""
    from mtvbench.media.cache_admin import clear, parse_age

    try:
        age = parse_age(older_than) if older_than else None
    except ValueError as e:
        raise ConfigError(f"--older-than: {e}") from e
    chosen = {k: v for k, v in _roots(cache_dir, scene_cache).items()
              if not {"frames": keep_frames, "scenes": keep_scenes, "reports": keep_reports}[k]}
    for kind, root in chosen.items():
        r = clear(kind, root, older_than_s=age, dry_run=dry_run)  # type: ignore[arg-type]
        verb = "would remove" if dry_run else "removed"
        extra = []
        if r.kept:
            extra.append(f"{r.kept} kept (newer)")
        if r.busy:
            extra.append(f"{r.busy} skipped (being written by another process)")
        say(f"{kind}: {verb} {r.removed} entries ({_gb(r.freed_bytes)}) in {root}"
            + (f"; {', '.join(extra)}" if extra else ""))


def checklists(
    data: Annotated[Path, typer.Option(help="dataset root in the released layout, or hf:ORG/NAME")],
    model: Annotated[str | None, typer.Option(help="the checklist writer, e.g. openai:gpt-4o", show_default=False)
                     ] = None,
    out: Annotated[Path | None, typer.Option(help="write a copy of the dataset with the new checklists here "
                                                  f"({MTQA_DIR}/ copied, {VIDEOS_DIR}/ hard-linked); the data stays "
                                                  "as it is")
                   ] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="write the new checklists into DATA/checklist/")
                        ] = False,
    n: Annotated[int, typer.Option(help="items per checklist")] = 5,
    model_base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL of the model")] = None,
    model_api_key_env: Annotated[str | None, typer.Option(help="env var holding the model's key")] = None,
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

    spec = model
    if not spec:
        fail("missing option --model: the checklist writer, e.g. --model openai:gpt-4o")
    if out is None and not in_place:
        fail(f"choose where the checklists go: --out DIR (a copy of {data} with the new checklists) "
             f"or --in-place (write into {checklist_dir(data)})")
    if out is not None and in_place:
        fail("--out and --in-place exclude each other")
    options = _writer_options(model_base_url, model_api_key_env)
    require_backend(spec, "checklist generator")
    data = dataset_path(data)

    async def go() -> Any:
        backend = create_backend(spec, options)
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


def _writer_options(base_url: str | None, api_key_env: str | None) -> Any:
    """The checklist writer's backend options from ``--model-base-url`` and ``--model-api-key-env`` (a named key
    variable must be set)."""
    from mtvbench.models.endpoints import key_variable_problem
    from mtvbench.models.settings import BackendOptions

    problem = None if api_key_env is None else key_variable_problem(api_key_env)
    if problem is not None:
        fail(f"--model-api-key-env: {problem}")
    return BackendOptions(base_url=base_url, api_key_env=api_key_env)


__all__ = ["cache_app", "check_dataset", "checklists", "download", "is_hub_spec"]
