"""Settings are strict: one pydantic model per kind of settings, checked with every problem listed at once.

:func:`validate_settings` (used for ``run``/``sweep`` settings and for ``mtvbench build --config``
files) walks the data along the model first, so that

- an unknown key is an error with a suggestion (``unknown setting 'frame' in run.yaml (did
  you mean 'frames'?)``); the only free-form place is ``model_settings.extra`` /
  ``judge_settings.extra`` (backend options, ``--model-option KEY=VALUE``);
- a number must be a finite number of the right kind (``NaN``, ``.inf`` and ``true`` are not
  numbers; ``2.5`` is not an integer); the ranges are the models' own (:mod:`.roles`);
- a value that came from the command line is named by its flag (``--temperature``), any other by
  the source and key.

Models validated here with :data:`CHECK_ENVIRONMENT` in their context check what they name in the
environment (a key variable must be set); read back from a run directory, they do not.
"""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from mtvbench.errors import ConfigError, MtvbenchError

M = TypeVar("M", bound=BaseModel)
#: validation context of settings for a new run or build: the environment they name is checked
CHECK_ENVIRONMENT = "check_environment"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation admits (``RoleSettings``, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _models_in(a)]
    return []


def _admits(annotation: Any, kinds: tuple[type, ...]) -> bool:
    if annotation in kinds:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_admits(a, kinds) for a in typing.get_args(annotation))
    return False


def _field_names(model: type[BaseModel]) -> dict[str, str]:
    """Accepted key -> field name (aliases included)."""
    out = {name: name for name in model.model_fields}
    out.update({f.alias: name for name, f in model.model_fields.items() if f.alias})
    return out


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


class _Problem(NamedTuple):
    loc: tuple[Any, ...]
    kind: Literal["unknown", "structure", "value"]
    message: str
    value: Any


def _structure_problems(model: type[BaseModel], data: Mapping[Any, Any], loc: tuple[Any, ...] = ()
                        ) -> list[_Problem]:
    """Unknown keys, nested settings that are not mappings, booleans given for numbers and
    non-finite numbers, found by walking ``data`` along ``model``'s fields (pydantic's lax
    mode would read ``frames: yes`` as 1, and a model without ``extra="forbid"`` drops typos)."""
    names = _field_names(model)
    out: list[_Problem] = []
    for key, value in data.items():
        here = (*loc, key)
        if not isinstance(key, str) or key not in names:
            close = difflib.get_close_matches(str(key), list(names), n=1, cutoff=0.6)
            hint = f"did you mean '{_dotted((*loc, close[0]))}'?" if close else (
                "known: " + ", ".join(sorted(names)) if len(names) <= 20 else "see --help for the settings")
            out.append(_Problem(here, "unknown", hint, value))
            continue
        annotation = model.model_fields[names[key]].annotation
        subs = _models_in(annotation)
        if subs and value is not None and not isinstance(value, BaseModel):
            if isinstance(value, Mapping):
                out += _structure_problems(subs[0], value, here)
            else:
                out.append(_Problem(here, "structure", f"must be a mapping of settings, got {type(value).__name__}",
                                    value))
        elif isinstance(value, bool) and _admits(annotation, (int, float)) and not _admits(annotation, (bool,)):
            out.append(_Problem(here, "value", "must be a number, not a yes/no value", value))
        elif isinstance(value, float) and not math.isfinite(value) and _admits(annotation, (int, float)):
            out.append(_Problem(here, "value", "must be a finite number", value))
    return out


def _origin(loc: tuple[Any, ...], flags: Mapping[str, str]) -> str | None:
    """The flag that gave the value at ``loc`` (the longest matching prefix), if any."""
    for n in range(len(loc), 0, -1):
        flag = flags.get(_dotted(loc[:n]))
        if flag is not None:
            return flag
    inside = sorted(f for key, f in flags.items() if key.startswith(_dotted(loc) + "."))
    return inside[0] if len(set(inside)) == 1 else None  # e.g. --model-option set a key of 'extra'


def _render(p: _Problem, source: str, flags: Mapping[str, str]) -> str:
    if p.kind == "unknown":
        return f"unknown setting '{_dotted(p.loc)}' in {source} ({p.message})"
    shown = repr(p.value)
    secret = "credential" in p.message or "password" in p.message  # never echo a value that holds one
    got = ("" if secret or p.value is None or isinstance(p.value, (dict, BaseModel)) or len(shown) > 80
           else f" (got {shown})")
    flag = _origin(p.loc, flags)
    if flag is not None:
        return f"{flag}: {p.message}{got}"
    if not p.loc:  # a rule over several settings (a model validator) names them itself
        return f"{source}: {p.message}"
    return f"{source}: field '{_dotted(p.loc)}': {p.message}{got}"


def validate_settings(model: type[M], data: Mapping[str, Any], source: str, *,
                      flags: Mapping[str, str] | None = None,
                      prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> M:
    """``model`` from ``data`` with every problem in one :class:`ConfigError` (one line each).

    ``flags`` maps a dotted key (``model_settings.temperature``) to the command-line flag that
    set it, so that the message names ``--temperature`` instead of the file; ``prepare``
    transforms ``data`` before pydantic sees it (the preset resolution)."""
    flags = flags or {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: settings must be a mapping (key: value), got {type(data).__name__}")
    problems = _structure_problems(model, data)
    if not any(p.kind == "structure" for p in problems):
        named = [p.loc for p in problems]
        try:
            result = model.model_validate(prepare(dict(data)) if prepare else data,
                                          context={CHECK_ENVIRONMENT: True})
        except ValidationError as e:
            for err in e.errors(include_url=False):
                loc = tuple(err["loc"])
                if err["type"] != "extra_forbidden" and not any(loc[:len(n)] == n for n in named):
                    problems.append(_Problem(loc, "value", err["msg"].removeprefix("Value error, "),
                                             err.get("input")))
        except MtvbenchError as e:  # the preset resolution: an unknown model
            problems.append(_Problem(("model",), "value", e.message, None))
        else:
            if not problems:
                return result
    raise ConfigError("\n".join(_render(p, source, flags) for p in problems))

