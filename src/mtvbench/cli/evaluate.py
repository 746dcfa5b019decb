"""``mtvbench validate | run | score | demo``: evaluation on the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from mtvbench.cli.data import check_dataset
from mtvbench.config import load_yaml
from mtvbench.data.layout import FOLDERS_TEXT
from mtvbench.dispatch import Progress
from mtvbench.extras import require_backend
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    console,
    dataset_path,
    emit,
    emit_json,
    make_console,
    note,
    resolve_format,
    say,
    styled,
)
from mtvbench.render.leaderboard import leaderboard_table
from mtvbench.run.flags import require_settings, run_flags, settings_from_flags, with_flags
from mtvbench.run.runner import RunSummary
from mtvbench.run.settings import build_config
from mtvbench.scoring.aggregate import Scores
from mtvbench.scoring.effects import summary_line
from mtvbench.scoring.usage import usage_lines

T = TypeVar("T")

#: the settings flags of `run` (derived from RunConfig, see mtvbench.run.flags)
RUN_FLAGS = run_flags()


class RichRunProgress(Progress):
    """Progress bars of a run (the :class:`~mtvbench.dispatch.Progress` of ``mtvbench run``); a stage with
    nothing to do gets no bar, so a finished run shows no 0/0 bars."""

    def __init__(self, progress: RichProgress):
        self.p = progress
        self.ids: dict[str, Any] = {}
        #: the stages started, with their totals
        self.totals: dict[str, int] = {}

    @property
    def nothing_to_do(self) -> bool:
        """Every stage started with nothing to do: everything was stored already."""
        return bool(self.totals) and not any(self.totals.values())

    def start(self, name: str, total: int) -> None:
        self.totals[name] = total
        if total:
            if not self.ids:  # the bars appear with the first stage that has work
                self.p.start()
            self.ids[name] = self.p.add_task(name, total=total)

    def advance(self, name: str, n: int = 1) -> None:
        if name in self.ids:
            self.p.advance(self.ids[name], n)

    def note(self, label: str, message: str) -> None:
        self.p.console.print(styled([(f"{label}: ", "yellow"), (message, None)]), highlight=False, soft_wrap=True)


def _progress_bar(quiet: bool) -> RichProgress:
    return RichProgress(TextColumn("[bold]{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=make_console(stderr=True), disable=quiet, transient=False)


def validate(path: Annotated[Path, typer.Argument(help=f"dataset root ({FOLDERS_TEXT}) or hf:ORG/NAME")],
             strict: Annotated[bool, typer.Option(help="treat warnings as errors")] = False,
             list_videos: Annotated[bool, typer.Option(
                 "--list-videos", help="one line per video: codec, size, duration, frames")] = False) -> None:
    """Check a dataset in the released layout; list every problem at once.

    Every referenced video must open, have a video stream whose first frame decodes, and not
    be truncated (the verdicts are cached by file content, so checking again is fast).
    Exit status 2 when there are errors (or warnings, with --strict)."""
    if not check_dataset(dataset_path(path), strict, list_videos):
        raise typer.Exit(2)


def _run_with_progress(fn: Callable[[Progress], T], quiet: bool, out: Path | None = None) -> T:
    """``fn`` with progress bars; a run that found everything stored says so (instead of 0/0 bars)."""
    progress = RichRunProgress(_progress_bar(quiet))
    try:
        result = fn(progress)
    finally:
        if progress.ids:
            progress.p.stop()
    if progress.nothing_to_do:
        note("complete", f"{out or 'the run directory'} is already complete: every answer and verdict of these "
             "settings was stored, nothing was asked; the scores are recomputed from the store", style="green")
    return result


def _summarise(summary: RunSummary) -> None:
    for video, msg in summary.failed_videos.items():
        note("video failed", f"{video}: {msg}", style="red")
    if summary.blocked or summary.empty:
        note("not answered", f"{summary.blocked} replies blocked by the provider's content filter, {summary.empty} "
             "empty (e.g. max_tokens spent thinking); final, scored as wrong answers")
    if summary.call_errors or summary.pending_turns or summary.judge_errors:
        note("incomplete", f"{summary.call_errors} model calls failed, {summary.pending_turns} turns "
             f"not reached, {summary.judge_errors} judge calls failed; run the same command again to retry them")
    if summary.judge_unparsed:
        note("judge", f"{summary.judge_unparsed} judge runs gave no parseable verdict (left out of the mean)")
    if summary.last_judge_error and (summary.judge_errors or summary.judge_unparsed):
        note("judge", f"last judge failure: {summary.last_judge_error}")


def status_lines(scores: Scores) -> list[tuple[str, str | None]]:
    """What is said under the Table 2 row: the status (INCOMPLETE with its reasons), the counts and the
    usage, each with its terminal style."""
    label = scores.overall_label()
    chosen = f" (tasks selected: {', '.join(scores.tasks_selected)})" if len(scores.tasks_selected) < 6 else ""
    if scores.complete:
        out: list[tuple[str, str | None]] = [(f"status: complete; Overall {label}{chosen}", None)]
    else:
        out = [(f"status: INCOMPLETE; Overall {label}{chosen}", "bold red")]
        out += [(f"  - {r}", "red") for r in scores.incomplete_reasons]
    if scores.not_a_benchmark is not None:
        out.append((scores.not_a_benchmark.line, "bold yellow"))
    sent, _, detail = scores.inference.partition(" (")  # the line short; what is not reproduced below it
    out.append((f"protocol: {scores.protocol} (model sent: {sent})", None))
    if detail:
        out.append((f"  {detail.removesuffix(')')}", None))
    if (effects := summary_line(scores.protocol_effects, scores.paper_reading)) is not None:
        out.append((effects, "yellow" if any((scores.protocol_effects or {}).values()) else None))
    if scores.ablations:
        out.append((f"ablation (not the paper's setting): {', '.join(scores.ablations)}", "yellow"))
    c = scores.counts
    line = (f"counts: {c.dialogues} dialogues, {c.model_turns} model turns, {c.scored_turns} scored turns, "
            f"{c.unscored_turns} turns without a verdict, {c.missing_responses} without a response, "
            f"{c.unscored_judge_runs} judge runs without a verdict")
    if c.superseded_responses or c.superseded_verdicts:
        line += (f"; kept but not scored (inputs changed since): {c.superseded_responses} responses, "
                 f"{c.superseded_verdicts} verdicts")
    out.append((line, None))
    if (replaced := c.replaced_line()) is not None:
        out.append((replaced, "yellow"))
    if (limited := scores.limit_label()) is not None:
        out.append((f"limit: {limited}", "yellow"))
    if scores.usage is not None:
        out += [(f"usage: {u}", None) for u in usage_lines(scores.usage)]
    return out


def show_scores(scores: Scores, title: str, output_format: OutputFormat | str = OutputFormat.auto) -> None:
    """The Table 2 row, then the status (INCOMPLETE with its reasons), counts and usage, as a terminal
    table or plain text; or the scores as JSON / the leaderboard.md Markdown / the leaderboard.csv row
    (``--format``; the status and usage then go to stderr)."""
    from mtvbench.render.leaderboard import leaderboard_csv, leaderboard_markdown
    from mtvbench.render.tables import to_plain
    from mtvbench.util.escape import rich_text, terminal

    kind = resolve_format(output_format)
    rows = [(scores.display_name, scores)]
    if kind == "json":
        emit_json(scores.model_dump(mode="json"))
        return
    if kind in ("md", "csv"):  # the table on stdout as is; the status and usage as notes on stderr
        emit(leaderboard_markdown(rows) if kind == "md" else leaderboard_csv(rows))
        note("protocol", f"{scores.protocol} (model sent: {scores.inference})")
        if (limited := scores.limit_label()) is not None:
            note("limit", limited, style="yellow")
        if scores.not_a_benchmark is not None:
            note("NOT A BENCHMARK", scores.not_a_benchmark.reason, style="bold yellow")
        if (effects := summary_line(scores.protocol_effects, scores.paper_reading)) is not None:
            note("protocol", effects)
        if scores.ablations:
            note("ablation", f"not the paper's setting: {', '.join(scores.ablations)}", style="yellow")
        if scores.complete:
            note("status", f"complete; Overall {scores.overall_label()}", style="green")
        else:
            note("status", f"INCOMPLETE; Overall {scores.overall_label()}: " + "; ".join(scores.incomplete_reasons),
                 style="bold red")
        if (replaced := scores.counts.replaced_line()) is not None:
            note("replies", replaced, style="yellow")
        if scores.usage is not None:
            for u in usage_lines(scores.usage):
                note("usage", u, style="dim")
        return
    if kind == "plain":
        table = leaderboard_table(rows, title=f"{title}{'' if scores.complete else ' — INCOMPLETE'}").table
        emit(to_plain(table) + "".join(terminal(line) + "\n" for line, _ in status_lines(scores)))
        return
    console.print(leaderboard_table(rows, title=styled([(title, None)] + ([(" — INCOMPLETE", "bold red")]
                                                                          if not scores.complete else []))))
    for line, style in status_lines(scores):
        console.print(rich_text(line, style or ""), highlight=False)


@with_flags(RUN_FLAGS)
def run(
    given: dict[str, Any],
    config: Annotated[Path | None, typer.Option(help="YAML file with the same settings (flags override it)")] = None,
    wait: Annotated[bool, typer.Option(help="wait for another process using --out instead of refusing",
                                       rich_help_panel="Output")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bars", rich_help_panel="Output")] = False,
    answers_from: Annotated[Path | None, typer.Option(
        "--answers-from", help="judge the answers stored in this run directory with --judge, asking the model "
                               "nothing (its dataset, model, settings, context, frames and tasks are taken from "
                               "it; one given must agree): the same answers under several judges (Table 3)")] = None,
) -> None:
    """Evaluate a model on a dataset; rerun the same command to resume.

    --model takes a preset of the paper's models (see `mtvbench models`), or a backend spec:
    openai:NAME, gemini:NAME, hf:PATH_OR_ID, vllm:PATH_OR_ID, oracle, refuse. With --answers-from RUN_DIR
    only --judge and --out are needed: the answers, the model label and the settings that made them are
    RUN_DIR's (one given anyway must agree); the judge's settings, --limit, --seed, --bootstrap and
    --protocol (where it asks what RUN_DIR asked) are this run's."""
    from mtvbench.run.evaluate import evaluate
    from mtvbench.run.replay import answer_settings, check_given

    given_values, origins = settings_from_flags(load_yaml(config) if config else {}, given, RUN_FLAGS)
    source = answers_from or given_values.get("answers_from")
    values = given_values if source is None else answer_settings(given_values, Path(source))
    require_settings(values, ("data", "model", "judge", "out"))
    cfg = build_config(values, source=str(config) if config else "command line", flags=origins)
    if cfg.answers_from is not None:  # every setting given is this run's own, or agrees with the answers' run
        check_given(cfg, given_values, origins, str(config) if config else None)
    if cfg.answers_from is None:
        require_backend(cfg.backend_spec, "model")
    require_backend(cfg.judge, "judge")
    cfg = cfg.model_copy(update={"data": dataset_path(cfg.data)})
    scores, summary = _run_with_progress(lambda p: evaluate(cfg, p, wait=wait), quiet, cfg.out)
    _summarise(summary)
    show_scores(scores.model_copy(update={"model": cfg.model}), f"MT-Video-Bench — {cfg.out}", OutputFormat.table)
    if scores.not_a_benchmark is not None:
        note("NOT A BENCHMARK", f"{cfg.data}: {scores.not_a_benchmark.reason}", style="bold yellow")
    if cfg.answers_from is not None:
        note("answers", f"those stored in {cfg.answers_from}, judged by {cfg.judge}; the model was asked nothing "
             "(recorded in config.yaml and with each answer)")
    say(f"wrote {cfg.out}/scores.json, leaderboard.md, responses.jsonl")
    if summary.call_errors or summary.pending_turns or not scores.complete:
        raise typer.Exit(3)


