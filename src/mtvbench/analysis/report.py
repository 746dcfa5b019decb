"""``mtvbench report``: leaderboard (MD/CSV/LaTeX), breakdowns (tables + plots) and ``report.html``
(with the dialogue explorer's files beside it in ``explorer/``) from stored runs. No model is asked anything.

The report is an analysis like the others (:mod:`mtvbench.analysis.registry`): it reads run
directories (:class:`mtvbench.run.rundir.RunDirectory`), breaks the scores down (:mod:`.breakdowns`,
:mod:`.metadata`) and renders them with :mod:`mtvbench.render` (Table 2 layout, plots, the HTML page)."""

from __future__ import annotations

import base64
import csv
import gc
import io
import json
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from mtvbench.analysis.breakdowns import Breakdown, all_breakdowns, breakdown_csv_rows, breakdown_markdown
from mtvbench.analysis.estimate import estimate_vs_actual, read_estimate
from mtvbench.analysis.grounding import grounding_markdown, grounding_report, grounding_table
from mtvbench.analysis.metadata import DialogueMeta, SceneCache, resolve_metadata
from mtvbench.data.schema import TASKS, Dialogue
from mtvbench.errors import InputError
from mtvbench.extras import require_scene_detection
from mtvbench.media.cache import FrameCache
from mtvbench.render import plots
from mtvbench.render.console import FormatOption, OutputFormat, note, print_leaderboard
from mtvbench.render.html import (
    EXPLORER_FOLDER,
    Explorer,
    HtmlReport,
    Section,
    esc,
    explorer_file,
    html_table,
    json_for_script,
    png_img,
    render_html,
)
from mtvbench.render.leaderboard import (
    CI_KEYS,
    COLUMNS,
    RANK_RULE,
    benchmark_notes,
    column_ranks,
    incomplete_notes,
    leaderboard_csv,
    leaderboard_latex,
    leaderboard_markdown_marked,
    ordered,
    overall_cell,
    protocol_notes,
    row_values,
)
from mtvbench.render.tables import display
from mtvbench.run.reportcache import ReportCache, load_for_report
from mtvbench.run.rundir import RunData, RunDirectory, SnapshotMemo, unique_names
from mtvbench.scoring.aggregate import Scores, fmt
from mtvbench.scoring.effects import summary_line
from mtvbench.scoring.usage import cached_words, upper_bound
from mtvbench.util.escape import csv_cell, markdown
from mtvbench.util.files import atomic_write_bytes, atomic_write_text, ensure_dir
from mtvbench.util.heap import collector_paused, long_lived
from mtvbench.util.paths import cache_dir as user_cache_dir

log = logging.getLogger(__name__)

OFFLINE_NOTE = ("Judged by the offline lexical matcher: these numbers check the pipeline and are NOT comparable "
                "to the paper's (which uses Gemini-2.5-Flash as judge).")


@dataclass
class ReportResult:
    out: Path
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: (display name, scores) of every run, in the order given
    rows: list[tuple[str, Scores]] = field(default_factory=list)

    def write(self, name: str, data: str | bytes) -> None:
        """Write ``out/name`` (atomically) and list it."""
        if isinstance(data, bytes):
            atomic_write_bytes(self.out / name, data)
        else:
            atomic_write_text(self.out / name, data)
        self.files.append(self.out / name)


def _shrink(jpeg: bytes, max_side: int) -> bytes:
    from PIL import Image

    im = Image.open(io.BytesIO(jpeg))
    im.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    im.convert("RGB").save(buf, format="JPEG", quality=70)
    return buf.getvalue()


