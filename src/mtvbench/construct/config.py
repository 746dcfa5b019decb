"""The settings of a build (``mtvbench build --config FILE`` and the flags): :class:`BuildConfig`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mtvbench.config import ExecutorName, RaySettings
from mtvbench.construct.crossscene import CrossSceneSettings
from mtvbench.construct.keyframes import KeyFrameSettings
from mtvbench.construct.objects import BankSettings
from mtvbench.construct.split import SplitSettings
from mtvbench.models.settings import BackendOptions


class BuildConfig(BaseModel):
    """Every setting of a build. Each model role has its own backend spec (``models``; default: the
    one ``model``): ``caption`` (clip and object-crop captions, an MLLM), ``merge`` (same-scene
    judgements, text only), ``score`` (task suitability, an MLLM), ``generate`` (dialogues, an MLLM),
    ``checklist`` (checklists, text only)."""

    model: str | None = None
    models: dict[str, str] = Field(default_factory=dict)  # role -> spec, overriding ``model``
    backend: BackendOptions = Field(default_factory=BackendOptions)
    concurrency: int = 4
    split: SplitSettings = Field(default_factory=SplitSettings)
    keyframes: KeyFrameSettings = Field(default_factory=KeyFrameSettings)
    bank: BankSettings = Field(default_factory=BankSettings)
    crossscene: CrossSceneSettings = Field(default_factory=CrossSceneSettings)
    objects: bool = True  # False: skip keyframes/detect/objects (cross-scene units from themes only)
    detector: str | None = None  # None/"yolo" or "module:factory"
    detector_weights: str | None = None
    text_embedder: str | None = None
    merge_passes: int = 2
    merge_prefilter_below: float | None = None
    frame_max_side: int = 448
    caption_frames: int = 8
    score_frames: int = 16
    generate_frames: int = 32
    min_score: int = 5
    max_attempts: int = 3
    checklist_items: int = 5
    checklist_exact_split: bool = True
    retry_failed: bool = False
    #: settings of stages from other packages, by stage name (free-form; each such stage reads its own)
    stage_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: ``ray``: per-video stages and model calls on a Ray cluster (:mod:`.ray_executor`); the
    #: workspace must then be on storage every node sees
    executor: ExecutorName = "local"
    ray_address: str | None = None
    ray: RaySettings = Field(default_factory=RaySettings)
