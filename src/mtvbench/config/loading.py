"""Settings files, read strictly: a regular UTF-8 file of YAML (or JSON for ``.json``), at most
:data:`MAX_CONFIG_BYTES`, whose keys appear once in each mapping (PyYAML would keep the last of a key
given twice). Every problem is one :class:`~mtvbench.errors.ConfigError` naming the file (and the line).
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import yaml

from mtvbench.errors import ConfigError
from mtvbench.util.jsonio import loads_strict, read_text_file

#: the largest settings file we read
MAX_CONFIG_BYTES = 16 << 20


class _StrictYAMLLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""


class _DuplicateYAMLKey(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first: int):
        super().__init__(f"line {line}: duplicate key {key!r} (first at line {first}); "
                         "YAML readers silently keep only the last one")


def _strict_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # '<<: *defaults' then overriding a key is what merge keys are for
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, typing.Hashable):
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateYAMLKey(key, line, seen[key])
            seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictYAMLLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def loads_yaml_strict(text: str, source: str) -> Any:
    """YAML (safe subset) with keys given once; every problem is one :class:`ConfigError` naming ``source``."""
    try:
        return yaml.load(text, Loader=_StrictYAMLLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateYAMLKey as e:
        raise ConfigError(f"{source}: {e}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise ConfigError(f"{source}: {where}not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: not valid YAML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply") from None


def load_settings_file(path: Path, what: str = "config file") -> dict[str, Any]:
    """A mapping of settings from a regular UTF-8 file: JSON for ``.json``, YAML otherwise."""
    path = Path(path)
    text = read_text_file(path, what, MAX_CONFIG_BYTES)
    data = loads_strict(text, str(path)) if path.suffix.lower() == ".json" else loads_yaml_strict(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {what} must be a mapping of settings (key: value), "
                          f"got {type(data).__name__}")
    return data


def load_yaml(path: Path) -> dict[str, Any]:
    return load_settings_file(path)
