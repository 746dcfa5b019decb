"""``mtvbench review ...`` — human verification in the browser (``review_app``).

``serve`` runs the web app over a build workspace or a released-layout dataset,
``add-user``/``users`` manage the annotators' access tokens, ``export`` writes the
reviewed dataset with its audit trail. Decisions live in ``PATH/review.sqlite``, the same
store ``mtvbench build review record|adjudicate|status`` uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mtvbench.cli.common import new_app
from mtvbench.errors import ConfigError
from mtvbench.render.console import FormatOption, OutputFormat, emit, note, print_tables, say, warn
from mtvbench.render.tables import Col, TextTable
from mtvbench.review.model import ROLES
from mtvbench.review.source import ReviewSource, open_source
from mtvbench.review.store import ReviewStore
from mtvbench.util.files import video_mode as checked_video_mode

review_app = new_app("Human verification in the browser: two annotators per dialogue, a senior settles "
                      "disagreements (paper §3.2).")

PathArg = Annotated[Path, typer.Argument(help="A build workspace (with review_queue.json) or a dataset in the "
                                              "released layout (mtqa/, checklist/, videos/).", show_default=False)]
StoreOpt = Annotated[Path | None, typer.Option("--store", help="Review store file for a dataset folder that must "
                                                               "stay untouched (default PATH/review.sqlite).")]


def _open(path: Path, store: Path | None) -> tuple[ReviewSource, ReviewStore]:
    source = open_source(path)
    if store is not None and source.kind == "workspace":
        raise ConfigError("--store is for dataset folders: a build workspace keeps its decisions in "
                          f"{source.default_store} (shared with `mtvbench build review`)")
    return source, ReviewStore(store if store is not None else source.default_store)


@review_app.command("serve", help="Serve the review web app (annotator, senior and progress pages).")
def serve_command(path: PathArg,
                  host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback "
                                                         "requires users with tokens (add-user).")] = "127.0.0.1",
                  port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free port).")] = 8765,
                  store: StoreOpt = None,
                  guidelines: Annotated[Path | None, typer.Option(
                      help="A Markdown file that replaces the built-in guidelines beside the decision (its HTML "
                           "is shown as text).")] = None) -> None:
    from mtvbench.review.guidelines import load_guidelines
    from mtvbench.review.server import serve

    text = load_guidelines(guidelines) if guidelines is not None else None
    source, st = _open(path, store)

    def ready(url: str) -> None:
        users = st.users()
        say(f"reviewing {source.kind} {source.root} (decisions in {st.path})")
        if users:
            say(f"serving at {url} — {len(users)} user(s); each signs in with their login link "
                "(`mtvbench review add-user` makes one)")
        else:
            say(f"serving at {url} — open mode: no users, anyone on this machine can act as any annotator")
        say("press Ctrl-C to stop; every decision is saved as it is made")

    serve(source, st, host, port, on_ready=ready, guidelines=text)


@review_app.command("add-user", help="Register an annotator or senior and print their login link (shown once).")
def add_user_command(path: PathArg,
                     name: Annotated[str, typer.Argument(help="The person's name as shown in the app.",
                                                         show_default=False)],
                     role: Annotated[str, typer.Option(help="annotator or senior")] = "annotator",
                     url: Annotated[str, typer.Option(help="Address the annotators open (the server's "
                                                           "--host/--port).")] = "http://127.0.0.1:8765",
                     replace: Annotated[bool, typer.Option(help="Give an existing user a new token (the old "
                                                                "one stops working).")] = False,
                     store: StoreOpt = None) -> None:
    if role not in ROLES:
        raise ConfigError(f"--role must be one of {', '.join(ROLES)}, got {role!r}")
    _, st = _open(path, store)
    token = st.add_user(name, role, replace=replace)
    note("login link", f"for {name} ({role}); give it to them privately, it is not stored and not shown again",
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
    print_tables([TextTable(columns=[Col("name", "id"), Col("role"), Col("since", key="created_at")],
                            rows=[[u.name, u.role, u.created_at] for u in users], title="Review users")],
                 output_format, json_obj=[u.model_dump(mode="json") for u in users])


@review_app.command("export", help="Write the reviewed dataset (released layout, revisions applied) and review.json.")
def export_command(path: PathArg,
                   out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write (new, empty, or an "
                                                                           "earlier review export).")],
                   accepted_only: Annotated[bool, typer.Option(help="Only dialogues accepted in review (default: "
                                                                    "every dialogue not rejected).")] = False,
                   video_mode: Annotated[str, typer.Option(help="link (hard link; a copy across file systems) "
                                                                "or copy")] = "link",
                   store: StoreOpt = None) -> None:
    from mtvbench.review.export import export_review

    mode = checked_video_mode(video_mode)
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
