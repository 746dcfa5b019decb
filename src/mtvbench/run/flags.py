"""Command-line flags derived from a settings model: those of ``mtvbench run`` and ``mtvbench sweep``
(from the run settings, :class:`~mtvbench.config.RunConfig`), and the machinery ``mtvbench build``'s
flags are made with (from the build settings, :func:`mtvbench.cli.construct.build_flags`).

Every field of the settings with a ``description`` is a flag named after it (``videos_in_flight``
-> ``--videos-in-flight``), its description the help, its type the flag's (a type the command
line cannot spell, such as a task list or a ``WxH`` size, is read as text and parsed by the
settings' own validators); a described field of a nested section is ``--SECTION-FIELD``
(:func:`settings_flags`: ``split.detector`` -> ``--split-detector``). The settings of the two roles add the flags that
:func:`~mtvbench.models.settings.setting_flag` names: ``--model-base-url`` / ``--judge-base-url``,
``--model-api-key-env`` / ``--judge-api-key-env``, and one flag per generation setting of the model
(``--max-tokens``, ``--temperature``, ``--top-p``, ``--top-k``, ``--do-sample``,
``--repetition-penalty``, ``--presence-penalty``, ``--min-p``, ``--model-seed``, ``--system``), spelled
like its YAML key; a generation flag takes ``none`` to drop a preset's value (``--top-k none`` is
``model_settings: {top_k: null}``). ``--model-option`` / ``--judge-option`` ``KEY=VALUE`` set backend
options (values read as YAML). A new setting is therefore one field with a description; nothing
here changes. ``sweep`` takes the same flags except the ones it sweeps (:func:`sweep_flags`).

:func:`settings_from_flags` puts the given flags over the ``--config`` values and records which
flag gave each setting, so that a bad value is named by its flag (``--temperature: must be a
number >= 0``).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from mtvbench.config import RoleSettings, RunConfig, loads_yaml_strict
from mtvbench.config.runconfig import RUN_PANELS
from mtvbench.errors import ConfigError
from mtvbench.models.settings import GENERATION_SETTINGS, OPTIONS_KEY, setting_flag

_SIMPLE = (bool, int, float, str, Path)
#: what a generation flag takes to drop a value (a preset's): ``--top-k none``
NONE_WORDS = ("none", "null")
#: the settings ``sweep`` takes as lists of its own (``--frames 16,32``) and its sweep folder
SWEPT = ("frames", "max_side", "context", "sampling", "frame_timestamps", "out")
_METAVAR = {int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}
JUDGE_REQUIRED = ("--judge names the judge: e.g. openai:gemini-2.5-flash (the paper's), or `offline` for the "
                  "lexical matcher (checks the pipeline; its scores are not comparable to the paper's)")


@dataclass(frozen=True)
class Flag:
    """One command-line flag that sets one setting."""

    #: where the value goes in the settings (``frames``, ``model_settings.temperature``)
    key: str
    #: the flag (``--frames``)
    name: str
    #: the Python parameter of the command function
    param: str
    type: Any
    help: str
    #: ``KEY=VALUE`` items merged into the backend options of a role (``--model-option``)
    options: bool = False
    #: read as text: ``none`` sets the setting to null (drops a preset's value), anything else is
    #: converted to ``value_type``
    nullable: bool = False
    value_type: Any = str
    metavar: str | None = None
    #: a short spelling (``-m``)
    short: str | None = None
    #: the help panel (topic) the flag is listed under: the ``panel`` of its field's metadata
    panel: str | None = None
    #: the default shown in the help (the field's default; the flag itself defaults to "not given")
    default: str | None = None


def _cli_type(annotation: Any) -> Any:
    """The type the command line reads for a field: its own when simple, else text."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    return annotation if annotation in _SIMPLE else str


