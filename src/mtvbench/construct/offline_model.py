"""The scripted offline model of ``mtvbench build -m offline``: construction without any API.

It answers every prompt of the build stages with a deterministic reply made only from what the
stage sends, so that ``build all -m offline --no-objects`` followed by ``review serve`` runs on a
laptop with no key, no server and no download:

- clip caption: the shot's time range and its frames' look (the dominant colour of the mean
  frame, bright/dim from its value, still/moving from the mean difference between frames);
- merge: "Yes" when the last shot of part A and the first shot of part B have the same look;
- object caption: the detector's label and the crop's dominant colour;
- suitability: 5 or 6 for every task (a digest of the material decides which), so every unit
  gets a dialogue for every task;
- dialogue: five rounds per task, built from the unit's time ranges and descriptions, that pass
  every mechanical rule of :func:`mtvbench.construct.stages.generate.check_dialogue`;
- checklist: ``n - 1`` "Yes" items naming words of the answer and one "No" item naming
  something absent from it (the rules of Figure 16; ``--judge offline`` gives the golden answer
  every point).

Any other prompt (e.g. ``mtvbench run -m offline``) gets a failed call saying the model only
builds. What it builds is **not a real benchmark**: the export marks ``metadata.json``
(:func:`scripted_note`), and ``mtvbench validate`` and ``mtvbench run`` say so.
"""

from __future__ import annotations

import colorsys
import hashlib
import json
import re
from collections.abc import Callable, Iterable

import numpy as np

from mtvbench.data.schema import TASKS, Task
from mtvbench.judge.offline import content_words
from mtvbench.media.frames import VideoFrames
from mtvbench.models.backend import BackendBase
from mtvbench.models.registry import parse_spec
from mtvbench.models.settings import BackendOptions
from mtvbench.prompts.generation import (
    CHECKLIST_TEMPLATE,
    CLIP_CAPTION_PROMPT,
    GENERATION_TEMPLATE,
    MERGE_PROMPT,
    OBJECT_CAPTION_PROMPT,
    SUITABILITY_PROMPT,
    TASK_ABILITY_LABEL,
)
from mtvbench.records import GenerationRequest, GenerationResult

PREFIX = "offline"
NOT_A_BENCHMARK = ("built with the scripted offline model (`mtvbench build -m offline`): its captions, dialogues "
                   "and checklists are templates that only exercise the tools; scores on it measure nothing")

_RANGE = re.compile(r"from (\d{2}:\d{2}:\d{2}) to (\d{2}:\d{2}:\d{2})")
_SCENE = re.compile(r"^Scene \d+ \((\d{2}:\d{2}:\d{2}) to (\d{2}:\d{2}:\d{2})\): (.*)$", re.MULTILINE)
_OBJECT = re.compile(r"^- (obj\d+) \(([^)]*)\)", re.MULTILINE)
_LOOK = re.compile(r"a (\w+), (\w+) shot with (\w+) tones")
_WORDS = re.compile(r"\d{2}:\d{2}:\d{2}|[A-Za-z][A-Za-z'-]+")
_NOT_WORDS = frozenset({"gt", "ground", "truth", "reference", "above", "given"})
_AGAIN = ("again", "once more", "too", "also", "more than once")
_ABSENT = ("purple giraffe", "hot-air balloon", "grand piano", "lighthouse keeper", "snow leopard")
_HUES = ((15, "red"), (40, "orange"), (70, "yellow"), (160, "green"), (200, "cyan"), (260, "blue"),
         (300, "purple"), (340, "magenta"), (360, "red"))


def scripted_note(models: Iterable[str | None]) -> str | None:
    """:data:`NOT_A_BENCHMARK` when any of the model specs that built a dataset is this scripted model."""
    return NOT_A_BENCHMARK if any(m and parse_spec(m)[0] == PREFIX for m in models) else None


def _head(template: str) -> str:
    return template.split("{")[0]


# ------------------------------------------------------------------ what the frames look like


def _colour(rgb: np.ndarray) -> tuple[str, str]:
    """(colour name, bright|dim|dark) of a mean RGB colour (0-255)."""
    h, s, v = colorsys.rgb_to_hsv(*(float(c) / 255 for c in rgb))
    light = "bright" if v > 0.6 else "dim" if v > 0.3 else "dark"
    if s < 0.2:
        return ("white" if v > 0.8 else "grey" if v > 0.3 else "black"), light
    return next(name for top, name in _HUES if h * 360 <= top), light


