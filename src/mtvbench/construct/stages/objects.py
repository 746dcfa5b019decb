"""Stages 6-7 — object captions and the dynamic object memory bank.

**Object captions.** An MLLM describes each detected crop (one image per call; an empty
reply is asked again up to ``max_attempts`` calls, then the detection keeps no caption and
is listed as a failure). Every reply is in the call journal; a re-run asks only what is
missing.

**Memory bank.** Detections are visited in time order, frame by frame. Each detection's
features are:

- its detector label (``person``, ``car``, ...);
- its caption (text similarity: :mod:`mtvbench.construct.textsim` — lexical cosine by default,
  sentence embeddings with ``--text-embedder``);
- a colour feature of the crop: the hue-saturation histogram (30 x 32 bins, HSV,
  summing to 1), compared by correlation (``cv2.HISTCMP_CORREL``, clipped at 0).

A detection is compared with every bank entry of the same label (``label_must_match``):
``score = visual_weight * visual + text_weight * text``, where ``visual`` compares the
crop's histogram with the entry's running mean histogram and ``text`` is the best text
similarity to the entry's stored captions. The detection joins the best entry whose score
is at least ``threshold`` *and* whose visual similarity is at least ``min_visual``;
otherwise it opens a new entry with a new persistent ID (``obj001``, ...). Within one
frame the assignment is greedy by score and an entry takes at most one detection, so two
objects seen together never share an ID. Entries keep: ID, label, captions (distinct, up
to ``max_captions``), the mean histogram, and every appearance (detection, segment, frame,
time). The bank is rebuilt from the stored detections and captions each time the stage
runs, so it is deterministic.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Failure, VideoRecord
from mtvbench.construct.calls import LazyFrames, StageModel, failure, gather_all, text_check
from mtvbench.construct.clipframes import image_frames
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.detect import Detection, Detections
from mtvbench.construct.stages.merge import MergeResult
from mtvbench.construct.textsim import LexicalSimilarity, TextSimilarity
from mtvbench.errors import InputError
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.prompts.generation import OBJECT_CAPTION_PROMPT
from mtvbench.records import GenerationRequest
from mtvbench.util.strict import STRICT


class BankSettings(BaseModel):
    """The ``bank`` section of the build config (the objects stage's settings)."""

    model_config = STRICT

    visual_weight: float = 0.6
    text_weight: float = 0.4
    threshold: float = 0.6
    min_visual: float = 0.5
    label_must_match: bool = True
    hist_bins: tuple[int, int] = (30, 32)
    max_captions: int = 5


class Appearance(BaseModel):
    """Where an object of the bank was seen: the detection, its segment, frame and time."""

    detection: int
    segment: int | None
    frame: int
    time_s: float


class BankEntry(BaseModel):
    """One object of the memory bank: its ID and label, the captions of its crops, its colour histogram and every
    appearance."""

    id: str
    label: str
    captions: list[str] = Field(default_factory=list)
    histogram: list[float] = Field(default_factory=list)
    appearances: list[Appearance] = Field(default_factory=list)

    @property
    def segments(self) -> list[int]:
        """The segments the object appears in, in order."""
        return sorted({a.segment for a in self.appearances if a.segment is not None})

    @property
    def description(self) -> str:
        """The object's description: its first crop caption, else its label."""
        return self.captions[0] if self.captions else self.label


class ObjectsResult(Artifact):
    """The objects stage's artifact: each detection's caption, the text similarity used, the memory bank's objects,
    the object each detection was assigned to, and the captions given up."""

    captions: dict[int, str] = Field(default_factory=dict)  # detection id -> caption
    text_similarity: str = "lexical"
    entries: list[BankEntry] = Field(default_factory=list)
    assignments: dict[int, str] = Field(default_factory=dict)  # detection id -> object ID
    failures: list[Failure] = Field(default_factory=list)


class Observation(BaseModel):
    """One detection as the bank sees it."""

    detection: int
    label: str
    caption: str
    histogram: list[float]
    segment: int | None
    frame: int
    time_s: float


def crop_histogram(rgb: np.ndarray, bins: tuple[int, int] = (30, 32)) -> list[float]:
    """The hue-saturation histogram of a crop, scaled to sum to 1, by which the bank compares appearances."""
    import cv2

    hsv = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, list(bins), [0, 180, 0, 256]).ravel()
    total = float(hist.sum())
    return [float(x) / total for x in hist] if total > 0 else [0.0] * len(hist)


