"""The paper's ablations: one run per setting of frames (Figure 5b), max side (Figure 5c)
and context (Figure 4c), then their tables and plots. ``mtvbench sweep`` takes ``run``'s settings
flags and ``--config`` (derived from the run settings, :func:`mtvbench.run.flags.sweep_flags`), except
the swept settings and ``--out``, which are its own. Figure 5a (turn count) is the
``turns`` breakdown of any run (see :mod:`mtvbench.analysis.breakdowns`).

Settings not being swept stay at the base values (the paper: 128 frames, max side 720,
golden context). Each setting gets its own run directory named after the full setting
(``f128-m720-golden``), so a setting shared by two axes is run once, and every run shares
one frame cache: re-running the sweep resumes each run and asks only for what is missing.

The temporal grounding ablations form a grid of two axes (``--sampling uniform,clip --frame-timestamps off,on``:
one run per pair, axis ``grounding``); its table gives each setting's Overall and tasks, and the paired bootstrap
difference of its Overall from the paper's setting (uniform, no timestamps) with its 95 % CI
(:func:`mtvbench.analysis.compare.paired_bootstrap`, paired by dialogue), and the share of turns that named a range.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from mtvbench.config import RunConfig, load_yaml
from mtvbench.data.schema import TASKS
from mtvbench.errors import ConfigError
from mtvbench.extras import require_backend
from mtvbench.render.console import FormatOption, OutputFormat, dataset_path, emit, note, print_tables, resolve_format
from mtvbench.render.tables import Col, TextTable, Value, display, to_markdown
from mtvbench.run.flags import require_settings, settings_from_flags, sweep_flags, with_flags
from mtvbench.run.settings import build_config
from mtvbench.scoring.aggregate import Scores, fmt, modified_name
from mtvbench.util.escape import csv_cell, html

AXES = ("frames", "max_side", "context", "grounding")
AXIS_TITLE = {"frames": "Number of frames (Figure 5b)", "max_side": "Max frame side, px (Figure 5c)",
              "context": "Dialogue context (Figure 4c)",
              "grounding": "Temporal grounding: sampling x frame timestamps (an ablation, not in the paper)"}
#: the paper's setting on the grounding grid, the reference of its differences
GROUNDING_BASE = "uniform/off"


class SweepPoint(BaseModel):
    axis: str
    value: str
    run_dir: Path
    scores: Scores | None = None


def setting_dir(cfg: RunConfig) -> str:
    side = "full" if cfg.max_side is None else str(cfg.max_side)
    clip = f"-clip{cfg.clip_share:g}" if cfg.sampling == "clip" else ""
    stamps = "-ts" if cfg.frame_timestamps == "on" else ""
    return f"f{cfg.frames}-m{side}-{cfg.context}{clip}{stamps}"


def grounding_value(cfg: RunConfig) -> str:
    """A run's place on the grounding grid: ``uniform/off``, ``clip/on``, ..."""
    return f"{cfg.sampling}/{cfg.frame_timestamps}"


def plan_sweep(base: dict[str, Any], out_root: Path, *, frames: Sequence[int] = (), max_sides: Sequence[int] = (),
               contexts: Sequence[str] = (), flags: Mapping[str, str] | None = None,
               samplings: Sequence[str] = (), timestamps: Sequence[str] = ()) -> list[tuple[str, str, RunConfig]]:
    """(axis, value, config) per setting; configs of equal settings share one ``out``. ``flags`` names
    the flag that gave a base setting, for messages (:func:`mtvbench.config.build_config`)."""
    base = dict(base)
    base.setdefault("frames", 128)
    base.setdefault("max_side", 720)
    base.setdefault("context", "golden")
    if base.get("cache_dir") is None:
        from mtvbench.run.evaluate import default_cache_dir

        base["cache_dir"] = default_cache_dir()
    plan = []
    for axis, values in (("frames", frames), ("max_side", max_sides), ("context", contexts)):
        for v in values:
            vals = {**base, axis: v, "out": out_root / "tmp"}
            cfg = build_config(vals, source=f"sweep {axis}={v}", flags=flags)
            cfg = cfg.model_copy(update={"out": Path(out_root) / setting_dir(cfg)})
            plan.append((axis, str(v), cfg))
    if samplings or timestamps:  # a grid of the two axes (one of them alone: the other at its default)
        for sampling in samplings or ["uniform"]:
            for stamp in timestamps or ["off"]:
                vals = {**base, "sampling": sampling, "frame_timestamps": stamp, "out": out_root / "tmp"}
                cfg = build_config(vals, source=f"sweep sampling={sampling} frame_timestamps={stamp}", flags=flags)
                cfg = cfg.model_copy(update={"out": Path(out_root) / setting_dir(cfg)})
                plan.append(("grounding", grounding_value(cfg), cfg))
    return plan


