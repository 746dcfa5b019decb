"""Stage 10 — multi-turn dialogue generation (paper Figure 8 + Figures 9-14), checked and re-asked.

For every unit and every task it was selected for (stage 9), the generator gets Figure 8
filled with the task's instructions and capability text, plus the unit's material (its
captions and time ranges; for cross-scene units the shared objects, with the paper's
object-centred focus) and an explicit output format (``Round k`` / ``Ability:`` /
``User:`` / ``Assistant:``; ``Topic:`` for Topic Shifting). Frames come from the unit's
time ranges only.

Parsing (:func:`parse_dialogue`) tolerates Markdown (``**Round 2**``, ``### Round 2:``,
``**User:**``), a label in the round header (``Round 3 (Memory Recall)``), ``Bot:``/``Model:``
for the assistant, text over several lines, and missing round markers (then each
User/Assistant pair is a round).

Mechanical rules (:func:`check_dialogue`):

- all tasks: 5-8 rounds numbered 1..n; every round has a question and an answer; the
  first question names the clip range (``HH:MM:SS``) unless the unit is the whole video;
- labelled tasks (OR, MR, CS, AR): every round has an ``Ability``;
- Object Reference: at least one OR round, none in round 1; at least one OR answer names
  the referent in parentheses (Figure 14);
- Memory Recall: at least one MR round, none in round 1; MR questions do not name a round
  (``Round 2``, ``the second round``, ...); at least one MR answer names the round;
- Content Summary: exactly one Summary round, and it is the last;
- Answer Refusal: at least one AR round, none in round 1; every AR answer declines
  (contains a negation such as "not", "no", "doesn't");
- Topic Shifting: every round has ``Topic: video|non-video``; round 1 is about the video;
  at least two shifts from the video to a non-video topic; at least two video rounds;
- Proactive Interaction: at least two answers ask the user a question; no vague
  rhetorical tags ("don't you think?", "isn't it?", "right?").

A broken reply is re-asked with the list of broken rules, at most ``max_attempts`` calls;
what still fails is recorded in the artifact's ``failures`` and given up (asked again only
with ``--retry-failed``). A failed call makes the stage incomplete; the next run asks it
again (every reply is in the call journal, so nothing paid for is asked twice).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Failure, Shortfall, VideoRecord, after_asks, given_up
from mtvbench.construct.calls import LazyFrames, StageModel, failure, gather_all, ranges_frames
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.crossscene import CrossSceneResult, Unit
from mtvbench.construct.stages.split import SplitResult
from mtvbench.construct.stages.suitability import PROBE_UNIT, SuitabilityResult, material, where
from mtvbench.data.schema import ALL_ROUNDS_TASKS, TASKS, Task
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import FrameSettings
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.prompts.generation import (
    BASIC_ABILITIES,
    CROSS_SCENE_OBJECTS,
    GENERATION_CONTEXT,
    REASK_SUFFIX,
    TASK_ABILITY_LABEL,
    TOPIC_FORMAT,
    render_generation_prompt,
)
from mtvbench.records import GenerationRequest, Rejected
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import hms

MIN_ROUNDS, MAX_ROUNDS = 5, 8


class GenerateSettings(BaseModel):
    """The ``generate`` section of the build config."""

    model_config = STRICT

    frames: int = Field(32, description="frames sampled from each unit for its dialogues")


class GenRound(BaseModel):
    """One round of a generated dialogue: the user's question, the assistant's answer, and the ability label (and,
    for Topic Shifting, the topic) the generator gave it."""

    index: int
    user: str
    assistant: str
    ability: str | None = None
    topic: str | None = None  # "video" / "non-video" (Topic Shifting)


class GeneratedDialogue(BaseModel):
    """A dialogue generated for one unit and task, and how many calls it took."""

    unit: str
    task: Task
    rounds: list[GenRound]
    attempts: int


class GenerateResult(Artifact):
    """The generate stage's artifact: the dialogues by ``<unit>/<task>``, and those given up."""

    dialogues: dict[str, GeneratedDialogue] = Field(default_factory=dict)  # "<unit>/<task>" -> dialogue
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """Dialogues given up; a failure when none is left."""
        bad = given_up(self.failures)
        if not bad:
            return None
        total = len(self.dialogues) + len(self.failures)
        return Shortfall(why=f"{len(bad)} of {total} dialogues failed the rule checks{after_asks(bad)}",
                         failed=not self.dialogues)

