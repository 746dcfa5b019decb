"""Stage 3 — caption-based merging of adjacent clips into single-scene segments.

Decision rule (paper §3.2: "the caption-based clip merging method is iteratively applied
twice"): one pass walks the current segments left to right keeping a running group; the
LLM is shown the running group's caption and the next segment's caption and asked whether
both show the same scene (same place and same ongoing event). "Yes" merges the next
segment into the group (its caption is appended), "No" closes the group. The second pass
does the same over the first pass's segments, so scenes split into several shots that the
first pass joined only partly get joined. A reply is read as Yes/No from a JSON
``{"same_scene": true}`` or its first yes/no word; an unreadable reply is asked again
(up to ``max_attempts`` calls), then counts as "No" and is listed as a failure. A failed
call also counts as "No" for the rest of the walk, and the stage is incomplete.

Optional pre-filter (``prefilter_below``): when the text similarity of the two captions
(:mod:`mtvbench.construct.textsim`) is below the value, the pair is "No" without asking.
Every reply is in the call journal, so an interrupted merge resumes without asking twice.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Failure, VideoRecord
from mtvbench.construct.calls import StageModel, failure
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.caption import Captions
from mtvbench.construct.stages.split import SplitResult
from mtvbench.construct.textsim import TextSimilarity
from mtvbench.models.ask import ReaskPolicy, append_problems, ask
from mtvbench.prompts.generation import MERGE_PROMPT
from mtvbench.records import GenerationRequest, Rejected
from mtvbench.util.jsonio import extract_json_object, yes_no
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import hms

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_KEYS = ("same_scene", "same", "answer", "merge")
MERGE_REASK = append_problems("\n\nYour previous reply could not be used: ", ". Answer Yes or No.")


class MergeSettings(BaseModel):
    """The ``merge`` section of the build config."""

    model_config = STRICT

    passes: int = Field(2, description="caption-based merging passes over the clips (the paper's: two)")
    prefilter_below: float | None = Field(None, description="a pair whose caption similarity is below this is "
                                                            "\"not the same scene\" without asking")


class Segment(BaseModel):
    """A single-scene segment: the clips merged into it, its start and end, and its caption."""

    index: int
    clips: list[int]
    start_s: float
    end_s: float
    caption: str


class MergeDecision(BaseModel):
    """One same-scene decision between two neighbouring groups of clips in a pass: the answer, whether the caption
    pre-filter decided it without a call, and why."""

    pass_index: int
    left: list[int]
    right: list[int]
    same_scene: bool
    prefiltered: bool = False
    reason: str = ""


class MergeResult(Artifact):
    """The merge stage's artifact: the segments, every decision that made them, and the decisions given up."""

    segments: list[Segment] = Field(default_factory=list)
    decisions: list[MergeDecision] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)


def parse_same_scene(text: str) -> bool | None:
    """The yes/no of a same-scene reply (a JSON object or a plain Yes/No): True for yes, False for no, None when the
    reply gives neither."""
    obj = extract_json_object(text, accept=lambda o: any(yes_no(o.get(k)) for k in _KEYS))
    if obj is not None:
        return next(yes_no(obj.get(k)) for k in _KEYS if yes_no(obj.get(k))) == "Yes"
    m = _YES_NO.search(text)
    return None if m is None else m.group(1).lower() == "yes"


def same_scene_check(text: str) -> bool | Rejected:
    """The check the ask loop applies to a same-scene reply: its answer, or a rejection that has the model asked
    again."""
    got = parse_same_scene(text)
    return Rejected(["no yes/no in the reply"]) if got is None else got


def segment_caption(captions: list[tuple[float, float, str]]) -> str:
    """The caption of a segment made of ``captions`` (start, end and text per clip): a single clip's text, else each
    clip's text after its time range."""
    if len(captions) == 1:
        return captions[0][2]
    return " ".join(f"[{hms(s)}-{hms(e)}] {c}" for s, e, c in captions)