def _from_frame_cache(runs: Sequence[RunData], name: str, path: Path, n: int) -> list[bytes] | None:
    """Frames a run already sampled for this video, if its frame cache holds them."""
    for r in runs:
        if name not in r.videos:
            continue
        cache = FrameCache(r.config.cache_dir if r.config.cache_dir is not None else user_cache_dir("frames"))
        settings = r.config.frame_settings()
        entry = cache.entry_dir(cache.key(path, settings))
        if entry is None or not entry.exists():
            continue
        jpegs = cache.get(path, settings).jpegs
        if not jpegs:
            continue
        step = max(1, len(jpegs) // n)
        return list(jpegs[::step][:n])
    return None


def thumbnails(videos: dict[str, Path], n: int = 4, max_side: int = 160, runs: Sequence[RunData] = ()
               ) -> dict[str, list[str]]:
    """A few frames per video as small base64 JPEGs: taken from a run's frame cache when it
    holds the video, else sampled uniformly now. Missing or unreadable videos get none."""
    if n <= 0:
        return {}
    from mtvbench.media.frames import FrameSettings, VideoError, sample_frames

    settings = FrameSettings(num_frames=n, max_side=max_side, jpeg_quality=70)
    out: dict[str, list[str]] = {}
    for name, path in sorted(videos.items()):
        path = Path(path)
        if not path.exists():
            continue
        try:
            jpegs = _from_frame_cache(runs, name, path, n)
            jpegs = [_shrink(j, max_side) for j in jpegs] if jpegs else sample_frames(path, settings).jpegs
            out[name] = [base64.b64encode(j).decode("ascii") for j in jpegs]
        except (VideoError, OSError) as e:
            log.warning("thumbnails: %s", e)
    return out


def _leaderboard_html(rows: Sequence[tuple[str, Scores]]) -> str:
    rows = ordered(rows)
    ranks = column_ranks(rows)
    body = []
    for (name, s), rk in zip(rows, ranks):
        cells = [esc(name)]
        for j, (v, key) in enumerate(zip(row_values(s), CI_KEYS)):
            txt = esc(overall_cell(s) if j == 0 and v is None else fmt(v))
            if rk[j] == 1:
                txt = f"<b>{txt}</b>"
            elif rk[j] == 2:
                txt = f"<u>{txt}</u>"
            c = s.ci95.get(key)
            if c is not None and v is not None:
                txt += f'<br><span class="ci">[{fmt(c[0])}, {fmt(c[1])}]</span>'
            cells.append(txt)
        cells.append(("complete" if s.complete else '<span class="incomplete">INCOMPLETE</span>')
                     + ("" if s.not_a_benchmark is None else '<br><span class="incomplete">NOT A BENCHMARK</span>'))
        body.append(cells)
    info = []
    for name, s in rows:
        c = s.counts
        info.append([name, s.judge, str(s.judge_runs), fmt(s.judge_run_std), s.context, str(c.dialogues),
                     str(c.scored_turns), str(c.unscored_judge_runs), str(c.missing_responses), s.status,
                     "; ".join(s.incomplete_reasons) or "–",
                     (summary_line(s.protocol_effects, s.paper_reading) or "not counted (scored before)")
                     .removeprefix("protocol effects: ")])
    usage = [[name, role, str(r.calls), str(r.failed_calls), str(r.requests), f"{r.prompt_tokens:,}",
              cached_words(r), f"{r.completion_tokens:,}", f"{r.wall_seconds:.1f}",
              "–" if r.cost is None else f"{r.cost:.4f}" + (" (upper bound)" if upper_bound(r) else "")]
             for name, s in rows if s.usage is not None for role, r in (("model", s.usage.model),
                                                                        ("judge", s.usage.judge))]
    usage_html = "" if not usage else (
        "<h3>Usage and cost</h3>"
        + html_table(["Model", "Role", "Calls", "Failed", "Requests", "Prompt tokens", "Cached (of prompt)",
                      "Completion tokens", "Wall s", "Cost"], usage)
        + "<p>Every call made into the run directory (resumes, failed and superseded calls included); cost from "
          "the prices per million tokens in the run's config (– without a price), cached prompt tokens at its "
          "<code>cached_input</code> price; where a call did not record its cached tokens its prompt is priced "
          "as uncached (an upper bound).</p>")
    return (html_table(["Model", *COLUMNS, "Status"], body, raw=True, cls="lb")
            + "<p>Best in <b>bold</b>, second <u>underlined</u>; 95% bootstrap CI over dialogues below each value. "
            + esc(RANK_RULE) + "</p>"
            + html_table(["Model", "Judge", "Judge runs", "SD of Overall across judge runs", "Context", "Dialogues",
                          "Scored turns", "Unscored judge runs", "Missing responses", "Status", "Incomplete because",
                          "Protocol effects (eval.py's reading vs the paper's)"],
                         info)
            + usage_html)


def _breakdown_html(items: Sequence[Breakdown], plot_pngs: Sequence[tuple[str, bytes]]) -> str:
    labels: list[str] = []
    for b in items:
        labels += [r.label for r in b.rows if r.label not in labels]
    rows = []
    for b in items:
        by = {r.label: r for r in b.rows}
        rows.append([b.run] + [f"{fmt(by[lab].score)} ({by[lab].n})" if lab in by else "– (0)" for lab in labels]
                    + [str(b.unknown)])
    out = [html_table(["Run", *labels, "unknown"], rows)]
    for b in items:
        by = {r.label: r for r in b.rows}
        trows = [[t.abbr] + [f"{fmt(by[lab].tasks[t.value])} ({by[lab].task_n[t.value]})" if lab in by else "– (0)"
                             for lab in labels] for t in TASKS]
        out.append(f"<details><summary>Per task — {esc(b.run)}</summary>{html_table(['Task', *labels], trows)}"
                   "</details>")
    out += [png_img(png, alt) for alt, png in plot_pngs]
    return "".join(out)


def _breakdown_plots(name: str, items: Sequence[Breakdown]) -> list[tuple[str, bytes]]:
    first = items[0]
    labels = [r.label for r in first.rows]
    if not labels:
        return []
    series = {b.run: [next((r.score for r in b.rows if r.label == lab), None) for lab in labels] for b in items}
    counts = [r.n for r in first.rows]
    xlabel = {"scenes": "scenes in the dialogue", "turns": "rounds in the dialogue", "length": "video length (min)",
              "category": "category"}.get(name, name)
    out = [(f"{first.title} (all tasks)", plots.line_plot(labels, series, title=f"{first.title}", xlabel=xlabel,
                                                         counts=counts))]
    if name == "scenes":  # Figure 4(b): per task, per run
        for b in items:
            ts = {t.abbr: [r.tasks[t.value] for r in b.rows] for t in TASKS}
            out.append((f"{first.title} per task — {b.run}",
                        plots.line_plot(labels, ts, title=f"Per task by scenes — {b.run}", xlabel=xlabel)))
    return out


def _explorer_index(explorer: Explorer, runs: Sequence[RunData], names: Sequence[str],
                    meta: dict[str, DialogueMeta], thumbs: bool) -> None:
    """The explorer's index (in the page: what the filters read), beside the files the runs were written to."""
    dialogues, _ = _union(runs)
    order = list(dialogues)
    index = [{"id": d.id, "task": d.task.value, "task_abbr": d.task.abbr, "video": d.video, "event": d.event,
              "meta": meta[d.id].model_dump(include={"category", "scenes", "duration_s"}) if d.id in meta else {},
              "search": " ".join(r.user for r in d.rounds)[:2000], "n_rounds": len(d.rounds)}
             for d in dialogues.values()]
    run_index = []
    for i, (run, name) in enumerate(zip(runs, names)):
        scores = {ds.dialogue_id: ds.score for ds in run.dscores}
        run_index.append({
            "name": name, "complete": run.scores.complete, "model": run.config.model, "judge": run.config.judge,
            "context": run.config.context, "file": f"run-{i}",
            # in the order of the index's dialogues (None: no score, or not a dialogue of this run)
            "scores": [None if scores.get(did) is None else round(100.0 * scores[did], 4) for did in order],
        })
    explorer.page = {"runs": run_index, "dialogues": index, "thumbs": "thumbs" if thumbs else None,
                     "tasks": [{"value": t.value, "abbr": t.abbr, "label": t.label} for t in TASKS]}


def _explorer_dialogues(runs: Sequence[RunData]) -> dict[str, list[dict[str, Any]]]:
    """Every dialogue's rounds and checklists (the explorer's ``dialogues`` file)."""
    return {d.id: [{"index": r.index, "user": r.user, "golden": r.assistant, "ability": r.ability,
                    "model_turn": r.model_turn, "scored": r.scored,
                    "checklist": [{"key": it.key, "question": it.question, "expected": it.expected}
                                  for it in (r.checklist or [])]} for r in d.rounds]
            for d in _union(runs)[0].values()}


def _load_runs(res: ReportResult, explorer: Explorer, run_dirs: Sequence[Path], bootstrap: int | None
               ) -> list[RunData]:
    """Every run, read one after another (:func:`~mtvbench.run.reportcache.load_for_report`: from the report
    cache when the run is in the state an earlier report or the run's end read): its answers and verdicts go to
    its explorer file at once and are then let go (with its per-turn scores), so memory holds one run's answers
    at a time, whatever the number of runs; the dialogues of runs of one benchmark are read once
    (:class:`SnapshotMemo`). The collector is paused meanwhile: each run makes hundreds of thousands of
    records that live until its file is written, and its passes over them free nothing."""
    memo, cache = SnapshotMemo(), ReportCache()
    runs = []
    with long_lived(), collector_paused():  # what the runs read so far keep is left out of the collector's passes
        for i, d in enumerate(run_dirs):
            run, turns = load_for_report(RunDirectory.open(d), bootstrap=bootstrap, memo=memo, cache=cache)
            res.write(f"{EXPLORER_FOLDER}/run-{i}.js", explorer_file(explorer, f"run-{i}", turns))
            runs.append(run)
            gc.freeze()
    return runs


def _union(runs: Sequence[RunData]) -> tuple[dict[str, Dialogue], dict[str, Path]]:
    """Every dialogue and video of the runs (the first run's copy of each)."""
    dialogues: dict[str, Dialogue] = {}
    videos: dict[str, Path] = {}
    for r in runs:
        for d in r.dialogues:
            dialogues.setdefault(d.id, d)
        for k, v in r.videos.items():
            videos.setdefault(k, v)
    return dialogues, videos


def _report_metadata(res: ReportResult, runs: Sequence[RunData], metadata_file: Path | None,
                     scene_cache_dir: Path | None, estimate_scenes: bool) -> dict[str, DialogueMeta]:
    """Category, scene count and duration of every dialogue; ``metadata.json`` and the notes."""
    dialogues, videos = _union(runs)
    if metadata_file is None:  # a dataset made by `mtvbench build export` carries its metadata
        found = [Path(r.config.data) / "metadata.json" for r in runs]
        metadata_file = next((f for f in found if f.exists()), None)
    meta = resolve_metadata(list(dialogues.values()), videos, metadata_file=metadata_file,
                            scene_cache=SceneCache(scene_cache_dir), estimate_scenes=estimate_scenes)
    res.write("metadata.json", json.dumps({k: m.model_dump() for k, m in meta.items()}, indent=1))
    if not any(m.scenes is not None for m in meta.values()):
        res.notes.append("No scene counts: give --metadata, run `mtvbench scenes` first, or pass --estimate-scenes.")
    if not any(m.category for m in meta.values()):
        res.notes.append("No video categories: give them in a --metadata file.")
    return meta


def _estimate_section(runs: Sequence[RunData], names: Sequence[str]) -> Section | None:
    """What ``mtvbench estimate --out RUN_DIR`` said before each run, beside what the run used (None: no run
    directory holds an estimate)."""
    rows = []
    for run, name in zip(runs, names):
        est = read_estimate(run.run_dir)
        if est is not None and run.scores.usage is not None:
            rows += [[name, *row] for row in estimate_vs_actual(est, run.scores.usage)]
    if not rows:
        return None
    return Section("estimate", "Estimate vs actual", html_table(
        ["Run", "Role", "", "Requests", "Prompt tokens", "Cached tokens", "Completion tokens", "Cost"], rows)
        + "<p>The estimate (<code>mtvbench estimate</code>, written before the run; cached tokens under the order "
          "the run used) against every call stored in the run directory.</p>")


def _leaderboard_section(res: ReportResult) -> Section:
    rows = res.rows
    plot_names = {n: n if s.complete else f"{n} (INCOMPLETE)" for n, s in rows}
    png = plots.grouped_bars([c for c in COLUMNS[:7]], {plot_names[n]: row_values(s)[:7] for n, s in rows},
                             title="Leaderboard (95% CI)",
                             errors={plot_names[n]: [s.ci95.get(k) for k in CI_KEYS[:7]] for n, s in rows})
    res.write("plots/leaderboard.png", png)
    return Section("leaderboard", "Leaderboard (Table 2 layout)", _leaderboard_html(rows) + png_img(png, "leaderboard"))


#: how to give a breakdown's values when every dialogue's is unknown
UNKNOWN_HINT = {"scenes": "give --metadata with scenes, or --estimate-scenes",
                "length": "give --metadata with each video's duration",
                "category": "give --metadata with each video's category"}


def _breakdown_sections(res: ReportResult, runs: Sequence[RunData], names: Sequence[str],
                        meta: dict[str, DialogueMeta]) -> list[Section]:
    """``breakdowns.md``/``.csv``, their plots, and one report section per breakdown."""
    per_run = [all_breakdowns(r.dialogues, r.dscores, meta, run=n) for r, n in zip(runs, names)]
    md_parts, csv_rows, sections, left_out = [], [], [], []
    for i, kind in enumerate(b.name for b in per_run[0]):
        items = [pr[i] for pr in per_run]
        md_parts.append(breakdown_markdown(items))
        csv_rows += breakdown_csv_rows(items)
        if not any(r.n for b in items for r in b.rows):  # every dialogue's value unknown: nothing to show
            left_out.append(f"{items[0].title}: left out, the value is unknown for every dialogue "
                            f"({UNKNOWN_HINT.get(kind, 'give --metadata')})")
            continue
        pngs = _breakdown_plots(kind, items) if any(r.n for r in items[0].rows) else []
        for j, (_, png) in enumerate(pngs):
            res.write(f"plots/{kind}{'' if j == 0 else f'_{j}'}.png", png)
        sections.append(Section(f"by-{kind}", items[0].title, _breakdown_html(items, pngs)))
    if left_out:
        sections.append(Section("left-out", "Breakdowns left out",
                                "".join(f"<p>{esc(line)}</p>" for line in left_out)))
    res.write("breakdowns.md", "\n".join(md_parts))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["breakdown", "run", "bin", "task", "n", "score"], lineterminator="\n")
    w.writeheader()
    w.writerows({k: csv_cell(v) for k, v in r.items()} for r in csv_rows)
    res.write("breakdowns.csv", buf.getvalue())
    return sections


