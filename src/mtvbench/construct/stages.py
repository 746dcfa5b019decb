"""The construction stages as a registry: :data:`STAGES` maps a stage name to its :class:`Stage`.

A stage is one module (``split``, ``caption``, ... ``checklists``) ending with its ``STAGE``
entry: how it runs for one video (:attr:`Stage.run`, making a :attr:`Stage.artifact`, given the
:class:`StageContext` the builder provides and the video), which artifacts it is made from (:attr:`Stage.upstream`), the
model role it asks (:attr:`Stage.role`), the settings that decide its result
(:attr:`Stage.settings`, recorded in its artifact), the prompt templates it renders
(:attr:`Stage.prompts`) and the optional dependencies it needs (:attr:`Stage.needs`).
The builder (:mod:`mtvbench.construct.pipeline`) knows no stage by name: deciding, running,
fingerprinting and reporting are the same for all of them.

Built-in stages are listed here in pipeline order as ``"module:STAGE"`` references (imported
when used); another package adds one through the entry-point group ``mtvbench.stages`` (it
runs after the built-ins in ``build all``, and is ``mtvbench build NAME`` on its own), or in
code with :func:`register_stage`. Stage names are the keys of stored artifacts
(``WS/videos/<video>/<stage>.json``) and call-journal rows, so a name never changes meaning.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from mtvbench.extras import require_backend, require_modules
from mtvbench.ledger.keys import text_digest
from mtvbench.registry import Registry

if TYPE_CHECKING:
    from mtvbench.construct.config import BuildConfig
    from mtvbench.construct.detect import Detector
    from mtvbench.construct.llm import StageModel
    from mtvbench.construct.records import Artifact, VideoRecord
    from mtvbench.construct.textsim import TextSimilarity
    from mtvbench.construct.workspace import Workspace
    from mtvbench.media.frames import FrameSettings

Role = Literal["caption", "merge", "score", "generate", "checklist"]
ROLES: tuple[Role, ...] = ("caption", "merge", "score", "generate", "checklist")
#: (import name, the distribution pip installs)
Module = tuple[str, str]
A = TypeVar("A", bound="Artifact")


class StageContext(Protocol):
    """What a stage gets from the builder while it runs for one video."""

    ws: Workspace
    config: BuildConfig

    def model(self, role: Role) -> StageModel:
        """The model of ``role`` (bounded concurrency, every reply in the call journal)."""
        ...

    def frames(self, n: int) -> FrameSettings:
        """Frame settings of ``n`` frames at the build's frame size."""
        ...

    def textsim(self) -> TextSimilarity:
        """The text similarity of the build (lexical, or sentence embeddings when configured)."""
        ...

    def detector(self) -> Detector:
        """The object detector (loaded once)."""
        ...

    def detector_name(self) -> str | None:
        """The detector's name, None when none was given (the recorded one then applies)."""
        ...

    def artifact(self, video: VideoRecord, stage: str, kind: type[A]) -> A:
        """The current artifact of an upstream ``stage`` of ``video``."""
        ...

    async def offload(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a per-video computation off the event loop (a thread, or a Ray task on a cluster)."""
        ...

    def cluster(self) -> Any:
        """The Ray cluster of ``executor: ray`` (``construct.ray_executor.RayBuild``), or None."""
        ...


def _no_settings(ctx: StageContext) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Stage:
    """One construction stage (see the module docstring)."""

    #: make the stage's artifact for one video (its upstream artifacts are current)
    run: Callable[[StageContext, VideoRecord], Awaitable[Artifact]]
    #: the artifact's type (read back from ``WS/videos/<video>/<stage>.json``)
    artifact: type[Artifact]
    #: one line for ``mtvbench build NAME --help``
    help: str
    #: the stages whose artifacts it reads (object stages are left out with ``--no-objects``)
    upstream: tuple[str, ...] = ()
    #: the model role it asks, if any (its replies go to the call journal)
    role: Role | None = None
    #: reads the video file itself (its fingerprint is recorded as an input)
    from_video: bool = False
    #: an object stage: skipped when the build runs without objects (``--no-objects``)
    object_stage: bool = False
    #: the settings besides the upstream artifacts that decide its result (recorded, compared on rerun)
    settings: Callable[[StageContext], dict[str, Any]] = field(default=_no_settings)
    #: a digest of the prompt templates it renders (a template change redoes the stage)
    prompts: Callable[[], str] | None = None
    #: (extra, modules) it imports, checked before anything is written
    needs: tuple[str, tuple[Module, ...]] | None = None
    #: whether ``needs`` applies under a config (e.g. not for a custom detector)
    needs_when: Callable[[BuildConfig], bool] | None = None
    #: loads what the stage will need (detector, text embedder) before anything is written
    prepare: Callable[[StageContext], None] | None = None
    #: bump when its parsing, rules or output change: its artifacts are then redone
    version: int = 2

    def needs_under(self, config: BuildConfig) -> tuple[str, tuple[Module, ...]] | None:
        if self.needs is None or (self.needs_when is not None and not self.needs_when(config)):
            return None
        return self.needs


def _as_stage(obj: object) -> Stage:
    if isinstance(obj, Stage):
        return obj
    raise TypeError(f"expected a mtvbench.construct.stages.Stage, got {type(obj).__name__}")


STAGES: Registry[Stage] = Registry("construction stage", group="mtvbench.stages", coerce=_as_stage)
for _name, _module in (("split", "split"), ("caption", "caption"), ("merge", "merge"), ("keyframes", "keyframes"),
                       ("detect", "detect"), ("objects", "objects"), ("crossscene", "crossscene"),
                       ("score", "suitability"), ("generate", "generate"), ("checklists", "checklists")):
    STAGES.add(_name, f"mtvbench.construct.{_module}:STAGE")


def register_stage(name: str, stage: Stage) -> Stage:
    """Add a construction stage (``mtvbench build NAME``, and the end of ``build all``).

    Args:
        name: the stage's name; it names its artifact file and journal rows, so it must not be taken.
        stage: what the stage is made from and how it runs.

    Returns:
        ``stage``."""
    STAGES.add(name, stage, origin=stage.run.__module__)
    return stage


def stage_names() -> tuple[str, ...]:
    """Every stage in pipeline order: the built-ins, then those of other packages."""
    return tuple(STAGES.names())


def require_stages(stages: Iterable[str], *, objects: bool = True, detector: str | None = None) -> None:
    """The extras of construction stages, checked without importing them. With ``objects`` false
    the object stages are skipped; a custom ``detector`` (``module:factory``) brings its own
    dependencies."""
    from mtvbench.construct.config import BuildConfig

    require_build_config(stages, BuildConfig(objects=objects, detector=detector), backends=False)


def require_build(stages: Iterable[str], config: BuildConfig) -> None:
    """Everything ``mtvbench build`` needs for ``stages`` under ``config``: the stages' extras and
    the extras of the model backends it names (checked before the workspace is created)."""
    require_build_config(stages, config, backends=True)


def require_build_config(stages: Iterable[str], config: BuildConfig, *, backends: bool) -> None:
    active = {s: STAGES.get(s) for s in stages if s in STAGES}
    active = {s: st for s, st in active.items() if config.objects or not st.object_stage}
    for name, stage in active.items():
        needs = stage.needs_under(config)
        if needs is not None:
            require_modules(f"the {name} stage", *needs)
    if backends and any(stage.role is not None for stage in active.values()):
        for spec in sorted({config.model, *config.models.values()} - {None, ""}):
            require_backend(str(spec), "build")


__all__ = ["ROLES", "STAGES", "Role", "Stage", "StageContext", "register_stage", "require_build", "require_stages",
           "stage_names", "text_digest"]