def score(run_dir: Annotated[Path, typer.Argument(help="a run directory")],
          output_format: FormatOption = OutputFormat.auto) -> None:
    """Recompute scores from what is stored (no API calls). Exit 3 when they are INCOMPLETE.

    While a `run` holds the directory the scores of a consistent snapshot are printed and no
    file is written (the run writes them when it finishes)."""
    from mtvbench.run.rescore import score_dir

    out = score_dir(run_dir)
    show_scores(out.scores, f"MT-Video-Bench — {run_dir}", output_format)
    if out.written:
        note("wrote", f"{run_dir}/scores.json, leaderboard.md, responses.jsonl", style="green")
    else:
        note("run in progress", f"{out.busy}; printed a snapshot of the results so far, wrote no file")
    if not out.scores.complete:
        raise typer.Exit(3)


def demo_legend(data: Path) -> list[tuple[str, str]]:
    """What the demo's table shows: the columns, and what the two baselines are, with the share of checklist
    items that expect No in ``data`` (what ``refuse`` scores, since the judge says No to every item of a
    refusal)."""
    from mtvbench.data.official import load_benchmark
    from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY, TASK_ABBR, TASK_LABEL

    tasks = ", ".join(f"{TASK_ABBR[t]} {TASK_LABEL[t]}" for t in TASK_ABBR)
    shares = {(sum(i.expected == "No" for i in r.checklist or []), len(r.checklist or []))
              for d in load_benchmark(data, check_videos=False).dialogues for r in d.scored_turns if r.checklist}
    if len(shares) == 1:
        (no, n), = shares
        why = (f"every checklist of the sample has {no} of its {n} items expecting No, so refuse scores exactly "
               f"{100 * no / n:.2f} on every task")
    else:
        why = "it scores the share of checklist items that expect No"
    return [
        ("columns", f"{tasks}; Perc. (perceptivity) is the mean of {', '.join(TASK_ABBR[t] for t in PERCEPTIVITY)}, "
         f"Inter. (interactivity) of {', '.join(TASK_ABBR[t] for t in INTERACTIVITY)}; Overall is the mean of the "
         "six tasks; a score is the share of checklist items the judge confirms, in percent"),
        ("oracle", "answers every turn with the dataset's own golden answer: the ceiling the checklists allow "
         "(100.00 when the judge confirms every golden answer)"),
        ("refuse", "declines every turn; the judge says No to every checklist item of a refusal, and " + why
         + ". A model of yours that scores the same on every task is answering nothing the checklists can "
         "confirm (a broken endpoint, an empty reply, a refusal)"),
    ]


