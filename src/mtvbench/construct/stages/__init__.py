"""The construction stages: the shape of a stage (:class:`Stage`) and their registry, :data:`STAGES`.

A stage is one module (``stages/split.py``, ``stages/caption.py``, ... ``stages/checklists.py``) that
declares everything about it: its artifact (the pydantic model it stores as
``WS/videos/<video>/<stage>.json``), its settings model (:attr:`Stage.settings_model`: a section of the
build config, :class:`~mtvbench.construct.config.BuildConfig`, whose fields with a description are
``mtvbench build`` flags), the prompt templates it renders (:attr:`Stage.prompts`), the model role it
asks (:attr:`Stage.role`, any name: ``models: {ROLE: SPEC}`` gives a role its own model), and ends with
its ``STAGE`` entry: how it makes its artifact for one video (:attr:`Stage.make`, given the
:class:`StageContext` the builder provides), which artifacts it is made from (:attr:`Stage.upstream`),
what it records as its settings (:attr:`Stage.settings`) and the optional dependencies it needs
(:attr:`Stage.needs`). The builder (:mod:`mtvbench.construct.pipeline`) knows no stage by name: deciding, running,
fingerprinting and reporting are the same for all of them.

Built-in stages are listed here in pipeline order as ``"module:STAGE"`` references (imported
when used, so this module imports none of them); another package adds one through the entry-point
group ``mtvbench.stages`` (it runs after the built-ins in ``build all``, and is ``mtvbench build NAME``
on its own), or in code with :func:`register_stage`. Stage names are the keys of stored artifacts
(``WS/videos/<video>/<stage>.json``) and call-journal rows, so a stored name never changes meaning: renaming a
built-in stage changes the workspace's format (:data:`mtvbench.construct.journal.SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from mtvbench.errors import MtvbenchError
from mtvbench.ledger.keys import text_digest
from mtvbench.registry import Registry

if TYPE_CHECKING:
    from mtvbench.construct.artifacts import Artifact, VideoRecord
    from mtvbench.construct.build_settings import BuildSettings
    from mtvbench.construct.calls import StageModel
    from mtvbench.construct.detector import Detector
    from mtvbench.construct.textsim import TextSimilarity
    from mtvbench.media.frames import FrameSettings

#: a model role a stage asks (``caption``, ``merge``, ``suitability``, ``generate``, ``checklist`` for the
#: built-ins)
Role = str
#: (import name, the distribution pip installs)
Module = tuple[str, str]
A = TypeVar("A", bound="Artifact")


class StageFolders(Protocol):
    """What a stage reads of the build workspace (:class:`mtvbench.construct.workspace.Workspace` has it;
    named here rather than imported, since the workspace reads the artifact types from :data:`STAGES`)."""

    def video_dir(self, video: str) -> Path:
        """The folder of ``video``'s artifacts (and of what a stage writes beside them)."""
        ...


class StageContext(Protocol):
    """What a stage gets from the builder while it runs for one video."""

    ws: StageFolders
    #: the build's settings (:class:`~mtvbench.construct.config.BuildConfig`); a stage reads its own
    #: section with ``config.section(ItsSettings)``
    config: BuildSettings

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
        """The Ray dispatcher of ``executor: ray`` (``dispatch.ray.RayDispatcher``: ``holder``/``call_holder``
        for an object made once on the cluster), or None."""
        ...


def _no_settings(ctx: StageContext) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Stage:
    """One construction stage (see the module docstring)."""

    #: make the stage's artifact for one video (its upstream artifacts are current)
    make: Callable[[StageContext, VideoRecord], Awaitable[Artifact]]
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
    #: its settings model: a section of the build config (key ``section``, default the stage's name),
    #: read with ``ctx.config.section(model)``; a field with a description is also the flag
    #: ``--SECTION-FIELD`` of ``mtvbench build``
    settings_model: type[BaseModel] | None = None
    #: the build-config key of its settings (default: the stage's name)
    section: str | None = None
    #: a digest of the prompt templates it renders (a template change redoes the stage)
    prompts: Callable[[], str] | None = None
    #: (extra, modules) it imports, checked before anything is written
    needs: tuple[str, tuple[Module, ...]] | None = None
    #: whether ``needs`` applies under a config (e.g. not for a custom detector)
    needs_when: Callable[[BuildSettings], bool] | None = None
    #: loads what the stage will need (detector, text embedder) before anything is written
    prepare: Callable[[StageContext], None] | None = None
    #: bump when its parsing, rules or output change: its artifacts are then redone
    version: int = 2

    def needs_under(self, config: BuildSettings) -> tuple[str, tuple[Module, ...]] | None:
        """The extra and modules this stage needs under the build settings ``config``, or None when it needs none
        there."""
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
                       ("suitability", "suitability"), ("generate", "generate"), ("checklists", "checklists")):
    STAGES.add(_name, f"mtvbench.construct.stages.{_module}:STAGE")

def register_stage(name: str, stage: Stage) -> Stage:
    """Add a construction stage (``mtvbench build NAME``, and the end of ``build all``).

    Args:
        name: the stage's name; it names its artifact file and journal rows, so it must not be taken.
        stage: what the stage is made from and how it runs.

    Returns:
        ``stage``."""
    STAGES.add(name, stage, origin=stage.make.__module__)
    return stage


def stage_names() -> tuple[str, ...]:
    """Every stage in pipeline order: the built-ins, then those of other packages."""
    return tuple(STAGES.names())


def loadable_stages() -> dict[str, Stage]:
    """Every stage that loads, in pipeline order (one of another package that fails to load is left out
    here; running it says why)."""
    out: dict[str, Stage] = {}
    for name in stage_names():
        try:
            out[name] = STAGES.get(name)
        except MtvbenchError:
            continue
    return out


def roles() -> tuple[Role, ...]:
    """The model roles the stages ask, in pipeline order."""
    return tuple(dict.fromkeys(s.role for s in loadable_stages().values() if s.role is not None))


__all__ = ["STAGES", "Role", "Stage", "StageContext", "StageFolders", "loadable_stages", "register_stage", "roles",
           "stage_names", "text_digest"]