def run_sweep(base: dict[str, Any], out_root: Path, *, frames: Sequence[int] = (), max_sides: Sequence[int] = (),
              contexts: Sequence[str] = (), progress_factory: Callable[[RunConfig], Any] | None = None,
              on_done: Callable[[SweepPoint], None] | None = None, flags: Mapping[str, str] | None = None,
              samplings: Sequence[str] = (), timestamps: Sequence[str] = ()) -> list[SweepPoint]:
    from mtvbench.run.evaluate import evaluate

    points: list[SweepPoint] = []
    done: dict[Path, Scores] = {}
    for axis, value, cfg in plan_sweep(base, out_root, frames=frames, max_sides=max_sides, contexts=contexts,
                                       flags=flags, samplings=samplings, timestamps=timestamps):
        if cfg.out not in done:
            scores, _ = evaluate(cfg, progress_factory(cfg) if progress_factory else None)
            done[cfg.out] = scores
        p = SweepPoint(axis=axis, value=value, run_dir=cfg.out, scores=done[cfg.out])
        points.append(p)
        if on_done:
            on_done(p)
    return points


def points_from_dirs(out_root: Path) -> list[SweepPoint]:
    """Re-read a finished sweep folder (no calls): every run dir under it, placed on each
    axis where it differs from the base only in that setting."""
    from mtvbench.run.rundir import RunDirectory

    found = [RunDirectory.detect(p) for p in sorted(Path(out_root).iterdir())]
    runs = [rd.load(bootstrap=0) for rd in found if rd is not None]
    pts = []
    for r in runs:
        c = r.config
        if c.ablations:  # a grounding ablation: on its grid only
            pts.append(SweepPoint(axis="grounding", value=grounding_value(c), run_dir=r.run_dir, scores=r.scores))
            continue
        if any(x.config.ablations and (x.config.frames, x.config.max_side, x.config.context)
               == (c.frames, c.max_side, c.context) for x in runs):
            pts.append(SweepPoint(axis="grounding", value=GROUNDING_BASE, run_dir=r.run_dir, scores=r.scores))
        if c.max_side == 720 and c.context == "golden":
            pts.append(SweepPoint(axis="frames", value=str(c.frames), run_dir=r.run_dir, scores=r.scores))
        if c.frames == 128 and c.context == "golden":
            pts.append(SweepPoint(axis="max_side", value=str(c.max_side), run_dir=r.run_dir, scores=r.scores))
        if c.frames == 128 and c.max_side == 720:
            pts.append(SweepPoint(axis="context", value=c.context, run_dir=r.run_dir, scores=r.scores))
    return pts


def _axis_points(points: Sequence[SweepPoint], axis: str) -> list[SweepPoint]:
    pts = [p for p in points if p.axis == axis]
    if axis in ("frames", "max_side"):
        pts.sort(key=lambda p: float(p.value) if p.value not in ("None", "") else float("inf"))
    else:
        order = {"golden": 0, "self": 1, "none": 2, GROUNDING_BASE: 0, "uniform/on": 1, "clip/off": 2, "clip/on": 3}
        pts.sort(key=lambda p: order.get(p.value, 9))
    return pts


#: the preset value each axis changes on purpose (not worth a "modified" mark in its own table)
AXIS_OVERRIDE = {"frames": "frames", "max_side": "frame size", "context": "", "grounding": ""}


