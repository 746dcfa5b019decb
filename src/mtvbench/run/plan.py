"""Which rounds need a model call, and what history each call sees.

- ``golden`` (paper default): history = every earlier round's User text and the dataset's
  Assistant text; only scored model turns are called (each call is independent).
- ``self``: history = the model's own earlier answers, so every round up to the last scored
  one is generated, in order.
- ``none``: no history; only scored model turns are called.
"""

from __future__ import annotations

from collections.abc import Mapping

from mtvbench.config import ContextMode
from mtvbench.data.schema import Dialogue, Round
from mtvbench.media.frames import VideoFrames
from mtvbench.prompts import PromptStyle, render_inference_prompt
from mtvbench.records import GenerationRequest


def rounds_to_call(dialogue: Dialogue, context: ContextMode) -> list[Round]:
    scored = dialogue.scored_turns
    if not scored:
        return []
    if context == "self":
        last = max(r.index for r in scored)
        return [r for r in dialogue.rounds if r.index <= last]
    return scored


def history_for(dialogue: Dialogue, index: int, context: ContextMode,
                own_answers: Mapping[int, str] | None = None) -> list[tuple[str, str]]:
    earlier = [r for r in dialogue.rounds if r.index < index]
    if context == "none":
        return []
    if context == "golden":
        return [(r.user, r.assistant) for r in earlier]
    answers = own_answers or {}
    missing = [r.index for r in earlier if r.index not in answers]
    if missing:
        raise KeyError(f"{dialogue.id}: self context needs the model's answers to rounds {missing} first")
    return [(r.user, answers[r.index]) for r in earlier]


def build_request(dialogue: Dialogue, rnd: Round, context: ContextMode, frames: VideoFrames | None,
                  own_answers: Mapping[int, str] | None = None, prompt_style: PromptStyle = "paper"
                  ) -> GenerationRequest:
    prompt = render_inference_prompt(history_for(dialogue, rnd.index, context, own_answers), rnd.user,
                                     prompt_style)
    return GenerationRequest(id=dialogue.turn_id(rnd.index), prompt=prompt, frames=frames,
                             golden_answer=rnd.assistant)