_ROUND = re.compile(r"^[\s>#*_\-]*round\s*(\d+)\b(.*)$", re.IGNORECASE)
_FIELD = re.compile(
    r"^[\s>#*_\-]*(user|human|assistant|bot|model|ai|ability|capability|topic)\b[\s*_]*(?:\([^)]*\))?[\s*_]*[:：]"
    r"[\s*_]*(.*)$",
    re.IGNORECASE,
)
_SPEAKER = {"user": "user", "human": "user", "assistant": "assistant", "bot": "assistant", "model": "assistant",
            "ai": "assistant", "ability": "ability", "capability": "ability", "topic": "topic"}
_TIME = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")
_ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|1st|2nd|3rd|4th|5th|6th|7th|8th"
_NUMBERS = r"\d+|one|two|three|four|five|six|seven|eight"
_NAMES_ROUND = re.compile(rf"\bround\s*(?:#\s*)?(?:{_NUMBERS})\b|\b(?:{_ORDINALS})\s+(?:round|turn)\b",
                          re.IGNORECASE)
_NEGATION = re.compile(r"\b(no|not|none|never|nothing|neither|nor|cannot|unable)\b|n't\b", re.IGNORECASE)
_RHETORICAL = re.compile(r"\b(?:don't you think|isn't it|right|wouldn't you agree|agree)\s*\?", re.IGNORECASE)
_PAREN = re.compile(r"\([^()]{2,}\)")


def _norm(s: str) -> str:
    return re.sub(r"[^a-z]", "", s.lower())


_LABELS: dict[str, str] = {_norm(v): v for v in TASK_ABILITY_LABEL.values()}
_LABELS[_norm("Content Summary")] = "Summary"
_BASIC: dict[str, str] = {_norm(b): b for b in BASIC_ABILITIES}


def normalise_ability(raw: str | None) -> str | None:
    """A known task label when the text names one, else a basic-ability label, else the text."""
    if raw is None:
        return None
    text = raw.strip().strip("*[]()\"'").strip()
    if not text:
        return None
    n = _norm(text)
    for key, label in _LABELS.items():
        if key in n:
            return label
    for key, label in _BASIC.items():
        if key in n:
            return label
    return text


def _clean(text: str) -> str:
    t = text.strip()
    t = re.sub(r"^\*+\s*|\s*\*+$", "", t)
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1]
    return t.strip()


def parse_dialogue(text: str) -> list[GenRound]:
    """Rounds in order of appearance (see module doc); empty when nothing is found."""
    blocks: list[tuple[int | None, str, list[str]]] = []  # (round number, header rest, lines)
    for line in text.splitlines():
        m = _ROUND.match(line)
        if m and not _FIELD.match(line) and len(m.group(2).strip()) <= 60:
            blocks.append((int(m.group(1)), m.group(2), []))
            continue
        if not blocks:
            blocks.append((None, "", []))
        blocks[-1][2].append(line)
    rounds: list[GenRound] = []
    for number, header, lines in blocks:
        fields: dict[str, list[str]] = {}
        current: str | None = None
        pairs: list[dict[str, str]] = []
        for line in lines:
            m = _FIELD.match(line)
            if m:
                current = _SPEAKER[m.group(1).lower()]
                if number is None and current == "user" and "user" in fields:
                    pairs.append({k: "\n".join(v) for k, v in fields.items()})
                    fields = {}
                fields[current] = [m.group(2)]
            elif current is not None:
                fields[current].append(line)
        pairs.append({k: "\n".join(v) for k, v in fields.items()})
        header_label = None
        if number is not None:
            hm = re.search(r"\(([^)]*)\)|ability\s*[:：]\s*(.*)$|[-–—:]\s*(.+)$", header, re.IGNORECASE)
            if hm:
                header_label = next((g for g in hm.groups() if g), None)
        for p in pairs:
            if "user" not in p and "assistant" not in p:
                continue
            ability = normalise_ability(p.get("ability") or header_label)
            topic = _clean(p["topic"]).lower() if p.get("topic") else None
            if topic is not None:
                topic = "non-video" if re.search(r"non|not|unrelated|other", topic) else "video"
            rounds.append(GenRound(index=number if number is not None else len(rounds) + 1,
                                   user=_clean(p.get("user", "")), assistant=_clean(p.get("assistant", "")),
                                   ability=ability, topic=topic))
    return rounds