def overall_cell(s: Scores) -> str:
    """A setting's Overall: ``partial, --limit N: x`` for a run over at most N dialogues per task
    (a smoke run, not the benchmark), else :meth:`Scores.overall_label`."""
    if s.limit is not None:
        value = s.overall if s.overall is not None else s.overall_partial
        return f"partial, --limit {s.limit}: {fmt(value)}"
    return s.overall_label()


def status_cell(s: Scores) -> str:
    return s.status if s.limit is None else f"{s.status}, partial (--limit {s.limit})"


def point_label(p: SweepPoint) -> str:
    """One line for a finished setting: ``frames=16: Overall 20.00 (complete)``, rounded."""
    if p.scores is None:
        return f"{p.axis}={p.value}: no scores ({p.run_dir})"
    return f"{p.axis}={p.value}: Overall {overall_cell(p.scores)} ({status_cell(p.scores)}; {p.run_dir})"


def _row(p: SweepPoint) -> list[Value]:
    s = p.scores
    return ([p.value, overall_cell(s) if s else None] + [s.tasks.get(t.value) if s else None for t in TASKS]
            + [status_cell(s) if s else None, p.run_dir.name])


def _notes(axis: str, pts: Sequence[SweepPoint]) -> list[str]:
    """What the reader must know under an axis's table: partial runs (--limit), preset values
    overridden besides the swept one, incomplete settings."""
    scored = [p.scores for p in pts if p.scores is not None]
    notes = []
    limits = sorted({s.limit for s in scored if s.limit is not None})
    if limits:
        notes.append(f"PARTIAL: made with --limit {', '.join(map(str, limits))} (at most that many dialogues per "
                     "task), not over the whole benchmark; these numbers are not the paper's.")
    changed = sorted({o for s in scored for o in s.preset_overrides} - {AXIS_OVERRIDE[axis]})
    if changed:
        notes.append(f"{modified_name(scored[0].model, changed)}: preset values overridden besides the swept "
                     f"{axis}; not the preset's paper settings.")
    notes += [f"{p.value}: INCOMPLETE — " + "; ".join(p.scores.incomplete_reasons)
              for p in pts if p.scores is not None and not p.scores.complete]
    return notes


def grounding_rows(pts: Sequence[SweepPoint], n_boot: int = 2000, seed: int = 0) -> tuple[list[list[Value]], list[str]]:
    """The grounding grid's rows: each setting's scores, the paired bootstrap difference of its Overall from
    ``uniform/off`` with the 95 % CI, and the share of its turns whose text named a range."""
    from mtvbench.analysis.compare import paired_bootstrap
    from mtvbench.run.plan import rounds_to_call, turn_ranges
    from mtvbench.run.rundir import RunDirectory

    found = {p.value: RunDirectory.detect(p.run_dir) for p in pts}
    runs = {value: rd.load(bootstrap=0) for value, rd in found.items() if rd is not None}
    base = runs.get(GROUNDING_BASE)
    rows: list[list[Value]] = []
    notes: list[str] = []
    for p in pts:
        r = runs.get(p.value)
        diff = ci = None
        if base is not None and r is not None and p.value != GROUNDING_BASE:
            overall = paired_bootstrap(base.dscores, r.dscores, n_boot=n_boot, seed=seed).rows[0]
            diff = overall.diff
            ci = (f"[{overall.ci95[0]:+.2f}, {overall.ci95[1]:+.2f}]" if overall.ci95 is not None
                  else (overall.withheld or "–"))
        named = None
        if r is not None:
            turns = [(d, x) for d in r.dialogues for x in rounds_to_call(d, r.config.context)]
            # the share is of the text's ranges (no video length needed: any named part counts)
            named = (100.0 * sum(bool(turn_ranges(d, x, "golden" if r.config.context == "self" else r.config.context,
                                                  float("inf")).ranges) for d, x in turns) / len(turns)
                     if turns else None)
        rows.append(_row(p)[:-2] + [diff, ci, named] + _row(p)[-2:])
    if base is None:
        notes.append(f"no {GROUNDING_BASE} run: no differences are given")
    notes.append("Δ Overall: the setting's Overall minus uniform/off's, paired by dialogue (bootstrap over "
                 "dialogues, 95 % CI); named range %: the turns whose text named a part of the video (self context: "
                 "read in the golden history).")
    return rows, notes


