"""What every build has, whatever its stages: :class:`BuildSettings`, the base of the assembled
:class:`~mtvbench.construct.config.BuildConfig`. A module of its own because the stage registry
(:mod:`mtvbench.construct.stages`) names it, and the assembled config is made from that registry.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field, field_validator

from mtvbench.config import ExecutorName, RaySettings, RoleSettings
from mtvbench.util.strict import strict

S = TypeVar("S", bound=BaseModel)


class BuildSettings(BaseModel):
    """What every build has, whatever its stages (see the module docstring). Each model role has its own
    backend spec (``models``; default: ``model``, for every role); the built-in stages ask ``caption`` (clip and
    object-crop captions, an MLLM), ``merge`` (same-scene judgements, text only), ``suitability`` (task
    suitability ratings, an MLLM), ``generate`` (dialogues, an MLLM) and ``checklist`` (checklists, text only)."""

    model_config = strict(populate_by_name=True)

    model: str | None = Field(None, description="model spec for every LLM role, e.g. openai:gpt-4o; 'offline': "
                                                "scripted replies, no API (NOT a real benchmark)")
    #: role -> spec, overriding ``model`` for that role
    models: dict[str, str] = Field(default_factory=dict)
    backend: RoleSettings = Field(default_factory=RoleSettings)
    concurrency: int = Field(4, description="concurrent model calls per stage")
    objects: bool = Field(True, description="object stages: key frames, detection, memory bank (--no-objects: "
                                            "cross-scene units from themes only)")
    detector: str | None = Field(None, description="object detector: yolo (YOLO11, the default) or module:factory")
    detector_weights: str | None = Field(None, description="YOLO11 weights file (e.g. yolo11n.pt)")
    text_embedder: str | None = Field(None, description="sentence-transformers model of the text similarity "
                                                        "(merge pre-filter, memory bank, themes); default: lexical")
    frame_max_side: int = Field(448, description="longer side of the frames sent to the model, at most (px)")
    max_attempts: int = Field(3, description="asks per item while its replies break the rules")
    retry_failed: bool = Field(False, description="ask the items given up on (rules broken) again")
    #: settings of stages of other packages that declare no settings model, by stage name (free-form)
    stage_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: ``ray``: per-video stages and model calls on a Ray cluster (:mod:`mtvbench.dispatch.ray`); the
    #: workspace must then be on storage every node sees
    executor: ExecutorName = Field("local", description="local | ray (per-video stages and model calls on a Ray "
                                                        "cluster; the workspace on storage every node sees)")
    ray_address: str | None = Field(None, description="with --executor ray: auto | HOST:PORT (default: a local "
                                                      "Ray instance)")
    ray: RaySettings = Field(default_factory=RaySettings)

    #: the stage sections of this class: key -> stage name (set by :func:`assemble`)
    SECTIONS: ClassVar[dict[str, str]] = {}

    @field_validator("concurrency")
    @classmethod
    def _concurrency(cls, v: int) -> int:
        if v < 1:
            raise ValueError("must be >= 1")
        return v

    @classmethod
    def section_key(cls, attr: str) -> str:
        """The config key of a section attribute (``video-summary`` for ``video_summary``)."""
        return cls.model_fields[attr].alias or attr

    def section(self, kind: type[S]) -> S:
        """The settings of the stage whose settings model is ``kind`` (its defaults when this config has no
        such section: a stage registered after the config was made)."""
        for attr, info in type(self).model_fields.items():
            if info.annotation is kind:
                return getattr(self, attr)
        return kind()


__all__ = ["BuildSettings"]