def check_dialogue(task: Task, rounds: list[GenRound], *, require_range: bool = True,
                   min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS) -> list[str]:
    """Every mechanical rule the dialogue breaks (see module doc); empty when acceptable."""
    if not rounds:
        return ["no rounds could be read: use 'Round k', 'Ability:', 'User:' and 'Assistant:' lines"]
    p: list[str] = []
    n = len(rounds)
    if not min_rounds <= n <= max_rounds:
        p.append(f"the dialogue must have {min_rounds}-{max_rounds} rounds, got {n}")
    if [r.index for r in rounds] != list(range(1, n + 1)):
        p.append(f"rounds must be numbered Round 1..Round {n} in order, got {[r.index for r in rounds]}")
    for r in rounds:
        if not r.user:
            p.append(f"Round {r.index} has no User question")
        if not r.assistant:
            p.append(f"Round {r.index} has no Assistant answer")
    if require_range and rounds[0].user and not _TIME.search(rounds[0].user):
        p.append("the first question must name the clip range as 'from HH:MM:SS to HH:MM:SS'")
    label = TASK_ABILITY_LABEL[task]
    tagged = [r for r in rounds if r.ability == label]
    if task not in ALL_ROUNDS_TASKS:
        missing = [r.index for r in rounds if not r.ability]
        if missing:
            p.append(f"every round needs an 'Ability:' line; missing in rounds {missing}")
    if task in (Task.OBJECT_REFERENCE, Task.MEMORY_RECALL, Task.ANSWER_REFUSAL):
        if not tagged:
            p.append(f"no round is labelled 'Ability: {label}'; {task.label} must be tested at least once")
        if any(r.index == 1 for r in tagged):
            p.append(f"{task.label} must be tested after the first round, not in Round 1")
    if task == Task.OBJECT_REFERENCE and tagged and not any(_PAREN.search(r.assistant) for r in tagged):
        p.append("Object Reference answers must name the referent in parentheses, e.g. 'He (the man in red)'")
    if task == Task.MEMORY_RECALL:
        for r in tagged:
            if _NAMES_ROUND.search(r.user):
                p.append(f"Round {r.index}: a Memory Recall question must not name the round it refers to")
        if tagged and not any(_NAMES_ROUND.search(r.assistant) for r in tagged):
            p.append("a Memory Recall answer must identify the round the content came from (e.g. 'Round 2')")
    if task == Task.CONTENT_SUMMARY:
        if len(tagged) != 1:
            p.append(f"exactly one round must be labelled 'Ability: Summary', got {len(tagged)}")
        if rounds[-1].ability != label:
            p.append("the Summary round must be the last round")
    if task == Task.ANSWER_REFUSAL:
        for r in tagged:
            if not _NEGATION.search(r.assistant):
                p.append(f"Round {r.index}: an Answer Refusal answer must decline (say the content is not in "
                         "the video)")
    if task == Task.TOPIC_SHIFTING:
        topics = [r.topic for r in rounds]
        if any(t is None for t in topics):
            p.append("every round needs a 'Topic: video' or 'Topic: non-video' line")
        else:
            if topics[0] != "video":
                p.append("Round 1 must be about the video")
            shifts = sum(1 for a, b in zip(topics, topics[1:]) if a == "video" and b == "non-video")
            if shifts < 2:
                p.append(f"the topic must shift from the video to a non-video topic at least twice, got {shifts}")
            if topics.count("video") < 2:
                p.append("at least two rounds must be about the video")
    if task == Task.PROACTIVE_INTERACTION:
        asking = [r for r in rounds if "?" in r.assistant]
        if len(asking) < 2:
            p.append("at least two Assistant answers must ask the user a content-specific question")
        for r in rounds:
            if _RHETORICAL.search(r.assistant):
                p.append(f"Round {r.index}: no vague rhetorical questions like \"Don't you think?\"")
    return p


def generation_prompt(task: Task, unit: Unit, whole_video: bool) -> str:
    """The prompt that asks for a dialogue of ``task`` about ``unit`` (paper Figure 8 with the task's instructions):
    the unit's place, captions and objects; unless the frames show the whole video, the prompt asks for the clip's
    time range to be named."""
    objects = ""
    if unit.kind == "cross" and unit.object_lines:
        objects = CROSS_SCENE_OBJECTS.format(object_lines="\n".join(unit.object_lines))
    elif unit.object_lines:
        objects = "Objects seen in this material:\n" + "\n".join(unit.object_lines) + "\n"
    label = TASK_ABILITY_LABEL[task]
    range_hint = "" if whole_video else (
        ", e.g. 'in the video clip from " + hms(unit.ranges[0][0]) + " to " + hms(unit.ranges[0][1]) + "'")
    return render_generation_prompt(task) + GENERATION_CONTEXT.format(
        where=where(unit), material=material(unit), objects=objects, range_hint=range_hint,
        min_rounds=MIN_ROUNDS, max_rounds=MAX_ROUNDS, ability=label, task_name=task.label,
        basic=", ".join(BASIC_ABILITIES), extra_format=TOPIC_FORMAT if task == Task.TOPIC_SHIFTING else "")


