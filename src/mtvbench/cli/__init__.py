"""``mtvbench`` command line: one thin module per command group, one error handler.

- :mod:`mtvbench.cli.common`: the error handler every group uses, the app class, ``--version``.
- :mod:`mtvbench.cli.evaluate`: ``validate``, ``run`` (its flags derived from the run settings,
  :mod:`mtvbench.run.flags`), ``score``, ``demo``.
- :mod:`mtvbench.cli.models`: ``models``.
- :mod:`mtvbench.cli.construct`: ``build ...`` (construction, paper §3.2; one command per
  registered stage).
- :mod:`mtvbench.cli.data`: ``download`` (the Hub), ``cache info|clear``, ``checklists``.
- :mod:`mtvbench.cli.review`: ``review ...`` (the human-verification web app).
- Analyses (``report``, ``compare``, ``agreement``, ``stats``, ``scenes``, ``sweep`` and those of
  other packages) are mounted from :data:`mtvbench.analysis.registry.ANALYSES`.

Printing goes through :mod:`mtvbench.render.console`.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from mtvbench.analysis.registry import ANALYSES
from mtvbench.cli import data, evaluate, models, review
from mtvbench.cli.common import new_app, version_callback
from mtvbench.cli.construct import build_app
from mtvbench.registry import RegistryError

app = new_app("MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs.")


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                                help="Print the mtvbench version and exit.")] = False) -> None:
    """MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs."""


for _name in ("validate", "run", "score", "demo"):
    app.command(_name)(getattr(evaluate, _name))
app.command("models")(models.models_command)
app.add_typer(build_app, name="build", help="Construct a benchmark from raw videos (paper §3.2).")
app.command("download")(data.download)
app.command("checklists")(data.checklists)
app.add_typer(data.cache_app, name="cache", help="Look into and clear the frame and scene caches.")
app.add_typer(review.review_app, name="review", help="Human verification in the browser (paper §3.2).")
#: the names of the commands above: an analysis may not take one
BUILT_IN = frozenset({*(c.name for c in app.registered_commands), *(g.name for g in app.registered_groups)})


def _broken(name: str, error: RegistryError) -> Any:
    def command() -> None:
        raise error

    command.__doc__ = f"(failed to load: {error.message})"
    return command


def mount_analyses(target: typer.Typer) -> None:
    """``mtvbench NAME`` for every analysis in the registry. One that fails to load (a broken
    package) becomes a command that says why, so every other command keeps working; one named
    like a built-in command is not mounted (the built-in stays)."""
    for name in ANALYSES.names():
        if name in BUILT_IN:
            continue
        try:
            command = ANALYSES.get(name)
        except RegistryError as e:
            command = _broken(name, e)
        target.command(name)(command)


mount_analyses(app)


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])
