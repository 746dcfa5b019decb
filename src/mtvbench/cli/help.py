"""``--help`` of every mtvbench command, laid out for the terminal's width (80 columns included).

One renderer for every command and group (:class:`~mtvbench.cli.common.MtvbenchGroup` gives it to
each): the usage line, the help text with its paragraphs re-wrapped (a line break inside a paragraph
is a space; a paragraph whose lines are indented, or that starts with ``\\b``, is kept as written),
then the options in panels by topic (an option's ``rich_help_panel``; the ``run`` settings' panels
come from the settings fields, :mod:`mtvbench.run.flags`), each option as ``--NAME METAVAR`` (a
yes/no switch as ``--[no-]NAME``, no metavar) with its help and its default. Option names are
never cut: a name too long for its column gets a row of its own above its help. Every text is
printed literally (no rich markup: ``mtvbench[ray]`` stays as written).
"""

from __future__ import annotations

import enum
import inspect
import re
import typing
from pathlib import Path
from typing import Any

#: the panel of options that name no topic (``--help``, a command's own options)
OTHER_PANEL = "Options"
ARGUMENTS_PANEL = "Arguments"
#: the metavar of an option's type (any other type: TEXT)
_TYPE_METAVAR: dict[Any, str] = {int: "INTEGER", float: "NUMBER", Path: "PATH", bool: "BOOLEAN"}


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of a help text, each re-flowed to one line unless it is laid out on purpose
    (indented lines, a list, or click's ``\\b`` marker)."""
    out = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text or "").partition("\f")[0]):
        if not block.strip():
            continue
        lines = block.splitlines()
        if block.startswith("\b"):
            out.append("\n".join(lines[1:]))
        elif any(line.startswith((" ", "\t", "- ", "* ", "$ ")) for line in lines):
            out.append(block)
        else:
            out.append(" ".join(line.strip() for line in lines))
    return out


def summary(text: str | None) -> str:
    """The first paragraph of a command's help: its line in the commands panel."""
    first = paragraphs(text)
    return first[0] if first else ""


def metavar(param: Any, ctx: Any) -> str:
    """What an option takes, in capitals (``INTEGER``, ``PATH``, ``on|off``, ``KEY=VALUE...``); an
    argument's name (``RUN_DIRS...``); empty for a switch."""
    many = "..." if param.nargs == -1 or getattr(param, "multiple", False) else ""
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.metavar or (param.name or "").upper()) + many
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    if param.metavar:
        return str(param.metavar)
    desc = getattr(param, "type_descriptor", None)
    if desc is not None and desc.is_choice:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
    annotation = getattr(desc, "annotation", str)
    if typing.get_origin(annotation) in (list, tuple) and typing.get_args(annotation):
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "|".join(str(m.value) for m in annotation)
    return _TYPE_METAVAR.get(annotation, "TEXT") + many


def names(param: Any, ctx: Any) -> str:
    """``--frames INTEGER``, ``-m, --model TEXT``, ``--[no-]wait``, ``RUN_DIRS...``."""
    if getattr(param, "param_type_name", "") == "argument":
        return metavar(param, ctx)
    opts = sorted(param.opts, key=lambda o: o.startswith("--"))
    secondary = list(param.secondary_opts)
    if len(opts) == 1 and secondary == [f"--no-{opts[0][2:]}"]:
        spelled = f"--[no-]{opts[0][2:]}"
    else:
        spelled = ", ".join(opts + secondary)
    kind = metavar(param, ctx)
    return f"{spelled} {kind}" if kind else spelled


