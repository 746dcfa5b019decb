"""``mtvbench`` command line: one thin module per command group, one error handler.

- :mod:`mtvbench.cli.common`: consoles, the error handler every group uses, safe printing.
- :mod:`mtvbench.cli.evaluate`: ``validate``, ``run``, ``score``, ``demo``.
- :mod:`mtvbench.cli.analyses`: ``report``, ``compare``, ``agreement``, ``stats``, ``scenes``,
  ``sweep``, ``checklists``.
- :mod:`mtvbench.cli.models`: ``models``.
- :mod:`mtvbench.cli.construct`: ``build ...`` (construction, paper §3.2).
- :mod:`mtvbench.cli.data`: ``download`` (the Hub), ``cache info|clear``, and the dataset argument.
- :mod:`mtvbench.cli.review`: ``review ...`` (the human-verification web app).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mtvbench.cli import analyses, data, evaluate, models, review
from mtvbench.cli.common import new_app, version_callback
from mtvbench.cli.construct import build_app

app = new_app("MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs.")


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                                help="Print the mtvbench version and exit.")] = False) -> None:
    """MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs."""


for _name in ("validate", "run", "score", "demo"):
    app.command(_name)(getattr(evaluate, _name))
for _name in ("report", "compare", "agreement", "stats", "scenes", "sweep", "checklists"):
    app.command(_name)(getattr(analyses, _name))
app.command("models")(models.models_command)
app.add_typer(build_app, name="build", help="Construct a benchmark from raw videos (paper §3.2).")
app.command("download")(data.download)
app.add_typer(data.cache_app, name="cache", help="Look into and clear the frame and scene caches.")
app.add_typer(review.review_app, name="review", help="Human verification in the browser (paper §3.2).")

#: kept for callers of the earlier module layout
parse_options = evaluate.parse_options


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])