def build_report(run_dirs: Sequence[Path], out: Path, *, metadata_file: Path | None = None,
                 scene_cache_dir: Path | None = None, estimate_scenes: bool = False, thumbs: int = 4,
                 title: str = "MT-Video-Bench report", bootstrap: int | None = None) -> ReportResult:
    """Write the report of ``run_dirs`` to ``out`` (see the module docstring); no model is asked. Every folder
    is checked to be a run directory before ``out`` is made, and an ``out`` this call made is removed again
    when the report fails, so a refused report leaves no folder behind."""
    if not run_dirs:
        raise InputError("give at least one run directory")
    for d in run_dirs:
        RunDirectory.open(d)  # a single rule of detection: a partial run directory is refused here
    made = not Path(out).exists()
    res = ReportResult(out=ensure_dir(Path(out)))
    try:
        return _write_report(res, run_dirs, metadata_file=metadata_file, scene_cache_dir=scene_cache_dir,
                             estimate_scenes=estimate_scenes, thumbs=thumbs, title=title, bootstrap=bootstrap)
    except BaseException:
        if made:
            shutil.rmtree(res.out, ignore_errors=True)
        raise


def _write_report(res: ReportResult, run_dirs: Sequence[Path], *, metadata_file: Path | None,
                  scene_cache_dir: Path | None, estimate_scenes: bool, thumbs: int, title: str,
                  bootstrap: int | None) -> ReportResult:
    """The body of :func:`build_report`, into the folder ``res.out``."""
    explorer = Explorer()
    runs = _load_runs(res, explorer, run_dirs, bootstrap)
    names = unique_names(runs)
    res.rows = [(n, r.scores) for n, r in zip(names, runs)]
    if any(r.config.judge == "offline" for r in runs):
        res.notes.append(OFFLINE_NOTE)
    res.notes += protocol_notes(res.rows)
    listed = incomplete_notes(res.rows) + benchmark_notes(res.rows)
    res.notes += listed
    res.write("leaderboard.md", leaderboard_markdown_marked(res.rows)  # (it lists those runs itself)
              + "".join(f"\n> {markdown(n)}\n" for n in res.notes if n not in listed))
    res.write("leaderboard.csv", leaderboard_csv(res.rows))
    res.write("leaderboard.tex", leaderboard_latex(res.rows))
    meta = _report_metadata(res, runs, metadata_file, scene_cache_dir, estimate_scenes)
    sections = [_leaderboard_section(res), *_breakdown_sections(res, runs, names, meta)]
    runs_info = html_table(["Run", "Folder", "Model", "Protocol", "Model sent", "Judge", "Context", "Frames",
                            "Data"],
                           [[n, str(r.run_dir), r.config.model, r.config.protocol_name, r.config.inference_label,
                             f"{r.config.judge} x{r.config.judge_runs}", r.config.context,
                             r.config.frame_settings().key(),
                             r.scores.not_a_benchmark.line if r.scores.not_a_benchmark is not None else "–"]
                            for n, r in zip(names, runs)])
    sections.insert(0, Section("runs", "Runs", runs_info))
    grounding = grounding_report(runs, names, meta)
    if grounding is not None:  # an ablation run beside a run of the paper's setting
        res.write("grounding.md", grounding_markdown(grounding))
        table = grounding_table(grounding)
        sections.append(Section("grounding", table.title or "", html_table(
            [c.name for c in table.columns], [[display(v, c) for v, c in zip(r, table.columns)] for r in table.rows])
            + "".join(f'<p class="note">{esc(n)}</p>' for n in table.notes)))
    estimated = _estimate_section(runs, names)
    if estimated is not None:
        sections.insert(2, estimated)
    res.write(f"{EXPLORER_FOLDER}/dialogues.js",
              explorer_file(explorer, "dialogues", json_for_script(_explorer_dialogues(runs))))
    small = thumbnails(_union(runs)[1], thumbs, runs=runs)
    if small:
        res.write(f"{EXPLORER_FOLDER}/thumbs.js", explorer_file(explorer, "thumbs", json_for_script(small)))
    _explorer_index(explorer, runs, names, meta, bool(small))
    # the explorer's files first, the page that loads them last
    res.write("report.html", render_html(HtmlReport(title=title, sections=sections, notes=res.notes,
                                                    explorer=explorer)))
    return res


def command(
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
    """Leaderboard (MD/CSV/LaTeX), breakdowns and report.html (its explorer's files in explorer/) from stored runs.

    A run that a report read before, or that ended under this mtvbench, is read from the report cache
    ($MTVBENCH_CACHE/reports) when not one byte of its config.yaml, benchmark.json or store changed since;
    otherwise it is read whole (about 2 s for 1,000 dialogues). `mtvbench cache clear` empties the cache."""
    if estimate_scenes:
        require_scene_detection()
    res = build_report(run_dirs, out, metadata_file=metadata, scene_cache_dir=scene_cache,
                       estimate_scenes=estimate_scenes, thumbs=thumbnails, title=title, bootstrap=bootstrap)
    for n in res.notes:
        note("note", n)
    print_leaderboard(res.rows, output_format, title=title,
                      markdown=(out / "leaderboard.md").read_text(encoding="utf-8"))
    note("wrote", f"{len(res.files)} files to {out} (open {out / 'report.html'})", style="green")
