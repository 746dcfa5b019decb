"""Scripted replies for the loopback server: a well-behaved "generator" for every build prompt.

Every reply is a pure function of the prompt, so runs are deterministic. ``Scripted``
can also hand out bad replies first (malformed dialogues, broken checklists) to test
re-asking.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

from mtvbench.data.schema import TASKS, Task

TASK_BY_LABEL = {t.label: t for t in TASKS}


def good_dialogue(task: Task, rng: str = "from 00:00:00 to 00:00:05") -> str:
    """A dialogue that satisfies every mechanical rule for ``task`` (5 rounds)."""
    label = {Task.CONTENT_SUMMARY: "Summary"}.get(task, task.label)
    rounds: list[tuple[str, str, str, str]] = []  # ability, topic, user, assistant
    q1 = f"What happens in the video clip {rng}?"
    a1 = "A red square slides to the right across a checkered background. What do you make of its path?"
    rounds.append(("Entity Recognition", "video", q1, a1))
    if task == Task.TOPIC_SHIFTING:
        rounds += [
            (label, "non-video", "By the way, what is the capital of France?", "The capital of France is Paris."),
            (label, "video", "Back to the clip: what colour is the background?", "The background is a checkerboard."),
            (label, "non-video", "Unrelated: how many legs does a spider have?", "A spider has eight legs."),
            (label, "video", "And in the clip, does the square stop?", "No, the square keeps moving to the right."),
        ]
    elif task == Task.PROACTIVE_INTERACTION:
        rounds += [
            (label, "video", "Okay.", "Notice how the square never leaves its row. Why might it keep that height?"),
            (label, "video", "Whatever.", "The background hue drifts slowly. What mood does that create for you?"),
            (label, "video", "Fine.", "The square is the only saturated colour. What draws your eye first?"),
            (label, "video", "Sure.", "It starts near the left edge and ends near the right edge."),
        ]
    else:
        mid = {
            Task.OBJECT_REFERENCE: ("What colour is it?", "It (the square) is red."),
            Task.MEMORY_RECALL: ("Earlier you said a red square slides to the right. In which round was that, "
                                 "and where does it end?", "That was in Round 1. It ends near the right edge."),
            Task.ANSWER_REFUSAL: ("What does the dog in the clip do?", "There is no dog in this video clip."),
            Task.CONTENT_SUMMARY: ("How big is the square?", "The square is about a fifth of the frame height."),
        }[task]
        rounds += [
            ("Event Comprehension", "video", "Where does the square start?", "It starts near the left edge."),
            (label if task != Task.CONTENT_SUMMARY else "Entity Recognition", "video", *mid),
            ("Spatiotemporal Relations", "video", "Is it above or below the centre?",
             "It is slightly above the centre."),
        ]
        if task == Task.CONTENT_SUMMARY:
            rounds.append((label, "video", "Summarise our conversation.",
                           "We discussed a red square sliding right from the left edge, above the centre."))
        else:
            rounds.append(("Causal Inference", "video", "Why might it move?",
                           "It is animated to move at a constant speed."))
    lines = []
    for k, (ability, topic, user, assistant) in enumerate(rounds, 1):
        lines.append(f"**Round {k}**")
        lines.append(f"Ability: {ability}")
        if task == Task.TOPIC_SHIFTING:
            lines.append(f"Topic: {topic}")
        lines.append(f"User: {user}")
        lines.append(f"Assistant: {assistant}")
        lines.append("")
    return "\n".join(lines)


def good_checklist(n: int = 5, tag: str = "") -> str:
    obj = {}
    for i in range(1, n + 1):
        obj[f"Q{i}"] = f"Does the answer state fact number {i} about the red square{tag}?"
        obj[f"A{i}"] = "No" if i == n else "Yes"
    return "```json\n" + json.dumps(obj) + "\n```"


_VARIANT = re.compile(r"\[(v\w+)\]")


_TIME_RANGE = re.compile(r"from (\d\d:\d\d:\d\d) to (\d\d:\d\d:\d\d)")


@dataclass
class Scripted:
    """``model_reply`` for :class:`ServerState`: good replies, after ``bad_first`` bad ones per prompt kind."""

    score: int = 5
    same_scene: bool = False
    bad_dialogues: int = 0  # malformed dialogue replies before good ones (per dialogue prompt)
    bad_checklists: int = 0
    #: marks every generated answer "[<variant>] ..." (and checklists of marked answers " [<variant>]"), so that a
    #: test can tell which generation a dialogue or a checklist comes from
    variant: str = ""
    seen: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, prompt: str, n_images: int) -> str:
        kind = self.kind(prompt)
        base = prompt.split("\n\n# Your previous answer was rejected")[0].split(
            "\n\nYour previous checklist was rejected")[0]
        with self.lock:
            self.kinds[kind] += 1
            self.seen[(kind, base)] += 1
            nth = self.seen[(kind, base)]
        if kind == "caption":
            m = _TIME_RANGE.search(prompt)
            span = f"{m.group(1)}-{m.group(2)}" if m else "?"
            return f"Shot {span}: a textured checkerboard wall; a coloured shape moves right. [{n_images} frames]"
        if kind == "merge":
            return "Yes, same place." if self.same_scene else "No. The setting changes."
        if kind == "object":
            return "A small brightly coloured geometric shape."
        if kind == "score":
            return "Scores:\n```json\n" + json.dumps({t.value: self.score for t in TASKS}) + "\n```"
        if kind == "generate":
            task = TASK_BY_LABEL[re.search(r"primary focus on # (.+?) #", prompt).group(1)]
            if nth <= self.bad_dialogues:
                return "Round 1\nUser: What is this?\nAssistant: A square.\nRound 2\nUser: And?\nAssistant: Red."
            m = _TIME_RANGE.search(prompt.split("# Video material")[1])
            text = good_dialogue(task, m.group(0) if m else "from 00:00:00 to 00:00:05")
            return text.replace("Assistant: ", f"Assistant: [{self.variant}] ") if self.variant else text
        if kind == "checklist":
            if nth <= self.bad_checklists:
                return "Q1: Is the ground truth correct?\nA1: Yes"
            tag = _VARIANT.search(prompt.split("Ground Truth Answer:")[-1])
            return good_checklist(int(re.search(r"Generate exactly (\d+) questions", prompt).group(1)),
                                  f" [{tag.group(1)}]" if tag else "")
        return "I do not know this prompt."

    @staticmethod
    def kind(prompt: str) -> str:
        if prompt.startswith("The frames are from one shot"):
            return "caption"
        if prompt.startswith("Two adjacent parts"):
            return "merge"
        if prompt.startswith("The image is a crop"):
            return "object"
        if prompt.startswith("You will design multi-turn dialogues"):
            return "score"
        if prompt.startswith("You are a Video QA Orchestrator"):
            return "generate"
        if prompt.startswith("You are an expert QA evaluator"):
            return "checklist"
        return "other"
