"""``mtvbench build ...`` — the construction pipeline on the command line (``build_app``).

Every stage can run alone (it reads the artifacts of earlier stages from the workspace)
or all together with ``all``. ``--videos DIR`` registers the videos of DIR in the
workspace (a sub-folder name is the video's category); later commands may omit it.

Exit status: 0 when every requested stage is done for every video (and, for ``all`` and
``export``, every video was exported); 2 for bad input or settings (nothing is written
when they are found before the build starts: a missing API key, a missing optional
dependency, an unreadable config) or a stage that failed on a bad video; 3 when a stage
is incomplete (failed model calls: listed; the next run asks only those) or blocked by
an incomplete or stale earlier stage, when a video exports no dialogue (or a dialogue
without checklists) because the model's replies broke the rules, or when the export holds
no dialogue at all; 4 when another process uses the workspace. A stage that made less
than it was asked for says why on its line; the export repeats it as one line per video
(a video whose units were all validly rated below 5 gets its line, not exit 3).

Progress: one bar per stage over the videos, with the model replies so far, in the rich
display ``mtvbench run`` uses (on stderr; when it is not a terminal, one line per stage at
the end).

Settings flags: derived from the build settings (:func:`build_flags`, the machinery of ``run``'s
flags, :mod:`mtvbench.run.flags`): every described field of
:class:`~mtvbench.construct.config.BuildConfig` (``--concurrency``, ``--detector``, ``--no-objects``,
...), every described field of a stage's section (``--split-detector``, ``--caption-frames``, ...), the
model's connection and generation settings as ``run`` spells them (``--model-base-url``,
``--model-api-key-env``, ``--temperature``, ``--model-option``). Every ``build`` command takes the same
settings flags.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from mtvbench.cli.common import fail, new_app
from mtvbench.cli.evaluate import RichRunProgress, _progress_bar
from mtvbench.config import load_settings_file
from mtvbench.construct.config import BuildConfig, BuildSettings, build_config_type, load_build_config, require_build
from mtvbench.construct.export import ExportReport
from mtvbench.construct.pipeline import Builder, StageReport
from mtvbench.construct.review_queue import adjudicate, load_queue, record_review
from mtvbench.construct.stages import STAGES, stage_names
from mtvbench.construct.workspace import Workspace, discover_videos
from mtvbench.registry import RegistryError
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    console,
    note,
    print_tables,
    say,
    styled,
    warn,
)
from mtvbench.render.tables import Col, TextTable, Value
from mtvbench.review.decisions import ReviewQueue
from mtvbench.run.flags import Flag, option_flag, role_flags, settings_flags, settings_from_flags, with_flags
from mtvbench.util.files import video_mode as checked_video_mode

build_app = new_app("Build MT-Video-Bench-style dialogues from raw videos (paper §3.2).")
review_app = new_app("Human verification: two annotators per dialogue, a senior adjudicates "
                     "(decisions in WS/review.sqlite, shared with `mtvbench review serve`).")
build_app.add_typer(review_app, name="review")

WS = Annotated[Path, typer.Option("--workspace", "-w", help="Build workspace folder (created if missing).")]
Videos = Annotated[Path | None, typer.Option("--videos", help="Folder of raw videos to register "
                                                             "(sub-folder name = category).")]
Only = Annotated[list[str] | None, typer.Option("--video", help="Only this video (repeatable).")]
Force = Annotated[bool, typer.Option("--force", help="Redo the stage even where it is done (its model calls are "
                                     "asked again; later stages then redo what changed).")]
Config = Annotated[Path | None, typer.Option("--config", help="YAML/JSON file of BuildConfig fields.")]
Out = Annotated[Path | None, typer.Option("--out", help="Dataset folder (default WS/dataset).")]
AcceptedOnly = Annotated[bool, typer.Option(help="Only dialogues accepted in review.")]


def build_flags(config: type[BuildSettings] | None = None) -> list[Flag]:
    """The settings flags of every ``mtvbench build`` command, derived from the build settings (see module doc)."""
    config = config or build_config_type()
    sections = {key: config.model_fields[key.replace("-", "_")].annotation for key in config.SECTIONS}
    flags = settings_flags(config, sections) + role_flags({"model": "backend"}) + [option_flag("model", "backend")]
    return [replace(f, short="-m" if f.key == "model" else None) for f in flags]


BUILD_FLAGS = build_flags(BuildConfig)


def build_settings(config: Path | None, given: dict[str, Any]) -> BuildSettings:
    """The build settings: the ``--config`` file (YAML or JSON) with the flags on top, validated
    strictly (unknown keys with a suggestion, bad values named by file and key or by flag)."""
    data: dict[str, Any] = load_settings_file(config, "build config file") if config is not None else {}
    values, origins = settings_from_flags(data, given, BUILD_FLAGS)
    return load_build_config(values, str(config) if config else "command line", origins)


class RichBuildProgress(RichRunProgress):
    """The build's progress in ``run``'s rich display: a bar per stage over the videos, with its replies so far.
    The display starts with the first stage (an error before it prints only the error) and ends with :meth:`close`."""

    def __init__(self, progress: Any):
        super().__init__(progress)
        self.replies: Counter[str] = Counter()

    def start(self, name: str, total: int) -> None:
        if not self.p.live.is_started:
            self.p.start()
        super().start(name, total)

    def close(self) -> None:
        if self.p.live.is_started:
            self.p.stop()

    def reply(self, stage: str) -> None:
        self.replies[stage] += 1
        if stage in self.ids:
            self.p.update(self.ids[stage], description=f"{stage} ({self.replies[stage]} replies)")


def _print_report(r: StageReport) -> None:
    short = r.shortfall
    status = "unusable" if short is not None and short.failed else r.status
    colour = {"done": "green", "skipped": "dim", "incomplete": "yellow", "blocked": "yellow", "failed": "red",
              "unusable": "red"}[status]
    parts = [f"asked {r.asked}, replayed {r.replayed}"] if r.asked or r.replayed else []
    if r.given_up:
        parts.append(f"{r.given_up} given up" + ("" if short else " (rules still broken; --retry-failed asks again)"))
    if r.message and r.status != "skipped":
        parts.append(r.message)
    spans: list[tuple[str, str | None]] = [(f"{r.stage:<11} {r.video:<24} {status:<10}", colour),
                                           (f" {r.seconds:6.1f}s" + (" " + "; ".join(parts) if parts else ""), None)]
    if short is not None:
        spans += [(";" if parts else "", None), (f" {short.why}", colour if short.failed else "yellow")]
    line = styled(spans)
    console.print(line, highlight=False, soft_wrap=True)


_SHOWN = 10  # failure lines printed per stage and video


def _summary(reports: list[StageReport], export: ExportReport | None, accepted_only: bool = False) -> int:
    """Print what is not done and return the exit status (see module doc)."""
    failed = [r for r in reports if r.status == "failed"]
    unfinished = [r for r in reports if r.status in ("incomplete", "blocked")]
    skipped_videos = export.skipped_videos if export is not None else {}
    for r in unfinished:
        note(r.status.upper(), f"{r.stage} {r.video}: " + (r.message if r.status == "blocked" else
                                                              f"{len(r.problems)} item(s) without a result"))
        for line in r.problems[:_SHOWN]:
            note("  failed", line, style="red")
        if len(r.problems) > _SHOWN:
            note("  ...", f"{len(r.problems) - _SHOWN} more in {r.artifact}", style="dim")
    for name, why in skipped_videos.items():
        note("not exported", f"{name}: {why}")
    for r in failed:
        note("failed", f"{r.stage} {r.video}: {r.message}", style="red")
    unusable = _shortfalls(export)
    if failed:
        return 2
    if unfinished or skipped_videos:
        note("INCOMPLETE", "run the same command again to ask only what is missing "
             "(what every finished call returned is stored in the workspace)")
        return 3
    if unusable:
        note("FAILED", f"{unusable} video(s) gave no usable dialogue or checklist because the model's replies broke "
             "the rules (above); --retry-failed asks those items again, or use another model", style="bold red")
        return 3
    if export is not None and export.dialogues == 0:
        note("FAILED", "the export holds no dialogue: nothing to review or evaluate"
             + (" (--accepted-only: no dialogue is accepted in review yet)" if accepted_only else "")
             + (f"; nothing was written, the previous export in {export.out} is kept as it was"
                if not export.written and Path(export.out).exists() else "; nothing was written"),
             style="bold red")
        return 3
    return 0


def _shortfalls(export: ExportReport | None) -> int:
    """Print one line per video that could not give everything (see module doc); the number of failures."""
    if export is None:
        return 0
    for name, s in export.shortfalls.items():
        note("unusable" if s.failed else "shortfall", f"{name}: {s.why}", style="red" if s.failed else "yellow")
    if export.not_a_benchmark:
        note("NOT A BENCHMARK", export.not_a_benchmark, style="bold yellow")
    return sum(s.failed for s in export.shortfalls.values())


def _run(stages: list[str], workspace: Path, videos: Path | None, only: list[str] | None, cfg: BuildSettings,
         force: bool, export: dict | None = None) -> None:
    require_build(stages, cfg)  # a missing extra fails before the workspace is created
    ws = Workspace(workspace)  # writes nothing until the checks below have passed
    found = discover_videos(videos) if videos is not None else []
    vids = ws.videos(only, extra=found)

    async def go(builder: Builder) -> ExportReport | None:
        try:
            builder.preflight(stages, vids, force)  # missing extras, keys, detector weights: before any write
            with ws.lock():
                if found:
                    ws.register(found)
                await builder.run(stages, vids, force)
                return builder.export(vids, **export) if export is not None else None
        finally:
            await builder.aclose()

    progress = RichBuildProgress(_progress_bar(quiet=False))
    builder = Builder(ws, cfg, on_report=_print_report, progress=progress)
    try:
        rep = asyncio.run(go(builder))
    finally:
        progress.close()
    if builder.cluster() is not None:
        note("ray", builder.cluster_summary())
    if rep is not None and rep.written:
        say(f"exported {rep.dialogues} dialogue(s) ({rep.checklists} checklist entries) of "
            f"{len(rep.videos)} video(s) to {rep.out}")
        review = TextTable(columns=[Col("status", "id"), Col("dialogues", "num")],
                           rows=[[status, n] for status, n in sorted(rep.review.items())], title="review queue")
        print_tables([review], OutputFormat.auto)
    code = _summary(builder.reports, rep, bool(export and export.get("accepted_only")))
    if code:
        raise typer.Exit(code)


def _stage_command(stage: str, help_text: str) -> None:
    """``mtvbench build STAGE``."""

    @build_app.command(stage, help=help_text)
    @with_flags(BUILD_FLAGS)
    def command(given: dict[str, Any], workspace: WS, videos: Videos = None, video: Only = None, force: Force = False,
                config: Config = None) -> None:
        _run([stage], workspace, videos, video, build_settings(config, given), force)

    command.__name__ = f"build_{stage}"


def _stage_help(stage: str) -> str:
    """The stage's help; a stage of another package that fails to load says so (running it reports why)."""
    try:
        return STAGES.get(stage).help
    except RegistryError as e:
        return f"(failed to load: {e.message})"


