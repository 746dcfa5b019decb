"""The paper's ablations: one run per setting of frames (Figure 5b), max side (Figure 5c)
and context (Figure 4c), then their tables and plots. ``mtvbench sweep`` takes ``run``'s settings
flags and ``--config`` (derived from the run settings, :func:`mtvbench.run.flags.sweep_flags`), except
the swept settings and ``--out``, which are its own. Figure 5a (turn count) is the
``turns`` breakdown of any run (see :mod:`mtvbench.analysis.breakdowns`).

Settings not being swept stay at the base values (the paper: 128 frames, max side 720,
golden context). Each setting gets its own run directory named after the full setting
(``f128-m720-golden``), so a setting shared by two axes is run once, and every run shares
one frame cache: re-running the sweep resumes each run and asks only for what is missing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from mtvbench.config import RunConfig, build_config, load_yaml
from mtvbench.data.schema import TASKS
from mtvbench.errors import ConfigError
from mtvbench.extras import require_backend
from mtvbench.render.console import FormatOption, OutputFormat, dataset_path, emit, note, print_tables, resolve_format
from mtvbench.render.tables import Col, TextTable, Value, display, to_markdown
from mtvbench.run.flags import require_settings, settings_from_flags, sweep_flags, with_flags
from mtvbench.scoring.aggregate import Scores, fmt, modified_name
from mtvbench.util.escape import csv_cell, html

AXES = ("frames", "max_side", "context")
AXIS_TITLE = {"frames": "Number of frames (Figure 5b)", "max_side": "Max frame side, px (Figure 5c)",
              "context": "Dialogue context (Figure 4c)"}


class SweepPoint(BaseModel):
    axis: str
    value: str
    run_dir: Path
    scores: Scores | None = None


def setting_dir(cfg: RunConfig) -> str:
    side = "full" if cfg.max_side is None else str(cfg.max_side)
    return f"f{cfg.frames}-m{side}-{cfg.context}"


def plan_sweep(base: dict[str, Any], out_root: Path, *, frames: Sequence[int] = (), max_sides: Sequence[int] = (),
               contexts: Sequence[str] = (), flags: Mapping[str, str] | None = None
               ) -> list[tuple[str, str, RunConfig]]:
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
    return plan


def run_sweep(base: dict[str, Any], out_root: Path, *, frames: Sequence[int] = (), max_sides: Sequence[int] = (),
              contexts: Sequence[str] = (), progress_factory: Callable[[RunConfig], Any] | None = None,
              on_done: Callable[[SweepPoint], None] | None = None, flags: Mapping[str, str] | None = None
              ) -> list[SweepPoint]:
    from mtvbench.run.evaluate import evaluate

    points: list[SweepPoint] = []
    done: dict[Path, Scores] = {}
    for axis, value, cfg in plan_sweep(base, out_root, frames=frames, max_sides=max_sides, contexts=contexts,
                                       flags=flags):
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
    from mtvbench.analysis.rundata import load_run

    runs = [load_run(p, bootstrap=0) for p in sorted(Path(out_root).iterdir()) if (p / "config.yaml").exists()]
    pts = []
    for r in runs:
        c = r.config
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
        order = {"golden": 0, "self": 1, "none": 2}
        pts.sort(key=lambda p: order.get(p.value, 9))
    return pts


#: the preset value each axis changes on purpose (not worth a "modified" mark in its own table)
AXIS_OVERRIDE = {"frames": "frames", "max_side": "frame size", "context": ""}


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


def sweep_tables(points: Sequence[SweepPoint]) -> list[TextTable]:
    """One table per swept axis: Overall (or ``partial, k/6 tasks: x``, ``partial, --limit N: x``),
    tasks, status, run folder; notes for partial, modified and incomplete settings."""
    out = []
    for axis in AXES:
        pts = _axis_points(points, axis)
        if not pts:
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
    config: ConfigOption = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """One run per setting (resumable, sharing the frame cache), then Figure 5b/5c/4c tables and plots.

    Takes run's settings flags and --config (the generation flags, --model-option, --judge-option, ...);
    the settings not swept are the base of every run."""
    fr, ms, ctx = _csv_list(frames), _csv_list(max_side), _csv_list(context, str)
    if not (fr or ms or ctx):
        raise ConfigError("give at least one of --frames, --max-side, --context")
    base, origins = settings_from_flags(load_yaml(config) if config else {}, given, SWEEP_FLAGS)
    swept = [axis for axis, vals in (("frames", fr), ("max_side", ms), ("context", ctx)) if vals]
    for key in ("out", *swept):
        base.pop(key, None)  # the sweep's own; the settings not swept (a --config's frames: 64) are the base
    require_settings(base, ("data", "model", "judge"))
    source = str(config) if config else "command line"
    probe = build_config({**base, "out": out}, source, flags=origins)
    require_backend(probe.backend_spec, "model")
    require_backend(probe.judge, "judge")
    base["data"] = dataset_path(probe.data)
    points = run_sweep(base, out, frames=fr, max_sides=ms, contexts=ctx,
                       on_done=lambda p: note("done", point_label(p), style="green"), flags=origins)
    files = write_sweep_report(points, out, probe.model)
    if resolve_format(output_format) == "csv":
        emit(sweep_csv(points))  # every axis in one long table
    else:
        print_tables(sweep_tables(points), output_format, json_obj=[p.model_dump(mode="json") for p in points])
    note("wrote", f"{len(files)} files to {out}", style="green")
