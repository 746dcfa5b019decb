"""mtvbench: MT-Video-Bench evaluation and construction toolkit.

The stable entry points (everything in ``__all__``) are importable from here; they load on first
use, so ``import mtvbench`` stays cheap::

    import mtvbench

    cfg = mtvbench.build_config({"data": "/data/MT-Video-Bench", "model": "openai:gpt-4o",
                                 "judge": "openai:gemini-2.5-flash", "out": "runs/gpt-4o"})
    scores, summary = mtvbench.evaluate(cfg)
    # inside a running event loop (a notebook, a service): scores, summary = await mtvbench.evaluate_async(cfg)

Extending (a backend, a judge, an analysis, a construction stage): ``docs/extending.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module that defines it
_EXPORTS = {
    "__version__": "mtvbench._version",
    # evaluating
    "evaluate": "mtvbench.run.evaluate",
    "evaluate_async": "mtvbench.run.evaluate",
    "RunConfig": "mtvbench.config",
    "build_config": "mtvbench.run.settings",
    "load_benchmark": "mtvbench.data.official",
    "Benchmark": "mtvbench.data.schema",
    "Dialogue": "mtvbench.data.schema",
    "Task": "mtvbench.data.schema",
    "Scores": "mtvbench.scoring.aggregate",
    "RunDirectory": "mtvbench.run.rundir",
    "RunData": "mtvbench.run.rundir",
    # the records every backend and judge exchange
    "GenerationConfig": "mtvbench.records",
    "GenerationRequest": "mtvbench.records",
    "GenerationResult": "mtvbench.records",
    "JudgeVerdict": "mtvbench.records",
    "Usage": "mtvbench.records",
    # extending
    "BackendOptions": "mtvbench.models.settings",
    "ModelBackend": "mtvbench.models.backend",
    "BackendBase": "mtvbench.models.backend",
    "Backend": "mtvbench.models.registry",
    "register_backend": "mtvbench.models.registry",
    "create_backend": "mtvbench.models.registry",
    "create_judge": "mtvbench.judge.factory",
    "register_judge": "mtvbench.judge.registry",
    "register_analysis": "mtvbench.analysis.registry",
    "Stage": "mtvbench.construct.stages",
    "register_stage": "mtvbench.construct.stages",
    "Registry": "mtvbench.registry",
    # errors
    "MtvbenchError": "mtvbench.errors",
}

__all__ = [
    "__version__", "evaluate", "evaluate_async", "RunConfig", "build_config", "load_benchmark", "Benchmark",
    "Dialogue", "Task", "Scores", "RunDirectory", "RunData", "GenerationConfig", "GenerationRequest",
    "GenerationResult", "JudgeVerdict", "Usage", "BackendOptions", "ModelBackend", "BackendBase", "Backend",
    "register_backend", "create_backend", "create_judge",
    "register_judge", "register_analysis", "Stage", "register_stage", "Registry", "MtvbenchError",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from mtvbench._version import __version__
    from mtvbench.analysis.registry import register_analysis
    from mtvbench.config import RunConfig
    from mtvbench.construct.stages import Stage, register_stage
    from mtvbench.data.official import load_benchmark
    from mtvbench.data.schema import Benchmark, Dialogue, Task
    from mtvbench.errors import MtvbenchError
    from mtvbench.judge.factory import create_judge
    from mtvbench.judge.registry import register_judge
    from mtvbench.models.backend import BackendBase, ModelBackend
    from mtvbench.models.registry import Backend, create_backend, register_backend
    from mtvbench.models.settings import BackendOptions
    from mtvbench.records import GenerationConfig, GenerationRequest, GenerationResult, JudgeVerdict, Usage
    from mtvbench.registry import Registry
    from mtvbench.run.evaluate import evaluate, evaluate_async
    from mtvbench.run.rundir import RunData, RunDirectory
    from mtvbench.run.settings import build_config
    from mtvbench.scoring.aggregate import Scores


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mtvbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