def _look(frames: VideoFrames | None) -> tuple[str, str, str]:
    """(bright|dim|dark, still|moving, colour) of sampled frames; neutral without frames."""
    if frames is None or not len(frames):
        return "dim", "still", "grey"
    small = [np.asarray(im.resize((32, 32)), dtype=np.float32) for im in frames.images()]
    colour, light = _colour(np.mean([a.reshape(-1, 3).mean(axis=0) for a in small], axis=0))
    change = np.mean([np.abs(a - b).mean() for a, b in zip(small, small[1:])]) if len(small) > 1 else 0.0
    return light, "moving" if change > 6 else "still", colour


def caption_reply(prompt: str, frames: VideoFrames | None) -> str:
    m = _RANGE.search(prompt)
    start, end = m.groups() if m else ("00:00:00", "00:00:00")
    light, motion, colour = _look(frames)
    return (f"From {start} to {end}: a {light}, {motion} shot with {colour} tones across the frame. "
            f"The picture is {'in motion' if motion == 'moving' else 'steady'} over {len(frames or [])} frames.")


def merge_reply(prompt: str) -> str:
    part_a = prompt.split("\nPart B")[0]
    part_b = prompt.split("\nPart B")[-1]
    a, b = _LOOK.findall(part_a), _LOOK.findall(part_b)
    if a and b and a[-1] == b[0]:
        return "Yes. Both parts have the same light, motion and colour."
    return "No. The light, motion or colour changes between the parts."


def object_reply(prompt: str, frames: VideoFrames | None) -> str:
    m = re.search(r"detected as '([^']*)'", prompt)
    label = m.group(1) if m else "object"
    _, _, colour = _look(frames)
    return f"A {colour} {label}, seen clearly in the crop."


def suitability_reply(prompt: str) -> str:
    digest = hashlib.sha256(prompt.encode()).digest()
    return json.dumps({t.value: 5 + digest[i] % 2 for i, t in enumerate(TASKS)})


# ------------------------------------------------------------------ dialogues


class _Material:
    """What a generation prompt says about its unit."""

    def __init__(self, prompt: str):
        body = prompt.split("# Video material", 1)[-1].split("# Output format", 1)[0]
        ranges = _RANGE.findall(body.split("Descriptions of that material", 1)[0])
        self.ranges = ranges or [("00:00:00", "00:00:00")]
        self.where = " and ".join(f"from {s} to {e}" for s, e in self.ranges)
        self.scenes = [c.strip().rstrip(".") for _, _, c in _SCENE.findall(body)] or ["a short shot"]
        self.objects = [label for _, label in _OBJECT.findall(body)]
        self.absent = next((a for a in _ABSENT if a.split()[-1] not in prompt.lower()), "unicorn")

    @property
    def first(self) -> str:
        """The first sentence of the first description, without its time range."""
        return self.scenes[0].split(": ", 1)[-1].split(". ", 1)[0]

    @property
    def subject(self) -> str:
        return f"the {self.objects[0]}" if self.objects else "the shot"


def _rounds(task: Task, m: _Material) -> list[tuple[str, str, str, str]]:
    """(ability, topic, user, assistant) of five rounds that keep the rules of ``task``."""
    label = TASK_ABILITY_LABEL[task]
    start, end = m.ranges[0]
    opening = ("Entity Recognition", "video", f"What can be seen in the video clip {m.where}?",
               f"The clip shows {m.first}.")
    timing = ("Spatiotemporal Relations", "video", "When does that part begin and end?",
              f"It begins at {start} and ends at {end}.")
    middle = {
        Task.OBJECT_REFERENCE: (label, "video", "What is it like there?",
                                f"It ({m.subject}) looks like {m.first}."),
        Task.MEMORY_RECALL: (label, "video", "Remind me, how did you describe the clip at the start?",
                             f"In Round 1 I said the clip shows {m.first}."),
        Task.ANSWER_REFUSAL: (label, "video", f"What does the {m.absent} in the clip do?",
                              f"There is no {m.absent} in this clip, so I cannot say what it does."),
        Task.CONTENT_SUMMARY: ("Event Comprehension", "video", "Does the picture change a lot?",
                               f"The description of the clip is: {m.first}."),
    }
    if task == Task.TOPIC_SHIFTING:
        return [(label, *opening[1:]),
                (label, "non-video", "Unrelated question: how many days does a week have?", "A week has seven days."),
                (label, "video", "Back to the clip: when does it end?",
                 f"The clip ends at {end}; up to then it shows {m.first}."),
                (label, "non-video", "Another aside: what is water made of?",
                 "Water is made of hydrogen and oxygen."),
                (label, "video", "And when does the clip begin?",
                 f"The clip begins at {start} and opens on {m.first}.")]
    if task == Task.PROACTIVE_INTERACTION:
        return [(label, *opening[1:]),
                (label, "video", "Okay.", f"It runs from {start} to {end}. Which moment would you like to look at?"),
                (label, "video", "Not sure.", f"The look is {m.first}. What would you expect to happen next?"),
                (label, "video", "Hmm.", f"The clip has {len(m.scenes)} described part(s), the first being "
                                          f"{m.first}. Shall I compare them?"),
                (label, "video", "Fine.", "Then we can look at the clip again whenever you like.")]
    rounds = [opening, ("Event Comprehension", "video", "How long does it last?",
                        f"It lasts from {start} to {end}."), middle[task], timing]
    if task == Task.CONTENT_SUMMARY:
        return rounds + [(label, "video", "Please sum up what we talked about.",
                          f"We talked about the clip {m.where}: it shows {m.first}, from {start} to {end}.")]
    if task == Task.MEMORY_RECALL:  # a second recall, after more turns
        return rounds + [(label, "video", "What did you tell me about how long it lasts?",
                          f"In Round 2 I said it lasts from {start} to {end}.")]
    return rounds + [("Causal Inference", "video", "Why might the shot look like this?",
                      f"It was filmed that way: {m.first}.")]


