"""Which rounds need a model call, and what each call sees.

The dialogues here are read by the run's protocol (:meth:`mtvbench.protocol.EvalProtocol.apply`): their
rounds are in history order, and each judged round names the round whose answer it judges (its own, another
one's under the ``authors`` protocol, or a fixed placeholder that needs no call).

- ``golden`` (paper default): history = every earlier round's User text and the dataset's Assistant text;
  only the rounds whose answers are judged are called (each call is independent).
- ``self``: history = the model's own earlier answers, so every round up to the last one whose answer is
  judged is generated, in order.
- ``none``: no history; only the rounds whose answers are judged are called.

The text of a call is the run's inference style (:mod:`mtvbench.prompts.templates`): Figure 15, or the
prompt and message shape of the authors' script for the model (``qwen-script``: text before the video;
``internvl-script``: earlier rounds as chat turns, as that script builds them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mtvbench.config import ContextMode
from mtvbench.data.schema import Dialogue, Round
from mtvbench.media.frames import VideoFrames, clip_indices
from mtvbench.prompts import InferenceStyle, internvl_script_history, render_inference_prompt
from mtvbench.records import GenerationRequest
from mtvbench.util.timecodes import NamedRanges, named_ranges


def rounds_to_call(dialogue: Dialogue, context: ContextMode) -> list[Round]:
    """The rounds the model is asked, in order."""
    needed = {r.answer_index for r in dialogue.scored_turns} - {None}
    if not needed:
        return []
    if context == "self":
        last = max(i for i, r in enumerate(dialogue.rounds) if r.index in needed)
        return dialogue.rounds[: last + 1]
    return [r for r in dialogue.rounds if r.index in needed]


def history_for(dialogue: Dialogue, rnd: Round, context: ContextMode,
                own_answers: Mapping[int, str] | None = None) -> list[tuple[str, str]]:
    """``(user, assistant)`` of every round before ``rnd`` in the dialogue's order, for ``context``."""
    earlier = dialogue.earlier(rnd)
    if context == "none":
        return []
    if context == "golden":
        return [(r.user, r.assistant) for r in earlier]
    answers = own_answers or {}
    missing = [r.index for r in earlier if r.index not in answers]
    if missing:
        raise KeyError(f"{dialogue.id}: self context needs the model's answers to rounds {missing} first")
    return [(r.user, answers[r.index]) for r in earlier]


def sent_text(dialogue: Dialogue, rnd: Round, context: ContextMode,
              own_answers: Mapping[int, str] | None = None) -> str:
    """The dialogue text a call of ``rnd`` sends, for the time ranges it names (``--sampling clip``): the history of
    ``context`` (user and assistant turns) and the question. In self context before the model's earlier answers
    are known (a video's frames are decoded ahead), only the user turns of the history."""
    if context == "self" and own_answers is None:
        parts = [r.user for r in dialogue.earlier(rnd)]
    else:
        parts = [t for pair in history_for(dialogue, rnd, context, own_answers) for t in pair]
    return "\n".join([*parts, rnd.user])


def turn_ranges(dialogue: Dialogue, rnd: Round, context: ContextMode, duration_s: float,
                own_answers: Mapping[int, str] | None = None) -> NamedRanges:
    """The parts of the video the text of ``rnd``'s call names so far."""
    return named_ranges(sent_text(dialogue, rnd, context, own_answers), duration_s)


def turn_frame_indices(dialogue: Dialogue, rnd: Round, context: ContextMode, total: int, duration_s: float,
                       n_frames: int, share: float, own_answers: Mapping[int, str] | None = None) -> list[int]:
    """The frames ``rnd``'s call is sent under ``--sampling clip`` (:func:`~mtvbench.media.frames.clip_indices`
    over the ranges named so far; uniform when none is named)."""
    ranges = turn_ranges(dialogue, rnd, context, duration_s, own_answers).ranges
    return clip_indices(total, duration_s, n_frames, [(r.start, r.end) for r in ranges], share)


@dataclass(frozen=True)
class ClipUnion:
    """The frames every call of one video needs under ``--sampling clip``, for one decode: a rule ``(total frames,
    duration) -> sorted indices`` over :func:`turn_frame_indices` of each turn. A plain record (dialogues, rounds,
    numbers), so a Ray task can take it to the node that decodes the video."""

    #: each call: its dialogue, its round, and in self context the model's earlier answers when all are known
    turns: tuple[tuple[Dialogue, Round, Mapping[int, str] | None], ...]
    context: ContextMode
    n_frames: int
    share: float

    def __call__(self, total: int, duration_s: float) -> list[int]:
        out: set[int] = set()
        for d, r, own in self.turns:
            out.update(turn_frame_indices(d, r, self.context, total, duration_s, self.n_frames, self.share, own))
        return sorted(out)


def build_request(dialogue: Dialogue, rnd: Round, context: ContextMode, frames: VideoFrames | None,
                  own_answers: Mapping[int, str] | None = None, style: InferenceStyle = "paper",
                  n_frames: int = 128, frame_timestamps: bool = False) -> GenerationRequest:
    """The call of round ``rnd``. ``n_frames``: the frame count the ``internvl-script`` history names;
    ``frame_timestamps``: each frame goes after its time in the video (``--frame-timestamps on``)."""
    history = history_for(dialogue, rnd, context, own_answers)
    prompt = render_inference_prompt(history, rnd.user, style)
    chat_history = None
    if style == "internvl-script":
        flags = [r.model_turn for r in dialogue.earlier(rnd)] if history else []
        chat_history = internvl_script_history([(u, a, f) for (u, a), f in zip(history, flags)], n_frames)
    return GenerationRequest(id=dialogue.turn_id(rnd.index), prompt=prompt, frames=frames,
                             golden_answer=rnd.assistant, chat_history=chat_history,
                             text_first=style == "qwen-script", frame_timestamps=frame_timestamps)


def request_text(request: GenerationRequest) -> str | list:
    """What a call's text is, for its fingerprint: the prompt, with the chat turns when there are any."""
    if request.chat_history is None:
        return request.prompt
    return [request.prompt, [list(t) for t in request.chat_history]]