def _metavar(annotation: Any) -> str | None:
    """The metavar of a field whose values are listed (``Literal["golden", "self", "none"]`` ->
    ``golden|self|none``); None for any other field."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Literal:
        return "|".join(str(v) for v in typing.get_args(annotation))
    return None


def _field_flag(key: str, name: str, param: str, field: FieldInfo) -> Flag:
    """The flag of one described field: its help, type, metavar, panel and shown default from the field."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    default = field.default
    shown = None if default is PydanticUndefined or default is None or default is False else default
    panel = extra.get("panel")
    return Flag(key=key, name=name, param=param, type=_cli_type(field.annotation), help=field.description or "",
                metavar=_metavar(field.annotation), panel=panel if isinstance(panel, str) else None,
                default=None if shown is None else str(shown))


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def _param(name: str) -> str:
    """The Python parameter of a flag (``--model-base-url`` -> ``model_base_url``)."""
    return name.lstrip("-").replace("-", "_")


def settings_flags(model: type[BaseModel], sections: Mapping[str, type[BaseModel]] | None = None) -> list[Flag]:
    """A flag for every field of ``model`` with a description, in the order of the fields, then one for every
    described field of each section (settings key -> its model): ``--SECTION-FIELD``."""
    flags = [_field_flag(name, _dashed(name), name, f) for name, f in model.model_fields.items() if f.description]
    for key, section in (sections or {}).items():
        flags += [_field_flag(f"{key}.{name}", _dashed(f"{key}-{name}"), _param(f"{key}-{name}"), f)
                  for name, f in section.model_fields.items() if f.description]
    return flags


def role_flags(keys: Mapping[str, str]) -> list[Flag]:
    """The flags of the roles' settings (role -> its settings key, e.g. ``model`` -> ``model_settings``),
    named by :func:`~mtvbench.models.settings.setting_flag`."""
    flags = []
    for field, info in RoleSettings.model_fields.items():
        for role, key in keys.items():
            name = setting_flag(field, role)
            if name is None:
                continue
            kind = _cli_type(info.annotation)
            nullable = field in GENERATION_SETTINGS
            metavar = f"{_METAVAR.get(kind, 'TEXT')}|none" if nullable else None
            drop = "; none drops the preset's value" if nullable else ""
            flags.append(Flag(key=f"{key}.{field}", name=name, param=_param(name),
                              type=str if nullable else kind, help=f"{info.description} of the {role}{drop}",
                              nullable=nullable, value_type=kind, metavar=metavar, panel=role.capitalize()))
    return flags


#: the examples of ``--ROLE-option``, each role its own (what is typically set for it)
OPTION_EXAMPLES = {
    "model": "served_name=NAME (the name a server you started serves), input=upload, batch_size=8, "
             "video_part=false",
    "judge": "max_response_bytes=N, served_name=NAME",
}


def option_flag(role: str, key: str) -> Flag:
    """``--ROLE-option KEY=VALUE``: backend options of a role (settings key ``key``), merged into its options
    (stored under ``extra``)."""
    examples = OPTION_EXAMPLES.get(role, "KEY=VALUE")
    return Flag(key=f"{key}.{OPTIONS_KEY}", name=f"--{role}-option", param=f"{role}_option", type=list[str],
                options=True, metavar="KEY=VALUE", panel=role.capitalize(),
                help=f"{role} backend setting KEY=VALUE (YAML value), repeatable, e.g. {examples}")


def run_flags() -> list[Flag]:
    """The settings flags of ``mtvbench run``, by help panel (:data:`RUN_PANELS`), in the order of the settings
    within one."""
    flags = settings_flags(RunConfig)
    flags += role_flags({"model": "model_settings", "judge": "judge_settings"})
    flags.append(Flag(key="ray.num_gpus", name="--ray-gpus", param="ray_gpus", type=float,
                      help="with --executor ray: GPUs per model replica (the other Ray resources: `ray:` in "
                           "the config)", panel="Concurrency"))
    flags += [option_flag(role, f"{role}_settings") for role in ("model", "judge")]
    return sorted(flags, key=lambda f: RUN_PANELS.index(f.panel) if f.panel in RUN_PANELS else len(RUN_PANELS))


def sweep_flags() -> list[Flag]:
    """``run``'s flags without the settings ``sweep`` takes as lists of its own (:data:`SWEPT`)."""
    return [f for f in run_flags() if f.key not in SWEPT]