for _stage in stage_names():
    _stage_command(_stage, _stage_help(_stage))


@build_app.command("export", help="12. Write the released layout, metadata.json and the review queue.")
def build_export(workspace: WS, videos: Videos = None, video: Only = None, out: Out = None,
                 accepted_only: AcceptedOnly = False,
                 video_mode: Annotated[str, typer.Option(help="copy, or link (hard link; a copy across "
                                                              "file systems)")] = "copy") -> None:
    mode = checked_video_mode(video_mode)
    _run([], workspace, videos, video, BuildConfig(), False,
         export={"out": out, "accepted_only": accepted_only, "video_mode": mode})


@build_app.command("all", help="Every stage in order, then export (runs what it can; exit 3 lists what is not done).")
@with_flags(BUILD_FLAGS)
def build_all_cmd(given: dict[str, Any], workspace: WS, videos: Videos = None, video: Only = None,
                  force: Force = False, config: Config = None,
                  out: Out = None, accepted_only: AcceptedOnly = False) -> None:
    _run(list(stage_names()), workspace, videos, video, build_settings(config, given), force,
         export={"out": out, "accepted_only": accepted_only, "video_mode": "copy"})


NotMet = Annotated[list[str] | None, typer.Option(
    "--not-met", help="A criterion of paper §3.2 the dialogue does not meet: capability, grounded or coherent "
                      "(repeatable; the others count as met; accept needs all met).")]