async def merge_clips(video: str, split: SplitResult, captions: Captions, model: StageModel, passes: int = 2,
                      prefilter_below: float | None = None, textsim: TextSimilarity | None = None,
                      max_attempts: int = 3) -> MergeResult:
    """Merge neighbouring clips of ``split`` that ``model`` judges to be the same scene from their captions, in
    ``passes`` passes (the paper applies the method twice). With ``prefilter_below``, two groups whose captions
    are less similar than that stay apart without a call."""
    result = MergeResult(video=video)
    policy = ReaskPolicy(max_attempts, MERGE_REASK)
    # a group is a list of clip indices; its caption parts are (start, end, caption) per clip
    groups: list[list[int]] = [[c.index] for c in split.clips]
    clip_by = {c.index: c for c in split.clips}

    def parts(g: list[int]) -> list[tuple[float, float, str]]:
        return [(clip_by[i].start_s, clip_by[i].end_s, captions.captions.get(i, "")) for i in g]

    complete = True
    for p in range(1, passes + 1):
        if len(groups) < 2:
            break
        merged: list[list[int]] = []
        current = groups[0]
        for nxt in groups[1:]:
            a_cap, b_cap = segment_caption(parts(current)), segment_caption(parts(nxt))
            if prefilter_below is not None and textsim is not None and \
                    textsim.similarity(a_cap, b_cap) < prefilter_below:
                result.decisions.append(MergeDecision(pass_index=p, left=current, right=nxt, same_scene=False,
                                                      prefiltered=True, reason="caption similarity below pre-filter"))
                same = False
            else:
                prompt = MERGE_PROMPT.format(
                    a_start=hms(clip_by[current[0]].start_s), a_end=hms(clip_by[current[-1]].end_s),
                    b_start=hms(clip_by[nxt[0]].start_s), b_end=hms(clip_by[nxt[-1]].end_s),
                    a_caption=a_cap, b_caption=b_cap)
                item = f"p{p}/{'+'.join(map(str, current))}/{'+'.join(map(str, nxt))}"
                out = await ask(model.caller(video, "merge", item), GenerationRequest(id=item, prompt=prompt),
                                same_scene_check, policy)
                same = bool(out.value)
                if out.status == "error":
                    complete = False
                else:
                    result.decisions.append(MergeDecision(pass_index=p, left=current, right=nxt, same_scene=same,
                                                          reason=(out.raw[-1] if out.raw else "").strip()[:300]))
                if not out.ok:
                    result.failures.append(failure(item, out))
            if same:
                current = current + nxt
            else:
                merged.append(current)
                current = nxt
        merged.append(current)
        groups = merged
    result.segments = [
        Segment(index=i, clips=g, start_s=clip_by[g[0]].start_s, end_s=clip_by[g[-1]].end_s,
                caption=segment_caption(parts(g)))
        for i, g in enumerate(groups)
    ]
    result.complete = complete
    return result


async def _make(ctx: StageContext, v: VideoRecord) -> MergeResult:
    m = ctx.config.section(MergeSettings)
    textsim = ctx.textsim() if m.prefilter_below is not None else None
    return await merge_clips(v.name, ctx.artifact(v, "split", SplitResult), ctx.artifact(v, "caption", Captions),
                             ctx.model("merge"), m.passes, m.prefilter_below, textsim, ctx.config.max_attempts)


def _settings(ctx: StageContext) -> dict[str, Any]:
    m = ctx.config.section(MergeSettings)
    return {"passes": m.passes, "prefilter_below": m.prefilter_below,
            "textsim": (ctx.config.text_embedder or "lexical") if m.prefilter_below is not None else None}


STAGE = Stage(make=_make, artifact=MergeResult,
              help="3. Merge adjacent clips of the same scene (LLM judgement, two passes).",
              upstream=("split", "caption"), role="merge", settings=_settings, settings_model=MergeSettings,
              prompts=lambda: text_digest(MERGE_PROMPT),
              prepare=lambda ctx: ctx.textsim() if ctx.config.text_embedder else None)
