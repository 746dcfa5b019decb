"""The base class of every error meant for the user, and its kinds.

Anything that is the user's input, environment or a remote service's answer (not a bug of
mtvbench) raises a subclass of :class:`MtvbenchError`. The command line has exactly one
handler for it (``mtvbench.cli.common``): the message is printed on one or a few lines,
literally (never parsed as markup), with no traceback, and the process exits with
``exit_code``. Library users catch :class:`MtvbenchError`.

Rules for messages: name the place (file, record, field; URL for a server), quote the
other side's own words, and say what to do when it is not obvious (``hint``).
"""

from __future__ import annotations


class MtvbenchDeprecationWarning(DeprecationWarning):
    """The warning for a spelling kept for one *released* version after a rename (CHANGELOG.md): mtvbench
    warns with this class only, so that its own suite can fail on it (pyproject's ``filterwarnings``) while
    third-party deprecations stay warnings. Nothing warns with it in 0.1.0."""


class MtvbenchError(Exception):
    """A problem the user can act on. ``hint`` is an optional second line."""

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(MtvbenchError, ValueError):
    """A setting (flag, YAML key, option value) is unknown or invalid."""


class InputError(MtvbenchError, ValueError):
    """An input file or record is unusable (wrong type of file, bad JSON, bad record)."""


class MissingExtraError(MtvbenchError, ImportError):
    """An optional dependency is not installed; names the extra that provides it."""

    def __init__(self, feature: str, extra: str, module: str | None = None):
        what = f" ({module} is not installed)" if module else ""
        super().__init__(f"{feature} needs the optional dependencies of mtvbench[{extra}]{what}",
                         hint=f"install them with: pip install 'mtvbench[{extra}]'")
        self.extra = extra


class OutputError(MtvbenchError, OSError):
    """A result could not be written (disk full, permission, not a folder). Nothing half-written stays."""


class RunDirError(MtvbenchError):
    """A run directory that cannot be used as asked (other settings, other data, another format, locked)."""


class BusyError(RunDirError):
    """Another process holds the run directory."""

    exit_code = 4


def require(module: str, extra: str, feature: str):  # noqa: ANN201 - returns the module
    """Import an optional module or raise :class:`MissingExtraError` naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(feature, extra, module.split(".")[0]) from e