def dialogue_key(unit: str, task: Task) -> str:
    """The key of ``unit``'s dialogue for ``task`` in the artifacts: ``<unit>/<task>``."""
    return f"{unit}/{task.value}"


def _reask(prompt: str, problems: list[str]) -> str:
    return prompt + REASK_SUFFIX.format(problems="\n".join(f"- {x}" for x in problems))


def dialogue_check(task: Task, whole_video: bool):  # noqa: ANN201 - Check[list[GenRound]]
    """Parse a reply and apply the mechanical rules of ``task``."""

    def check(text: str) -> list[GenRound] | Rejected:
        rounds = parse_dialogue(text)
        problems = check_dialogue(task, rounds, require_range=not whole_video)
        if problems:
            return Rejected(problems)
        if task in ALL_ROUNDS_TASKS:
            for r in rounds:
                r.ability = r.ability or TASK_ABILITY_LABEL[task]
        return rounds

    return check


async def generate_dialogues(video: str, path: Path, units: list[Unit], scores: SuitabilityResult, model: StageModel,
                             duration_s: float, num_frames: int = 32, max_attempts: int = 3,
                             frame_settings: FrameSettings | None = None) -> GenerateResult:
    """Generate a dialogue for every unit and every task the suitability stage selected it for, from ``num_frames``
    frames of the unit's time ranges; a reply that breaks a mechanical rule is asked again with the problems
    listed, up to ``max_attempts`` calls."""
    settings = frame_settings or FrameSettings(num_frames=num_frames, max_side=448)
    video_fp = await asyncio.to_thread(fingerprint, path)
    policy = ReaskPolicy(max_attempts, _reask)
    frames_of: dict[str, LazyFrames] = {}  # one decode per unit, shared by its tasks, only when something is asked

    async def generate_dialogue(unit: Unit, task: Task):  # noqa: ANN202 - AskOutcome[list[GenRound]]
        key = dialogue_key(unit.id, task)
        whole = len(unit.ranges) == 1 and unit.ranges[0][0] <= 0.5 and unit.ranges[0][1] >= duration_s - 0.5
        frames = frames_of.setdefault(unit.id, ranges_frames(video_fp, path, unit.ranges, num_frames, settings))
        request = GenerationRequest(id=key, prompt=generation_prompt(task, unit, whole))
        return await ask(model.caller(video, "generate", key, frames), request, dialogue_check(task, whole), policy)

    jobs = [(unit, task) for unit in units if (us := scores.units.get(unit.id)) is not None for task in us.selected]
    outcomes = await gather_all(generate_dialogue(u, t) for u, t in jobs)
    out = GenerateResult(video=video)
    for (unit, task), res in zip(jobs, outcomes):
        key = dialogue_key(unit.id, task)
        if res.ok:
            out.dialogues[key] = GeneratedDialogue(unit=unit.id, task=task, rounds=res.value, attempts=res.attempts)
        else:
            out.failures.append(failure(key, res))
    out.complete = not any(f.kind == "error" for f in out.failures)
    return out


async def _make(ctx: StageContext, v: VideoRecord) -> GenerateResult:
    n = ctx.config.section(GenerateSettings).frames
    split = ctx.artifact(v, "split", SplitResult)
    rated = ctx.artifact(v, "suitability", SuitabilityResult)
    return await generate_dialogues(v.name, Path(v.path), ctx.artifact(v, "crossscene", CrossSceneResult).units,
                                    rated, ctx.model("generate"), split.duration_s, n, ctx.config.max_attempts,
                                    ctx.frames(n))


STAGE = Stage(make=_make, artifact=GenerateResult,
              help="10. Generate 5-8 round dialogues (Figures 8-14), checked and re-asked.",
              upstream=("split", "crossscene", "suitability"), role="generate", settings_model=GenerateSettings,
              settings=lambda ctx: {"frames": ctx.frames(ctx.config.section(GenerateSettings).frames).key()},
              prompts=lambda: text_digest(REASK_SUFFIX, *(generation_prompt(t, PROBE_UNIT, w)
                                                          for t in TASKS for w in (False, True))))