def demo(
    out: Annotated[Path, typer.Option(help="where the sample and the runs are written")] = Path("mtvbench-demo"),
    judge_runs: Annotated[int, typer.Option(help="judge runs per turn")] = 1,
    quiet: Annotated[bool, typer.Option(help="no progress bars")] = False,
) -> None:
    """Offline demo on the bundled sample: oracle and refuse baselines, judged by --judge offline."""
    workdir = out
    from mtvbench.data.sample import materialize
    from mtvbench.run.evaluate import evaluate

    judge = "offline"  # explicit, as `run` requires: the demo must work without any API key or download
    data = materialize(workdir / "sample")
    note("demo", f"bundled sample benchmark written to {data.resolve()}", style="cyan")
    note("demo", f"--judge {judge}: the offline lexical matcher, so the demo needs no API key; it checks the "
         "pipeline, its scores are not comparable to the paper's", style="cyan")
    note("demo", "--protocol authors (the default): judged and scored as the authors' released eval.py does; "
         "see docs/guides/protocols.md", style="cyan")
    rows = []
    for model in ("oracle", "refuse"):
        out = workdir / "runs" / model
        note("demo", f"mtvbench run --data {data} --model {model} --judge {judge} --judge-runs {judge_runs} "
             f"--out {out}", style="cyan")
        cfg = build_config({"data": data, "model": model, "judge": judge, "out": out,
                            "judge_runs": judge_runs, "cache_dir": workdir / "frame-cache"}, "demo")
        scores, _ = _run_with_progress(lambda p, cfg=cfg: evaluate(cfg, p), quiet, out)
        rows.append((model, scores))
    console.print(leaderboard_table(rows, title="MT-Video-Bench demo (bundled sample)"))
    for label, text in demo_legend(data):
        note(label, text, style="cyan")
    note("note", "judged by the offline lexical matcher; these numbers check the pipeline "
         "and are not comparable to the paper's. Use --model/--judge openai:... with `mtvbench run` "
         "for real evaluations.")
    say(f"sample data: {data.resolve()}")
    say(f"runs written to {(workdir / 'runs').resolve()} (frame cache: {(workdir / 'frame-cache').resolve()})")