@review_app.command("record", help="Record one annotator's decision on a dialogue.")
def review_record(workspace: WS, item: Annotated[str, typer.Option("--id", help="video/unit/task")],
                  annotator: Annotated[str, typer.Option()],
                  decision: Annotated[str, typer.Option(help="accept|reject")],
                  note: Annotated[str, typer.Option()] = "", not_met: NotMet = None) -> None:
    _review_action(partial(record_review, not_met=not_met or []), workspace, item, annotator, decision, note)


def _review_action(action: Any, workspace: Path, item: str, who: str, decision: str, note: str) -> None:
    """Record one annotator's or the senior's decision; bad input is one clear error."""
    if decision not in ("accept", "reject"):
        fail(f"--decision must be accept or reject, got {decision!r} (a revision with edited text is made in "
             "the web app: `mtvbench review serve WS`)")
    st = action(Workspace(workspace), item, who, decision, note)
    say(f"{item}: {st.status}")
    if st.notice:
        warn(st.notice)


@review_app.command("adjudicate", help="A senior annotator's decision on a disagreement.")
def review_adjudicate(workspace: WS, item: Annotated[str, typer.Option("--id")],
                      senior: Annotated[str, typer.Option()], decision: Annotated[str, typer.Option()],
                      note: Annotated[str, typer.Option()] = "", not_met: NotMet = None,
                      overwrite: Annotated[bool, typer.Option(help="Overwrite a final decision another senior "
                                                                   "made (or the two annotators' agreement).")] = False
                      ) -> None:
    _review_action(partial(adjudicate, not_met=not_met or [], overwrite=overwrite), workspace, item, senior,
                   decision, note)


def review_table(q: ReviewQueue) -> TextTable:
    """The review queue: ids (what ``--id`` takes) and statuses are never cut."""
    rows: list[list[Value]] = [[it.id, it.task.label, it.kind,
                                ", ".join(f"{a.annotator}:{a.decision}" for a in it.annotations) or "–", it.status]
                               for it in q.items.values()]
    return TextTable(columns=[Col("id", "id"), Col("task"), Col("kind", "id"), Col("annotations"),
                              Col("status", "id")], rows=rows,
                     notes=[", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in q.counts().items())])


@review_app.command("status", help="List the review queue.")
def review_status(workspace: WS, output_format: FormatOption = OutputFormat.auto) -> None:
    q = load_queue(Workspace(workspace))
    print_tables([review_table(q)], output_format,
                 json_obj={"items": [{"id": it.id, "task": it.task.value, "kind": it.kind, "status": it.status,
                                      "annotations": [a.model_dump() for a in it.annotations]}
                                     for it in q.items.values()], "counts": q.counts()})
