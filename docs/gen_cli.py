"""The generated parts of the docs site: every command and option of ``mtvbench`` (walked from the typer app
itself, through the root group's own lazy listing and loader), every settings key of ``RunConfig`` and of the
build config (type, default, description), and the keys of ``scores.json``. MkDocs runs it as a hook
(``hooks:`` in mkdocs.yml): a page holding ``<!-- generated: NAME -->`` (``cli``, ``run-settings``,
``build-settings``, ``scores``) gets the text in its place, so the reference cannot drift from the code.
``python docs/gen_cli.py [NAME]`` prints one of them (default: the CLI reference)."""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any


def _cell(text: Any) -> str:
    """Text for one Markdown table cell: one line, pipes and angle brackets escaped."""
    s = " ".join(str(text).split())
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _option_row(param: Any, ctx: Any) -> str:
    """One table row: the option's names with its value's form, and its help with its default, as ``--help``
    shows them (typer's own help record)."""
    record = param.get_help_record(ctx)
    if record is None:  # an argument typer renders elsewhere
        record = (param.human_readable_name, "")
    names, help_text = record
    if getattr(param, "param_type_name", "") == "argument":
        help_text = ("argument; " + help_text) if help_text else "argument"
    return f"| `{_cell(names).replace('&lt;', '<').replace('&gt;', '>')}` | {_cell(help_text)} |"


def _command(path: list[str], command: Any, out: list[str]) -> None:
    from typer._click import Context

    ctx = Context(command, info_name=path[-1])
    level = "#" * min(len(path) + 1, 4)
    out.append(f"{level} `{' '.join(path)}`\n")
    if command.help:
        out.append(_cell(inspect.cleandoc(command.help).split("\f")[0]).replace("\\|", "|") + "\n")
    params = [p for p in command.params if not getattr(p, "hidden", False)]
    if params:
        out.append("| option | description |\n|---|---|")
        out.extend(_option_row(p, ctx) for p in params)
        out.append("")
    if hasattr(command, "list_commands"):  # a group: its commands, through its own listing and loader
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                _command([*path, name], sub, out)


def cli_reference() -> str:
    """Markdown of every command of ``mtvbench``, its arguments and options, from the app itself."""
    import typer

    from mtvbench.cli import app

    root = typer.main.get_command(app)
    out: list[str] = []
    _command(["mtvbench"], root, out)
    return "\n".join(out) + "\n"


_COMMENT = re.compile(r"^\s*#:\s?(.*)$")


def _comments(model: type) -> dict[str, str]:
    """The ``#:`` comment lines above each field of a pydantic model's class body, by field name."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        try:
            lines = inspect.getsource(cls).splitlines()
        except (OSError, TypeError):
            continue
        pending: list[str] = []
        for line in lines:
            m = _COMMENT.match(line)
            if m:
                pending.append(m.group(1))
                continue
            field = re.match(r"^\s{4}(\w+)\s*:", line)
            if field and pending:
                found[field.group(1)] = " ".join(pending)
            pending = []
    return found


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation).replace("typing.", "").replace("pathlib.", "")
    return re.sub(r"<class '([\w.]+)'>", lambda m: m.group(1).rsplit(".", 1)[-1], text)


def settings_table(model: type, prefix: str = "") -> list[str]:
    """One row per settings key of ``model`` (nested settings models as ``section.key``)."""
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    comments = _comments(model)
    rows: list[str] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}" if field.alias and not prefix else f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(settings_table(annotation, f"{key}."))
            continue
        if field.default is not PydanticUndefined:
            default = f"`{_cell(field.default)}`" if field.default is not None else "`null`"
        elif field.default_factory is not None:
            default = f"`{_cell(field.default_factory())}`"
        else:
            default = "required"
        description = field.description or comments.get(name) or ""
        rows.append(f"| `{key}` | `{_cell(_type_name(annotation))}` | {default} | {_cell(description)} |")
    return rows


def run_settings() -> str:
    from mtvbench.config.runconfig import RunConfig

    head = "| key | type | default | description |\n|---|---|---|---|"
    return "\n".join([head, *settings_table(RunConfig)]) + "\n"


def build_settings() -> str:
    from mtvbench.construct.config import build_config_type

    head = "| key | type | default | description |\n|---|---|---|---|"
    return "\n".join([head, *settings_table(build_config_type())]) + "\n"


def scores_keys() -> str:
    """The keys of ``scores.json`` (:class:`mtvbench.scoring.aggregate.Scores`), nested records as ``a.b``."""
    from mtvbench.scoring.aggregate import Scores

    head = "| key | type | default | description |\n|---|---|---|---|"
    return "\n".join([head, *settings_table(Scores)]) + "\n"


GENERATORS = {"cli": cli_reference, "run-settings": run_settings, "build-settings": build_settings,
              "scores": scores_keys}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: each ``<!-- generated: NAME -->`` replaced by its generated text."""
    for name, make in GENERATORS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


if __name__ == "__main__":
    sys.stdout.write(GENERATORS[sys.argv[1] if len(sys.argv) > 1 else "cli"]())