def histogram_similarity(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> float:
    """The correlation of two crop histograms, at least 0 (0 when one is empty or their shapes differ)."""
    import cv2

    va = np.asarray(a, dtype=np.float32)
    vb = np.asarray(b, dtype=np.float32)
    if va.size == 0 or va.shape != vb.shape:
        return 0.0
    return max(0.0, float(cv2.compareHist(va, vb, cv2.HISTCMP_CORREL)))


class MemoryBank:
    """The dynamic object memory bank (see module doc)."""

    def __init__(self, settings: BankSettings | None = None, textsim: TextSimilarity | None = None):
        self.settings = settings or BankSettings()
        self.textsim = textsim or LexicalSimilarity()
        self.entries: list[BankEntry] = []
        self._counts: list[int] = []

    def _score(self, obs: Observation, e: BankEntry) -> tuple[float, float, float]:
        vis = histogram_similarity(obs.histogram, e.histogram)
        txt = max((self.textsim.similarity(obs.caption, c) for c in e.captions), default=0.0) \
            if obs.caption else 0.0
        s = self.settings
        return s.visual_weight * vis + s.text_weight * txt, vis, txt

    def add_frame(self, observations: list[Observation]) -> list[str]:
        """Assign IDs to the detections of one frame; returns their IDs in input order."""
        s = self.settings
        candidates: list[tuple[float, int, int]] = []
        for oi, obs in enumerate(observations):
            for ei, e in enumerate(self.entries):
                if s.label_must_match and e.label != obs.label:
                    continue
                score, vis, _ = self._score(obs, e)
                if score >= s.threshold and vis >= s.min_visual:
                    candidates.append((score, oi, ei))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        taken_obs: dict[int, int] = {}
        taken_entries: set[int] = set()
        for _, oi, ei in candidates:
            if oi in taken_obs or ei in taken_entries:
                continue
            taken_obs[oi] = ei
            taken_entries.add(ei)
        ids: list[str] = []
        for oi, obs in enumerate(observations):
            ei = taken_obs.get(oi)
            if ei is None:
                ei = len(self.entries)
                self.entries.append(BankEntry(id=f"obj{ei + 1:03d}", label=obs.label, histogram=list(obs.histogram)))
                self._counts.append(0)
            self._update(ei, obs)
            ids.append(self.entries[ei].id)
        return ids

    def _update(self, ei: int, obs: Observation) -> None:
        e = self.entries[ei]
        n = self._counts[ei]
        if n and e.histogram:
            e.histogram = [(h * n + o) / (n + 1) for h, o in zip(e.histogram, obs.histogram)]
        self._counts[ei] = n + 1
        if obs.caption and obs.caption not in e.captions and len(e.captions) < self.settings.max_captions:
            e.captions.append(obs.caption)
        e.appearances.append(Appearance(detection=obs.detection, segment=obs.segment, frame=obs.frame,
                                        time_s=obs.time_s))

    def add_all(self, observations: list[Observation]) -> dict[int, str]:
        """Visit observations frame by frame in time order; detection id -> object ID."""
        by_frame: dict[int, list[Observation]] = defaultdict(list)
        for o in observations:
            by_frame[o.frame].append(o)
        out: dict[int, str] = {}
        for frame in sorted(by_frame):
            obs = sorted(by_frame[frame], key=lambda o: o.detection)
            for o, oid in zip(obs, self.add_frame(obs)):
                out[o.detection] = oid
        return out


def segment_at(merge: MergeResult | None, t: float) -> int | None:
    """The index of the merged segment that holds time ``t`` (the last segment for a time after its start), or None
    without segments."""
    if merge is None:
        return None
    for s in merge.segments:
        if s.start_s - 1e-6 <= t < s.end_s - 1e-6:
            return s.index
    return merge.segments[-1].index if merge.segments and t >= merge.segments[-1].start_s else None


def _crop_frames(video_dir: Path, d: Detection) -> LazyFrames:
    try:
        data = (video_dir / d.crop).read_bytes()
    except OSError as e:
        raise InputError(f"{video_dir / d.crop}: cannot read the object crop ({e.strerror or e})",
                         hint="run `mtvbench build detect --force` for this video") from e

    def load():  # noqa: ANN202
        from PIL import Image

        with Image.open(video_dir / d.crop) as im:
            w, h = im.size
        return image_frames(data, w, h, video_dir / d.crop)

    return LazyFrames(f"crop:{hashlib.sha256(data).hexdigest()}", load)


async def caption_objects(video: str, video_dir: Path, detections: Detections, model: StageModel,
                          max_attempts: int = 3) -> tuple[dict[int, str], list[Failure]]:
    """Caption every detected crop with ``model``, one image per call: the captions by detection id, and the crops
    whose caption was given up."""
    policy = ReaskPolicy(max_attempts)

    async def caption_object(d: Detection):  # noqa: ANN202 - AskOutcome[str]
        item = f"detection/{d.id}"
        request = GenerationRequest(id=item, prompt=OBJECT_CAPTION_PROMPT.format(label=d.box.label))
        return await ask(model.caller(video, "objects", item, _crop_frames(video_dir, d)), request, text_check,
                         policy)

    outcomes = await gather_all(caption_object(d) for d in detections.detections)
    captions: dict[int, str] = {}
    failures: list[Failure] = []
    for d, res in zip(detections.detections, outcomes):
        if res.ok:
            captions[d.id] = res.value
        else:
            failures.append(failure(f"detection/{d.id}", res))
    return captions, failures


def observations(video_dir: Path, detections: Detections, captions: dict[int, str], merge: MergeResult | None,
                 bins: tuple[int, int] = (30, 32)) -> list[Observation]:
    """The detections as the memory bank sees them: each with its caption, its crop's histogram and its segment."""
    from PIL import Image

    out = []
    for d in detections.detections:
        with Image.open(video_dir / d.crop) as im:
            rgb = np.asarray(im.convert("RGB"))
        seg = segment_at(merge, d.time_s) if merge is not None else d.segment
        out.append(Observation(detection=d.id, label=d.box.label, caption=captions.get(d.id, ""),
                               histogram=crop_histogram(rgb, bins), segment=seg, frame=d.frame, time_s=d.time_s))
    return out


async def build_objects(video: str, video_dir: Path, detections: Detections, merge: MergeResult | None,
                        model: StageModel, settings: BankSettings | None = None,
                        textsim: TextSimilarity | None = None, max_attempts: int = 3) -> ObjectsResult:
    """Caption the detected crops, then assign each to an object of the dynamic memory bank (see the module
    docstring)."""
    settings = settings or BankSettings()
    textsim = textsim or LexicalSimilarity()
    captions, failures = await caption_objects(video, video_dir, detections, model, max_attempts)
    bank = MemoryBank(settings, textsim)
    assignments = bank.add_all(observations(video_dir, detections, captions, merge, settings.hist_bins))
    return ObjectsResult(video=video, captions=captions, text_similarity=textsim.name, entries=bank.entries,
                         assignments=assignments, failures=failures,
                         complete=not any(f.kind == "error" for f in failures))


async def _make(ctx: StageContext, v: VideoRecord) -> ObjectsResult:
    return await build_objects(v.name, ctx.ws.video_dir(v.name), ctx.artifact(v, "detect", Detections),
                               ctx.artifact(v, "merge", MergeResult), ctx.model("caption"),
                               ctx.config.section(BankSettings), ctx.textsim(), ctx.config.max_attempts)


STAGE = Stage(make=_make, artifact=ObjectsResult,
              help="6-7. Caption object crops and build the object memory bank (persistent IDs).",
              upstream=("detect", "merge"), role="caption", object_stage=True, settings_model=BankSettings,
              section="bank",
              settings=lambda ctx: {"bank": ctx.config.section(BankSettings).model_dump(mode="json"),
                                    "textsim": ctx.config.text_embedder or "lexical"},
              prompts=lambda: text_digest(OBJECT_CAPTION_PROMPT), needs=("build", (("cv2", "opencv-python-headless"),)),
              prepare=lambda ctx: ctx.textsim() if ctx.config.text_embedder else None)
