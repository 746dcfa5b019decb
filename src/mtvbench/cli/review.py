"""``mtvbench review ...`` — human verification in the browser (``review_app``).

``serve`` runs the web app over a build workspace or a released-layout dataset (annotators verify
the dialogues), or over a run directory (raters answer the checklists of a sample of its answers,
paper §4.5); ``add-user``/``users`` manage the access tokens, ``export`` writes the reviewed dataset
with its audit trail, or a run directory's ratings as the human file of ``mtvbench agreement``.
Decisions live in ``PATH/review.sqlite``, the same store ``mtvbench build review
record|adjudicate|status`` uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mtvbench.cli.common import new_app
from mtvbench.data.layout import FOLDERS_TEXT
from mtvbench.errors import ConfigError
from mtvbench.render.console import (
    FormatOption,
    OutputFormat,
    emit,
    note,
    print_tables,
    say,
    warn,
)
from mtvbench.render.tables import Col, TextTable
from mtvbench.review.decisions import WORK_JOBS
from mtvbench.review.source import ReviewSource, open_source
from mtvbench.review.store import ReviewStore
from mtvbench.util.files import video_mode as checked_video_mode

if TYPE_CHECKING:
    from mtvbench.review.run_source import RunSource

review_app = new_app("Human verification in the browser: two annotators per dialogue, a senior settles "
                      "disagreements (paper §3.2); or human raters of a run's answers (paper §4.5, Table 3).")

PathArg = Annotated[Path, typer.Argument(help="A build workspace (with review_queue.json), a dataset in the "
                                              f"released layout ({FOLDERS_TEXT}), or a run directory "
                                              "(its answers are rated).", show_default=False)]
StoreOpt = Annotated[Path | None, typer.Option("--store", help="Review store file for a dataset folder or run "
                                                               "directory that must stay untouched (default "
                                                               "PATH/review.sqlite).")]


def _open(path: Path, store: Path | None, create: bool = True) -> tuple[ReviewSource, ReviewStore]:
    source = open_source(path)
    if store is not None and source.kind == "workspace":
        raise ConfigError("--store is for dataset folders and run directories: a build workspace keeps its "
                          f"decisions in {source.default_store} (shared with `mtvbench build review`)")
    return source, ReviewStore(store if store is not None else source.default_store, create=create)


@review_app.command("serve", help="Serve the review web app (annotator, senior and progress pages).")
def serve_command(path: PathArg,
                  host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback "
                                                         "requires users with tokens (add-user).")] = "127.0.0.1",
                  port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free port).")] = 8765,
                  store: StoreOpt = None,
                  guidelines: Annotated[Path | None, typer.Option(
                      help="A Markdown file that replaces the built-in guidelines beside the decision (its HTML "
                           "is shown as text).")] = None,
                  sample_per_task: Annotated[int | None, typer.Option(
                      min=1, help="A run directory: dialogues per task in the raters' sample (default 20, the "
                                  "paper's; all when a task has fewer). Fixed once drawn.")] = None,
                  seed: Annotated[int | None, typer.Option(
                      min=0, help="A run directory: seed of the raters' sample (default 0). Fixed once drawn.")
                  ] = None) -> None:
    from mtvbench.review.guidelines import load_guidelines
    from mtvbench.review.server import serve

    text = load_guidelines(guidelines) if guidelines is not None else None
    source, st = _open(path, store)
    if source.work == "rate":
        _rating_sample(source, st, sample_per_task, seed)
    elif sample_per_task is not None or seed is not None:
        raise ConfigError("--sample-per-task and --seed choose the raters' sample of a run directory; "
                          f"{source.root} is a {source.kind}")

    def ready(url: str) -> None:
        users = st.users()
        say(f"{'rating' if source.work == 'rate' else 'reviewing'} {source.kind} {source.root} "
            f"(decisions in {st.path})")
        if users:
            say(f"serving at {url} — {len(users)} user(s); each signs in with their login link "
                "(`mtvbench review add-user` makes one)")
        else:
            who = "rater" if source.work == "rate" else "annotator"
            say(f"serving at {url} — open mode: no users, anyone on this machine can act as any {who}")
        say("press Ctrl-C to stop; every decision is saved as it is made")

    serve(source, st, host, port, on_ready=ready, guidelines=text)


def _run_source(source: ReviewSource) -> RunSource:
    from mtvbench.review.run_source import RunSource

    assert isinstance(source, RunSource), source
    return source


def _rating_sample(source: ReviewSource, st: ReviewStore, per_task: int | None, seed: int | None) -> None:
    """Fix a run directory's sample (drawn the first time, kept after) and say what it is."""
    run = _run_source(source)
    run.prepare(st, per_task=per_task, seed=seed)
    items = run.load()
    sample = run.sample
    assert sample is not None
    say(f"raters' sample: {len(items)} dialogue(s), {sum(len(it.answers) for it in items)} rated turn(s) (up to "
        f"{sample.per_task} per task, seed {sample.seed}, drawn {sample.at}); every rater rates every one")
    if run.unanswered:
        warn(f"INCOMPLETE run: {run.unanswered} scored turn(s) of the sample have no answer yet and are not rated")