def sweep_tables(points: Sequence[SweepPoint]) -> list[TextTable]:
    """One table per swept axis: Overall (or ``partial, k/6 tasks: x``, ``partial, --limit N: x``),
    tasks, status, run folder; notes for partial, modified and incomplete settings."""
    out = []
    for axis in AXES:
        pts = _axis_points(points, axis)
        if not pts:
            continue
        if axis == "grounding":
            rows, extra = grounding_rows(pts)
            out.append(TextTable(
                columns=[Col("sampling/timestamps", "id"), Col("Overall", "text")] + [Col(t.abbr, "num") for t in TASKS]
                + [Col("Δ Overall", "num"), Col("95% CI", "text"), Col("named range %", "num"),
                   Col("status", "text"), Col("run", "id")],
                rows=rows, title=AXIS_TITLE[axis], notes=_notes(axis, pts) + extra))
            continue
        out.append(TextTable(
            columns=[Col(axis, "id"), Col("Overall", "text", right=True)] + [Col(t.abbr, "num") for t in TASKS]
            + [Col("status", "text"), Col("run", "id")],
            rows=[_row(p) for p in pts], title=AXIS_TITLE[axis], notes=_notes(axis, pts),
            row_styles=[None if p.scores is not None and p.scores.complete and p.scores.limit is None else "yellow"
                        for p in pts]))
    return out


def sweep_markdown(points: Sequence[SweepPoint]) -> str:
    return "\n".join(to_markdown(t) for t in sweep_tables(points))


def sweep_csv(points: Sequence[SweepPoint]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["axis", "value", "Overall", *(t.abbr for t in TASKS), "status", "overall_partial", "tasks_scored",
                "limit", "preset_overrides", "run_dir"])
    for axis in AXES:
        for p in _axis_points(points, axis):
            s = p.scores
            vals = [s.overall if s else None] + [s.tasks.get(t.value) if s else None for t in TASKS]
            w.writerow([axis, csv_cell(p.value), *(csv_cell(v) for v in vals), s.status if s else "",
                        csv_cell(s.overall_partial if s else None), csv_cell(s.tasks_scored if s else None),
                        csv_cell(s.limit if s else None), csv_cell("; ".join(s.preset_overrides) if s else None),
                        csv_cell(str(p.run_dir))])
    return buf.getvalue()


def sweep_plots(points: Sequence[SweepPoint], model: str = "") -> dict[str, bytes]:
    from mtvbench.render import plots

    out: dict[str, bytes] = {}
    for axis in ("frames", "max_side"):
        pts = _axis_points(points, axis)
        if pts:
            out[axis] = plots.line_plot([p.value for p in pts],
                                        {model or "model": [p.scores.overall if p.scores else None for p in pts]},
                                        title=AXIS_TITLE[axis], xlabel=axis)
    pts = _axis_points(points, "context")
    if pts:
        out["context"] = plots.grouped_bars(
            [t.abbr for t in TASKS] + ["Overall"],
            {p.value: [p.scores.tasks.get(t.value) if p.scores else None for t in TASKS]
             + [p.scores.overall if p.scores else None] for p in pts},
            title=AXIS_TITLE["context"])
    return out


def write_sweep_report(points: Sequence[SweepPoint], out: Path, model: str = "") -> list[Path]:
    from mtvbench.render.html import HtmlReport, Section, html_table, png_img, render_html
    from mtvbench.util.files import atomic_write_bytes, atomic_write_text

    out = Path(out)
    files = []
    atomic_write_text(out / "sweep.md", sweep_markdown(points))
    atomic_write_text(out / "sweep.csv", sweep_csv(points))
    files += [out / "sweep.md", out / "sweep.csv"]
    pngs = sweep_plots(points, model)
    tables = {t.columns[0].name: t for t in sweep_tables(points)}
    sections = []
    for axis, png in pngs.items():
        atomic_write_bytes(out / f"sweep_{axis}.png", png)
        files.append(out / f"sweep_{axis}.png")
        t = tables[axis]
        rows = [[display(v, c) for v, c in zip(r, t.columns)] for r in t.rows]
        notes = "".join(f'<p class="note">{html(n)}</p>' for n in t.notes)
        sections.append(Section(f"sweep-{axis}", AXIS_TITLE[axis],
                                html_table([c.name for c in t.columns], rows) + notes + png_img(png, axis)))
    grid = tables.get("sampling/timestamps")
    if grid is not None:  # the grounding grid: a table, no plot
        rows = [[display(v, c) for v, c in zip(r, grid.columns)] for r in grid.rows]
        sections.append(Section("sweep-grounding", AXIS_TITLE["grounding"],
                                html_table([c.name for c in grid.columns], rows)
                                + "".join(f'<p class="note">{html(n)}</p>' for n in grid.notes)))
    atomic_write_text(out / "sweep.html", render_html(HtmlReport(title=f"MT-Video-Bench sweep {model}".strip(),
                                                                 sections=sections)))
    files.append(out / "sweep.html")
    return files


