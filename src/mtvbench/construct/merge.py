"""Stage 3 — caption-based merging of adjacent clips into single-scene segments.

Decision rule (paper §3.2: "the caption-based clip merging method is iteratively applied
twice"): one pass walks the current segments left to right keeping a running group; the
LLM is shown the running group's caption and the next segment's caption and asked whether
both show the same scene (same place and same ongoing event). "Yes" merges the next
segment into the group (its caption is appended), "No" closes the group. The second pass
does the same over the first pass's segments, so scenes split into several shots that the
first pass joined only partly get joined. A reply is read as Yes/No from its first
yes/no word (or a JSON ``{"same_scene": true}``); an unreadable reply counts as "No" and
is listed as a failure.

Optional pre-filter (``prefilter_below``): when the text similarity of the two captions
(:mod:`mtvbench.construct.textsim`) is below the value, the pair is "No" without asking.
Decisions are stored, so an interrupted merge resumes without asking twice.
"""

from __future__ import annotations

import re

from mtvbench.construct.llm import StageModel, find_json_object
from mtvbench.construct.records import Captions, Failure, MergeDecision, MergeResult, Segment, SplitResult, hms
from mtvbench.construct.textsim import TextSimilarity
from mtvbench.prompts.generation import MERGE_PROMPT

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_same_scene(text: str) -> bool | None:
    obj = find_json_object(text)
    if obj is not None:
        for key in ("same_scene", "same", "answer", "merge"):
            v = obj.get(key)
            if isinstance(v, bool):
                return v
            if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
                return v.strip().lower() == "yes"
    m = _YES_NO.search(text)
    return None if m is None else m.group(1).lower() == "yes"


def segment_caption(captions: list[tuple[float, float, str]]) -> str:
    if len(captions) == 1:
        return captions[0][2]
    return " ".join(f"[{hms(s)}-{hms(e)}] {c}" for s, e, c in captions)


async def merge_clips(video: str, split: SplitResult, captions: Captions, model: StageModel,
                      previous: MergeResult | None = None, passes: int = 2,
                      prefilter_below: float | None = None, textsim: TextSimilarity | None = None) -> MergeResult:
    known = {(p.pass_index, tuple(p.left), tuple(p.right)): p for p in (previous.decisions if previous else [])}
    result = MergeResult(video=video)
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
            key = (p, tuple(current), tuple(nxt))
            decision = known.get(key)
            if decision is None:
                a_cap, b_cap = segment_caption(parts(current)), segment_caption(parts(nxt))
                if prefilter_below is not None and textsim is not None and \
                        textsim.similarity(a_cap, b_cap) < prefilter_below:
                    decision = MergeDecision(pass_index=p, left=current, right=nxt, same_scene=False,
                                             prefiltered=True, reason="caption similarity below pre-filter")
                else:
                    prompt = MERGE_PROMPT.format(
                        a_start=hms(clip_by[current[0]].start_s), a_end=hms(clip_by[current[-1]].end_s),
                        b_start=hms(clip_by[nxt[0]].start_s), b_end=hms(clip_by[nxt[-1]].end_s),
                        a_caption=a_cap, b_caption=b_cap)
                    text, err = await model.ask(f"merge/{video}/p{p}/{current[0]}-{nxt[0]}", prompt)
                    if text is None:
                        complete = False
                        result.failures.append(Failure(item=f"pass {p}: clips {current} + {nxt}", problems=[err]))
                        same = False
                        decision = None
                    else:
                        same_v = parse_same_scene(text)
                        if same_v is None:
                            result.failures.append(Failure(item=f"pass {p}: clips {current} + {nxt}",
                                                           problems=["no yes/no in the reply; kept apart"]))
                        decision = MergeDecision(pass_index=p, left=current, right=nxt, same_scene=bool(same_v),
                                                 reason=text.strip()[:300])
                if decision is not None:
                    result.decisions.append(decision)
            else:
                result.decisions.append(decision)
            same = decision.same_scene if decision is not None else False
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
