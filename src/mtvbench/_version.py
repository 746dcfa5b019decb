"""The installed mtvbench's version, :data:`__version__`.

Modules that record or compare the version (run directories, stores, scores, the Ray cluster check)
import it from here, never from the package ``__init__``: an import never points back up to the package.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mtvbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