def _csv_list(text: str | None, cast: Any = int) -> list[Any]:
    if not text:
        return []
    try:
        return [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise ConfigError(f"bad list {text!r}: {e}") from None


#: run's settings flags, less the settings a sweep takes as lists (mtvbench.run.flags)
SWEEP_FLAGS = sweep_flags()
#: a run's settings file: the base of every run of the sweep
ConfigOption = Annotated[Path | None, typer.Option(help="YAML file with run's settings (flags override it): the base "
                                                        "of every run; the swept settings and out are the sweep's own")]


@with_flags(SWEEP_FLAGS)
def command(
    given: dict[str, Any],
    out: Annotated[Path, typer.Option(help="sweep folder: one run directory per setting + the sweep report")],
    frames: Annotated[str | None, typer.Option(help="e.g. 16,32,64,128,256 (Figure 5b)")] = None,
    max_side: Annotated[str | None, typer.Option(help="e.g. 120,240,480,720,960 (Figure 5c)")] = None,
    context: Annotated[str | None, typer.Option(help="e.g. golden,self,none (Figure 4c)")] = None,
    sampling: Annotated[str | None, typer.Option(help="e.g. uniform,clip: a grid with --frame-timestamps "
                                                      "(temporal grounding ablation)")] = None,
    frame_timestamps: Annotated[str | None, typer.Option(help="e.g. off,on: a grid with --sampling")] = None,
    config: ConfigOption = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """One run per setting (resumable, sharing the frame cache), then Figure 5b/5c/4c tables and plots.

    Takes run's settings flags and --config (the generation flags, --model-option, --judge-option, ...);
    the settings not swept are the base of every run."""
    fr, ms, ctx = _csv_list(frames), _csv_list(max_side), _csv_list(context, str)
    smp, ts = _csv_list(sampling, str), _csv_list(frame_timestamps, str)
    if not (fr or ms or ctx or smp or ts):
        raise ConfigError("give at least one of --frames, --max-side, --context, --sampling, --frame-timestamps")
    base, origins = settings_from_flags(load_yaml(config) if config else {}, given, SWEEP_FLAGS)
    swept = [axis for axis, vals in (("frames", fr), ("max_side", ms), ("context", ctx), ("sampling", smp),
                                     ("frame_timestamps", ts)) if vals]
    for key in ("out", *swept):
        base.pop(key, None)  # the sweep's own; the settings not swept (a --config's frames: 64) are the base
    require_settings(base, ("data", "model", "judge"))
    source = str(config) if config else "command line"
    probe = build_config({**base, "out": out}, source, flags=origins)
    require_backend(probe.backend_spec, "model")
    require_backend(probe.judge, "judge")
    base["data"] = dataset_path(probe.data)
    points = run_sweep(base, out, frames=fr, max_sides=ms, contexts=ctx,
                       on_done=lambda p: note("done", point_label(p), style="green"), flags=origins,
                       samplings=smp, timestamps=ts)
    files = write_sweep_report(points, out, probe.model)
    if resolve_format(output_format) == "csv":
        emit(sweep_csv(points))  # every axis in one long table
    else:
        print_tables(sweep_tables(points), output_format, json_obj=[p.model_dump(mode="json") for p in points])
    note("wrote", f"{len(files)} files to {out}", style="green")