def dialogue_reply(prompt: str) -> str:
    m = re.search(r"primary focus on # (.+?) #", prompt)
    task = next((t for t in TASKS if m and t.label == m.group(1)), Task.OBJECT_REFERENCE)
    lines: list[str] = []
    for k, (ability, topic, user, assistant) in enumerate(_rounds(task, _Material(prompt)), 1):
        lines += [f"Round {k}", f"Ability: {ability}"]
        if task == Task.TOPIC_SHIFTING:
            lines.append(f"Topic: {topic}")
        lines += [f"User: {user}", f"Assistant: {assistant}", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ checklists


def _answer_words(answer: str) -> list[str]:
    out: list[str] = []
    for w in _WORDS.findall(answer):
        if content_words(w) and w.lower() not in _NOT_WORDS and w.lower() not in (o.lower() for o in out):
            out.append(w)
    return out


def checklist_reply(prompt: str) -> str:
    answer = prompt.split("2. Ground Truth Answer: ", 1)[-1].split("\nTask Instructions", 1)[0]
    m = re.search(r"Generate exactly (\d+) questions", prompt)
    n = max(1, int(m.group(1))) if m else 5
    yes = n - 1 if n > 1 else n  # one reversed fact ("No") when there is room for a mix
    w = _answer_words(answer) or ["clip"]
    pairs = [(i, j) for i in range(len(w)) for j in range(i + 1, len(w))]
    questions = [f"Does the response mention '{w[i]}' and '{w[j]}'?" for i, j in pairs if j == i + 1][:yes]
    questions += [f"Does the response mention '{x}'?" for x in w][:yes - len(questions)]
    questions += [f"Does the response mention '{w[i]}' and '{w[j]}'?" for i, j in pairs if j > i + 1][
        :yes - len(questions)]
    # words the lexical judge ignores keep the questions apart when the answer is short
    questions += [f"Does the response mention '{w[0]}' {tail}?" for tail in _AGAIN][:yes - len(questions)]
    questions += [f"Does the response mention '{w[0]}' {k + 2} times?" for k in range(yes - len(questions))]
    obj: dict[str, str] = {}
    for i, q in enumerate(questions, 1):
        obj[f"Q{i}"], obj[f"A{i}"] = q, "Yes"
    if yes < n:
        absent = next((a for a in _ABSENT if a.split()[-1] not in answer.lower()), "unicorn")
        obj[f"Q{n}"], obj[f"A{n}"] = f"Does the response mention a {absent}?", "No"
    return json.dumps(obj)


# ------------------------------------------------------------------ the backend

_KINDS: list[tuple[str, Callable[[str, VideoFrames | None], str]]] = [
    (_head(CLIP_CAPTION_PROMPT), caption_reply),
    (_head(MERGE_PROMPT), lambda p, f: merge_reply(p)),
    (_head(OBJECT_CAPTION_PROMPT), object_reply),
    (_head(SUITABILITY_PROMPT), lambda p, f: suitability_reply(p)),
    (_head(GENERATION_TEMPLATE), lambda p, f: dialogue_reply(p)),
    (_head(CHECKLIST_TEMPLATE), lambda p, f: checklist_reply(p)),
]


class OfflineBuildModel(BackendBase):
    """Scripted replies to the build prompts (see the module docstring)."""

    name = PREFIX

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        for head, reply in _KINDS:
            if request.prompt.startswith(head):
                text = reply(request.prompt, request.frames)
                return GenerationResult(text=text, raw_text=text)
        return GenerationResult(outcome="error", error="the offline model only answers the prompts of "
                                "`mtvbench build` (for `run`, try the oracle or refuse baselines)")


def offline_model(name: str, options: BackendOptions) -> OfflineBuildModel:
    """The ``offline`` entry of the backend registry."""
    return OfflineBuildModel()
