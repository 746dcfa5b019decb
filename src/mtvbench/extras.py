"""Which optional dependencies (pip extras) each optional feature needs, checked up front.

The core install (``pip install mtvbench``) runs every evaluation, report and analysis
command. What needs a heavy or platform-specific package lives in an extra; a command that
needs one checks for it *before* it writes anything (run directory, workspace, output
folder), so a missing extra is one line naming the extra and leaves nothing behind.

The check looks the modules up with :func:`importlib.util.find_spec` (nothing is imported,
so checking for torch costs nothing). Each entry maps a feature to ``(extra, modules)``,
where a module is ``(import name, distribution name)``. Model backends name their extra in their
registry entry (:data:`mtvbench.models.registry.BACKENDS`), construction stages in theirs
(:data:`mtvbench.construct.stages.STAGES`, checked by :func:`mtvbench.construct.stages.require_build`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from mtvbench.errors import MissingExtraError

Module = tuple[str, str]  # (import name, the distribution pip installs)

#: scene-count estimation (``mtvbench scenes``, ``report --estimate-scenes``)
SCENES: tuple[str, tuple[Module, ...]] = ("build", (("scenedetect", "scenedetect"), ("cv2", "opencv-python-headless")))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken one
        return False


def require_modules(feature: str, extra: str, modules: Iterable[Module]) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` when one of ``modules`` is not installed."""
    for module, dist in modules:
        if not _installed(module):
            raise MissingExtraError(feature, extra, dist if dist == module else f"{dist}, imported as {module}")


def require_backend(spec: str, role: str = "model") -> None:
    """The extra of a backend spec (``hf:...``, ``gemini:...``), checked without importing the backend:
    each entry of :data:`mtvbench.models.registry.BACKENDS` names its extra and modules."""
    from mtvbench.models.registry import BACKENDS, parse_spec

    prefix, _ = parse_spec(spec)
    backend = BACKENDS.get(prefix) if prefix in BACKENDS else None
    if backend is not None and backend.extra and backend.modules:
        require_modules(f"the {prefix}: backend ({role} {spec})", backend.extra, backend.modules)


def require_scene_detection() -> None:
    extra, modules = SCENES
    require_modules("scene estimation (PySceneDetect)", extra, modules)


__all__ = ["SCENES", "require_backend", "require_modules", "require_scene_detection"]
