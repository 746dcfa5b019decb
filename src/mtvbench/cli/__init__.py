"""``mtvbench`` command line: one thin module per command group, one error handler.

- :mod:`mtvbench.cli.common`: the error handler every group uses, the app class, ``--version``.
- :mod:`mtvbench.cli.help`: every command's ``--help``, laid out for the terminal's width.
- :mod:`mtvbench.cli.evaluate`: ``validate``, ``run`` (its flags derived from the run settings,
  :mod:`mtvbench.run.flags`), ``score``, ``demo``.
- :mod:`mtvbench.cli.models`: ``models``.
- :mod:`mtvbench.cli.construct`: ``build ...`` (construction, paper §3.2; one command per
  registered stage).
- :mod:`mtvbench.cli.data`: ``download`` (the Hub), ``cache info|clear``, ``checklists``.
- :mod:`mtvbench.cli.review`: ``review ...`` (the human-verification web app).
- Analyses (``report``, ``compare``, ``agreement``, ``stats``, ``scenes``, ``sweep``, ``estimate`` and
  those of other packages) are mounted from :data:`mtvbench.analysis.registry.ANALYSES`.

A command's module is imported when the command is run or its own help is asked for, not before:
``mtvbench --version`` imports no command module (nor pydantic, rich, yaml, numpy, av or httpx),
and ``mtvbench --help`` lists the commands by :data:`SUMMARIES`, importing none of them.

Printing goes through :mod:`mtvbench.render.console`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer

from mtvbench.cli.common import MtvbenchGroup, version_callback

#: the built-in commands: name -> the command function, or the typer app of a command group, as
#: ``"module:attr"`` (imported when the command is used)
COMMANDS: dict[str, str] = {
    "validate": "mtvbench.cli.evaluate:validate",
    "run": "mtvbench.cli.evaluate:run",
    "score": "mtvbench.cli.evaluate:score",
    "demo": "mtvbench.cli.evaluate:demo",
    "models": "mtvbench.cli.models:models_command",
    "download": "mtvbench.cli.data:download",
    "checklists": "mtvbench.cli.data:checklists",
    "build": "mtvbench.cli.construct:build_app",
    "cache": "mtvbench.cli.data:cache_app",
    "review": "mtvbench.cli.review:review_app",
}
#: a command group's help in ``mtvbench --help`` and its own (the group's app has a longer one)
GROUP_HELP = {
    "build": "Construct a benchmark from raw videos (paper §3.2).",
    "cache": "Look into and clear the frame and scene caches.",
    "review": "Human verification in the browser (paper §3.2).",
}
#: the line of each built-in command and analysis in ``mtvbench --help``: the first paragraph of its help
#: (``tests/cli/test_help.py`` checks that they agree), so that listing the commands imports none of them
SUMMARIES: dict[str, str] = {
    "validate": "Check a dataset in the released layout; list every problem at once.",
    "run": "Evaluate a model on a dataset; rerun the same command to resume.",
    "score": "Recompute scores from what is stored (no API calls). Exit 3 when they are INCOMPLETE.",
    "demo": "Offline demo on the bundled sample: oracle and refuse baselines, judged by --judge offline.",
    "models": "List the model presets: `--model <preset>` runs that row of Table 2 with the paper's settings.",
    "download": "Download MT-Video-Bench from the Hugging Face Hub (gated: accept its terms first), lay it out "
                "as mtqa/ checklist/ videos/ (unpacking video archives) and validate it. Rerun to resume.",
    "checklists": "Write missing checklists (paper Figure 16) in the released layout; resumable.",
    **GROUP_HELP,
    "report": "Leaderboard (MD/CSV/LaTeX), breakdowns and report.html (its explorer's files in explorer/) from stored "
              "runs.",
    "compare": "B - A per task and Overall, paired bootstrap over dialogues (95% CI, p-value, n per row).",
    "agreement": "Judge-human agreement (Table 3: Spearman, Kendall-tau, Pearson with bootstrap CIs; one row per "
                 "judge), Cohen's and Fleiss' kappa, and the agreement among the human raters (Krippendorff's "
                 "alpha).",
    "stats": "Benchmark statistics in the layout of the paper's Table 1.",
    "scenes": "Estimate scene counts per dialogue (PySceneDetect) and cache them for `report`.",
    "sweep": "One run per setting (resumable, sharing the frame cache), then Figure 5b/5c/4c tables and plots.",
    "estimate": "Requests, prompt and cached tokens, cost and time of a run, before it runs: nothing is called.",
}
#: the names of the commands above: an analysis may not take one
BUILT_IN = frozenset(COMMANDS)


def _analyses() -> Any:
    from mtvbench.analysis.registry import ANALYSES

    return ANALYSES


def _broken(error: Any) -> Any:
    def command() -> None:
        raise error

    command.__doc__ = f"(failed to load: {error.message})"
    return command


def load_command(name: str) -> Any:
    """The click command ``mtvbench NAME``: a built-in one, else the analysis of that name (one that
    fails to load, e.g. of a broken package, becomes a command that says why, so every other command
    keeps working); None for an unknown name."""
    from mtvbench.registry import RegistryError

    holder = typer.Typer(cls=MtvbenchGroup, add_completion=False, pretty_exceptions_enable=False)
    holder.callback()(lambda: None)
    if name in COMMANDS:
        module, _, attr = COMMANDS[name].partition(":")
        target = getattr(importlib.import_module(module), attr)
    elif name in _analyses().names():
        try:
            target = _analyses().get(name)
        except RegistryError as e:
            target = _broken(e)
    else:
        return None
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name, help=GROUP_HELP.get(name))
    else:
        holder.command(name)(target)
    return typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]


def command_names() -> list[str]:
    """Every command of ``mtvbench``: the built-in ones, then the analyses."""
    return [*COMMANDS, *(n for n in _analyses().names() if n not in BUILT_IN)]


class LazyCommands(MutableMapping[str, Any]):
    """The commands of ``mtvbench`` by name, each loaded the first time it is looked up (:func:`load_command`)."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            command = load_command(name) if name in command_names() else None
            if command is None:
                raise KeyError(name)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*command_names(), *self._loaded]))

    def __len__(self) -> int:
        return len(list(iter(self)))


class RootGroup(MtvbenchGroup):
    """``mtvbench``: its commands are loaded when used (:class:`LazyCommands`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = LazyCommands()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from mtvbench.cli.help import render, summary

        rows = []
        for name in self.list_commands(ctx):
            text = SUMMARIES.get(name)
            if text is None:  # an analysis of another package: its own help says it
                command = self.get_command(ctx, name)
                text = summary(command.short_help or command.help) if command is not None else ""
            rows.append((name, text))
        formatter.write(render(self, ctx, commands=rows))


app = typer.Typer(cls=RootGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs.")


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                                help="Print the mtvbench version and exit.")] = False) -> None:
    """MT-Video-Bench: multi-turn, video-grounded dialogue evaluation of multimodal LLMs."""


def main() -> None:  # pragma: no cover
    app(sys.argv[1:])