def default_text(param: Any) -> str | None:
    """The default to show: a settings flag's ``show_default`` text (its field's default), else the
    option's own default; none for a switch that is off, an empty list or no default."""
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        return shown or None
    value = param.default
    if callable(value) or value is None or value is False or value in ((), []):
        return None
    if getattr(param, "is_flag", False) and value is True:
        return param.opts[0]
    value = getattr(value, "value", value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def param_help(param: Any) -> str:
    text = " ".join(paragraphs(getattr(param, "help", None) or ""))
    default = default_text(param) if not getattr(param, "hide_default", False) else None
    if default is not None:
        text += f" [default: {default}]"
    if param.required:
        text += " [required]"
    return text.strip()


def panels(command: Any, ctx: Any) -> list[tuple[str, list[Any]]]:
    """The visible parameters (``--help`` included) by panel: arguments first, then the topics in the
    order of their first option, then :data:`OTHER_PANEL`."""
    by_panel: dict[str, list[Any]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        is_argument = getattr(param, "param_type_name", "") == "argument"
        panel = getattr(param, "rich_help_panel", None) or (ARGUMENTS_PANEL if is_argument else OTHER_PANEL)
        by_panel.setdefault(panel, []).append(param)
    order = sorted(by_panel, key=lambda p: (p != ARGUMENTS_PANEL, p == OTHER_PANEL))
    return [(p, by_panel[p]) for p in order]


def _table(rows: list[tuple[str, str]], width: int) -> Any:
    """Names on the left, help on the right; a name longer than the left column (at most 2/5 of the
    width) is a line of its own with its help below, so that no name is cut."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    limit = max(12, min(36, width * 2 // 5))
    left = max((len(n) for n, _ in rows if len(n) <= limit), default=limit)
    parts: list[Any] = []
    table = None
    for name, text in rows:
        if len(name) > left:
            parts.append(Text(name, style="bold cyan", no_wrap=True, overflow="ignore"))
            table = None
        if table is None:
            table = Table(show_header=False, box=None, padding=(0, 1), expand=True, pad_edge=False)
            table.add_column(no_wrap=True, width=left, style="bold cyan")
            table.add_column(ratio=1, overflow="fold")
            parts.append(table)
        table.add_row(Text("" if len(name) > left else name), Text(text))
        if len(name) > left:
            table = None
    return Group(*parts)


def usage_pieces(command: Any, ctx: Any) -> list[str]:
    """``[OPTIONS]``, each argument by its metavar (in brackets when optional), ``COMMAND [ARGS]...`` for a group."""
    out = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if getattr(param, "param_type_name", "") == "argument":
            name = metavar(param, ctx)
            out.append(name if param.required else f"[{name}]")
    if hasattr(command, "list_commands"):
        out.append("COMMAND [ARGS]...")
    return out


def render(command: Any, ctx: Any, commands: list[tuple[str, str]] | None = None) -> str:
    """``command``'s help for the terminal (styled when stdout is one, at its width); ``commands``
    (name, summary) for a group (its subcommands by default)."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    console = Console(highlight=False, emoji=False, markup=False)
    inner = console.width - 4
    usage = " ".join([ctx.command_path, *usage_pieces(command, ctx)])
    pieces: list[Any] = [Text(f"Usage: {usage}", style="bold"), Text("")]
    texts = paragraphs(command.help)
    for i, text in enumerate(texts):
        pieces.append(Text(text, style="" if i else "bold"))
        pieces.append(Text(""))
    for title, params in panels(command, ctx):
        rows = [(names(p, ctx), param_help(p)) for p in params]
        pieces.append(Panel(_table(rows, inner), title=title, title_align="left", border_style="dim"))
    if commands is None and hasattr(command, "list_commands"):
        commands = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                commands.append((name, summary(sub.short_help or sub.help)))
    if commands:
        pieces.append(Panel(_table(commands, inner), title="Commands", title_align="left", border_style="dim"))
    if command.epilog:
        pieces += [Text(text) for text in paragraphs(command.epilog)]
    with console.capture() as captured:
        for piece in pieces:
            console.print(piece, soft_wrap=False)
    return captured.get()


__all__ = ["OTHER_PANEL", "metavar", "names", "panels", "paragraphs", "render", "summary"]