@review_app.command("add-user", help="Register an annotator or senior and print their login link (shown once).")
def add_user_command(path: PathArg,
                     name: Annotated[str, typer.Argument(help="The person's name as shown in the app.",
                                                         show_default=False)],
                     job: Annotated[str, typer.Option(help="annotator or senior (a build workspace or dataset); "
                                                           "rater or senior (a run directory)")] = "annotator",
                     url: Annotated[str, typer.Option(help="Address the annotators open (the server's "
                                                           "--host/--port).")] = "http://127.0.0.1:8765",
                     replace: Annotated[bool, typer.Option(help="Give an existing user a new token (the old "
                                                                "one stops working).")] = False,
                     store: StoreOpt = None) -> None:
    source, st = _open(path, store)
    jobs = WORK_JOBS[source.work]
    if job not in jobs:
        raise ConfigError(f"--job must be one of {', '.join(jobs)} for a {source.kind}, got {job!r}")
    token = st.add_user(name, job, replace=replace)
    note("login link", f"for {name} ({job}); give it to them privately, it is not stored and not shown again",
         style="green")
    emit(f"{url.rstrip('/')}/#token={token}")


@review_app.command("users", help="List the registered users, or remove some (--remove NAME).")
def users_command(path: PathArg,
                  remove: Annotated[list[str] | None, typer.Option("--remove", help="Revoke this user's token "
                                                                                    "(repeatable).")] = None,
                  store: StoreOpt = None, output_format: FormatOption = OutputFormat.auto) -> None:
    _, st = _open(path, store)
    for name in remove or []:
        if not st.remove_user(name):
            raise ConfigError(f"no user {name!r}")
        note("removed", f"{name}: their login link and video links stop working now", style="green")
    users = st.users()
    print_tables([TextTable(columns=[Col("name", "id"), Col("job"), Col("since", key="created_at")],
                            rows=[[u.name, u.job, u.created_at] for u in users], title="Review users")],
                 output_format, json_obj=[u.model_dump(mode="json") for u in users])


@review_app.command("export", help="Write the reviewed dataset (released layout, revisions applied) and review.json; "
                                   "for a run directory, its ratings as the human file of `mtvbench agreement`.")
def export_command(path: PathArg,
                   out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write (new, empty, or an "
                                                                           "earlier review export); for a run "
                                                                           "directory a file, e.g. human.jsonl.")],
                   accepted_only: Annotated[bool, typer.Option(help="Only dialogues accepted in review (default: "
                                                                    "every dialogue not rejected).")] = False,
                   video_mode: Annotated[str, typer.Option(help="link (hard link; a copy across file systems) "
                                                                "or copy")] = "link",
                   store: StoreOpt = None) -> None:
    from mtvbench.review.export import export_review

    mode = checked_video_mode(video_mode)
    if open_source(path).work == "rate":
        if accepted_only:
            raise ConfigError("--accepted-only is for a reviewed dataset; a run directory's export is its ratings")
        _export_ratings(*_open(path, store, create=False), out)
        return
    source, st = _open(path, store)
    rep = export_review(source, st, out, accepted_only=accepted_only, video_mode=mode)
    say(f"exported {rep.exported} dialogue(s) ({rep.revised} with a senior's revision) and {rep.videos} video(s) "
        f"to {rep.out}; audit trail in {Path(rep.out) / 'review.json'}")
    say("review status: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.counts.items())))
    unfinished = rep.counts.get("pending", 0) + rep.counts.get("needs_adjudication", 0)
    if unfinished:
        what = "left out" if accepted_only else "exported unverified"
        warn(f"INCOMPLETE review: {unfinished} dialogue(s) without a final decision ({what})")
        raise typer.Exit(3)


def _export_ratings(source: ReviewSource, st: ReviewStore, out: Path) -> None:
    """A run directory's ratings -> the human file of ``agreement``; exit 3 (INCOMPLETE) while a rater has
    not rated every sampled dialogue."""
    from mtvbench.review.rating import export_ratings
    from mtvbench.review.run_source import SAMPLE_KEY

    run = _run_source(source)
    if st.setting(SAMPLE_KEY) is None:
        raise ConfigError(f"{st.path}: no raters' sample yet: nothing has been rated",
                          hint=f"serve the run directory to its raters first (mtvbench review serve {run.root})")
    run.prepare(st)
    items = run.load()
    ratings, outdated = st.ratings({it.id: it.content_hash for it in items})
    rep = export_ratings(items, ratings, outdated, run.sample.seed if run.sample else None, out)
    say(f"exported {rep.records} checklist answer(s) of {len(rep.rated)} rater(s) on {rep.items} sampled "
        f"dialogue(s) (seed {rep.seed}) to {rep.out}")
    say(f"next: mtvbench agreement {run.root} RUN2 ... --human {rep.out} --level dialogue")
    if rep.outdated:
        warn(f"{rep.outdated} rating(s) were made on answers that have changed since (a resumed run): not exported")
    if rep.incomplete:
        warn("INCOMPLETE ratings: " + ", ".join(f"{name} has {n} of {rep.items} dialogue(s) left"
                                                  for name, n in sorted(rep.incomplete.items())))
        raise typer.Exit(3)