def parse_options(items: list[str], flag: str = "--model-option") -> dict[str, Any]:
    """``KEY=VALUE`` items (the value read as YAML) -> a dict; anything else is one :class:`ConfigError`."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag} {item!r}: must look like KEY=VALUE, e.g. {flag} batch_size=8")
        if key in out:
            raise ConfigError(f"{flag}: {key!r} given twice")
        out[key] = loads_yaml_strict(value, f"{flag} {item!r}")
    return out


def settings_from_flags(values: Mapping[str, Any], given: Mapping[str, Any], flags: list[Flag]
                        ) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``--config`` ``values`` with every given flag on top, and which flag set each dotted key.

    A nested setting given in the file as something other than a mapping is left as it is (the
    settings' validation names it)."""
    out: dict[str, Any] = dict(values)
    origins: dict[str, str] = {}
    for flag in flags:
        name, value = flag.name, given.get(flag.param)
        if value is None or (flag.options and not value):
            continue
        *parents, leaf = flag.key.split(".")
        target = _nested(out, parents)
        if target is None:
            continue
        if flag.nullable:
            target[leaf] = _flag_value(value, flag.value_type)
            origins[flag.key] = name
        elif flag.options:
            options = parse_options(value, name)
            before = target.get(leaf) or {}
            target[leaf] = {**before, **options} if isinstance(before, dict) else before
            origins.update({f"{flag.key}.{k}": name for k in options})
            # a setting of its own given as an option (`--model-option timeout_s=60`) is moved
            # to its field: a bad value there is still named by the flag
            origins.update({f"{flag.key.rpartition('.')[0]}.{k}": name for k in options
                            if k in RoleSettings.model_fields})
        else:
            target[leaf] = value
            origins[flag.key] = name
    return out, origins


def require_settings(values: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    """One :class:`ConfigError` naming the flags of the ``keys`` that neither a flag nor ``--config`` gave."""
    missing = [k for k in keys if k not in values]
    if missing:
        raise ConfigError(f"missing setting(s): {', '.join(_dashed(m) for m in missing)} (flag or --config)"
                          + (f"; {JUDGE_REQUIRED}" if "judge" in missing else ""))


def _flag_value(text: Any, kind: Any) -> Any:
    """The value of a nullable flag: None for ``none``/``null``, else ``text`` as ``kind`` (a number
    that is not one is passed on as text, for the settings' validation to name with its flag)."""
    if not isinstance(text, str):  # given by a caller, not typed on a command line
        return text
    if text.strip().lower() in NONE_WORDS:
        return None
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            return text
    return text


def _nested(values: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    """The mapping at ``path`` in ``values`` (copied in, so the caller's mappings are not changed),
    or None when a step is not a mapping."""
    target = values
    for part in path:
        inner = target.get(part) or {}
        if not isinstance(inner, dict):
            return None
        target[part] = inner = dict(inner)
        target = inner
    return target


def with_flags(flags: list[Flag]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command function the settings ``flags`` as options before its own parameters.

    The decorated function is called with ``given`` (flag parameter -> value, None when not given)
    and its own keyword arguments."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
        params = [_option(f.param, f.type, _spelled(f), *([f.short] if f.short else []), help=f.help,
                          metavar=f.metavar, rich_help_panel=f.panel, show_default=f.default or False)
                  for f in flags]
        params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        names = {f.param for f in flags}

        def command(**kwargs: Any) -> Any:
            given = {k: v for k, v in kwargs.items() if k in names}
            return fn(given, **{k: v for k, v in kwargs.items() if k not in names})

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__doc__, command.__module__ = fn.__name__, fn.__doc__, fn.__module__
        return command

    return deco


def _spelled(flag: Flag) -> str:
    """The typer declaration of a flag: a yes/no setting is ``--X/--no-X``."""
    return f"{flag.name}/--no-{flag.name[2:]}" if flag.type is bool else flag.name


def _option(param: str, kind: Any, *names: str, **option: Any) -> inspect.Parameter:
    """A keyword-only command parameter for the typer option ``names`` (None when not given)."""
    return inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[kind | None, typer.Option(*names, **option)])


__all__ = ["Flag", "option_flag", "parse_options", "require_settings", "role_flags", "run_flags", "settings_flags",
           "settings_from_flags", "sweep_flags", "with_flags"]
