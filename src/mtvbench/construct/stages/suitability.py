"""Stage 9 — task suitability: the MLLM rates each unit for each of the six tasks on 1-6.

The stage is ``suitability`` (``mtvbench build suitability``, the ``suitability`` section of the build config
and model role, its artifact ``suitability.json`` and its journal rows). Its values are *ratings*
(stored as ``scores`` and ``min_score``, and spelled "score" in the prompt and its re-asks, which the call
journal's keys depend on); "score" otherwise names the benchmark's scores (:mod:`mtvbench.scoring`).

Paper §3.2: "we prompt MLLMs to evaluate the scene's capabilities, scoring them on a scale
from 1 to 6. Only those tasks that receive a score of 5 or 6 are selected". One call per
unit, with frames sampled from the unit's ranges only and the unit's captions. The reply
is read as a JSON object (any of the task's key, label, abbreviation or file stem as key)
or as ``<task>: <score>`` lines; a reply missing a task or giving a score outside 1-6 is
re-asked with the problems (bounded), then recorded as a failure (the unit gets no dialogue).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from pydantic import BaseModel, Field

from mtvbench.construct.artifacts import Artifact, Failure, Shortfall, VideoRecord, after_asks, given_up
from mtvbench.construct.calls import StageModel, failure, gather_all, ranges_frames
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.crossscene import CrossSceneResult, Unit
from mtvbench.data.schema import TASKS, Task
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import FrameSettings
from mtvbench.models.ask import ReaskPolicy, append_problems, ask
from mtvbench.prompts.generation import SUITABILITY_PROMPT, TASK_DEFINITIONS
from mtvbench.records import GenerationRequest, Rejected
from mtvbench.util.jsonio import extract_json_object
from mtvbench.util.strict import STRICT
from mtvbench.util.timecodes import hms

SUITABILITY_REASK = append_problems("\n\nYour previous reply could not be used: ", ". Reply with the JSON object only.")


class SuitabilitySettings(BaseModel):
    """The ``suitability`` section of the build config."""

    model_config = STRICT

    frames: int = Field(16, description="frames sampled from each unit for its suitability ratings")
    #: tasks rated at least this (of 1-6) get a dialogue (the paper's: 5)
    min_score: int = 5


class UnitRatings(BaseModel):
    """A unit's rating from 1 to 6 for each task (by task key) and the tasks it was selected for (those rated at
    least the stage's ``min_score``)."""

    unit: str
    scores: dict[str, int]
    selected: list[Task]


class SuitabilityResult(Artifact):
    """The suitability stage's artifact: the rating a task needs to be selected, every unit's ratings, and the units
    whose ratings were given up."""

    min_score: int = 5
    units: dict[str, UnitRatings] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """No unit selected for any task (a failure when some ratings were given up), or some ratings given up."""
        bad = given_up(self.failures)
        total = len(self.units) + len(self.failures)
        broken = f"{len(bad)} of {total} suitability ratings broke the rules{after_asks(bad)}"
        if any(u.selected for u in self.units.values()):
            return Shortfall(why=broken) if bad else None
        if bad:
            return Shortfall(why=f"no unit rated {self.min_score}-6: {broken}", failed=True)
        if self.units:
            return Shortfall(why=f"no unit rated {self.min_score}-6 (all {len(self.units)} rated below "
                                 f"{self.min_score})")
        return None


def _norm(s: str) -> str:
    return re.sub(r"[^a-z]", "", s.lower())


_ALIASES: dict[str, Task] = {}
for _t in TASKS:
    for _name in (_t.value, _t.label, _t.abbr, _t.official_stem):
        _ALIASES[_norm(_name)] = _t


def where(unit: Unit) -> str:
    """Where ``unit`` is in the video, as the prompt says it (``the video clip from 00:00:05 to 00:00:12``)."""
    spans = " and ".join(f"from {hms(s)} to {hms(e)}" for s, e in unit.ranges)
    return f"the video clip{'s' if len(unit.ranges) > 1 else ''} {spans}"


def material(unit: Unit) -> str:
    """``unit``'s scene captions with their time ranges, one line per scene, for the prompt."""
    pairs = zip(unit.ranges, unit.captions)
    return "\n".join(f"Scene {k} ({hms(s)} to {hms(e)}): {c}" for k, ((s, e), c) in enumerate(pairs, 1))


def suitability_prompt(unit: Unit) -> str:
    """The prompt that asks for ``unit``'s ratings: where it is, its captions, and every task with its definition."""
    tasks = "\n".join(f"- {t.value}: {t.label} — {TASK_DEFINITIONS[t]}" for t in TASKS)
    shape = "{" + ", ".join(f'"{t.value}": 1-6' for t in TASKS) + "}"
    return SUITABILITY_PROMPT.format(where=where(unit), material=material(unit), tasks=tasks, shape=shape)


def _as_rating(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and float(v).is_integer():
        return int(v)
    if isinstance(v, str) and (m := re.match(r"\s*(\d+)", v)):
        return int(m.group(1))
    if isinstance(v, dict):
        return _as_rating(v.get("score"))
    return None


def parse_ratings(text: str) -> tuple[dict[Task, int], list[str]]:
    """(scores found, problems). Problems name missing tasks and out-of-range scores."""
    found: dict[Task, int] = {}
    obj = extract_json_object(text)
    if obj is not None:
        for k, v in obj.items():
            t = _ALIASES.get(_norm(str(k)))
            sc = _as_rating(v)
            if t is not None and sc is not None:
                found[t] = sc
    if len(found) < len(TASKS):
        for line in text.splitlines():
            m = re.match(r"^\W*([A-Za-z _\-]+?)\W*[:=\-]\s*\**\s*(\d+)", line)
            if m and (t := _ALIASES.get(_norm(m.group(1)))) is not None:
                found.setdefault(t, int(m.group(2)))
    problems = [f"missing a score for {t.value}" for t in TASKS if t not in found]
    problems += [f"score for {t.value} must be 1-6, got {s}" for t, s in found.items() if not 1 <= s <= 6]
    return found, problems


def ratings_check(text: str) -> dict[Task, int] | Rejected:
    """The check the ask loop applies to a suitability reply: the rating per task, or a rejection listing the tasks
    missing or rated out of range (the model is asked again)."""
    scores, problems = parse_ratings(text)
    return Rejected(problems) if problems else scores


async def rate_units(video: str, path: Path, units: list[Unit], model: StageModel, min_score: int = 5,
                     num_frames: int = 16, max_attempts: int = 3,
                     frame_settings: FrameSettings | None = None) -> SuitabilityResult:
    """Rate every unit for each of the six tasks with ``model``, from ``num_frames`` frames of the unit's time
    ranges, and select the tasks rated at least ``min_score``."""
    settings = frame_settings or FrameSettings(num_frames=num_frames, max_side=448)
    video_fp = await asyncio.to_thread(fingerprint, path)
    policy = ReaskPolicy(max_attempts, SUITABILITY_REASK)

    async def rate_unit(unit: Unit):  # noqa: ANN202 - AskOutcome[dict[Task, int]]
        item = f"unit/{unit.id}"
        frames = ranges_frames(video_fp, path, unit.ranges, num_frames, settings)
        return await ask(model.caller(video, "suitability", item, frames),
                         GenerationRequest(id=item, prompt=suitability_prompt(unit)), ratings_check, policy)

    outcomes = await gather_all(rate_unit(u) for u in units)
    out = SuitabilityResult(video=video, min_score=min_score)
    for unit, res in zip(units, outcomes):
        if res.ok:
            scores = res.value
            out.units[unit.id] = UnitRatings(unit=unit.id, scores={t.value: s for t, s in scores.items()},
                                            selected=[t for t in TASKS if scores[t] >= min_score])
        else:
            out.failures.append(failure(f"unit/{unit.id}", res))
    out.complete = not any(f.kind == "error" for f in out.failures)
    return out


#: a unit with placeholders, rendered into the prompts to digest the templates
PROBE_UNIT = Unit(id="S0", kind="cross", segments=[0, 1], ranges=[(0.0, 1.0), (2.0, 3.0)], captions=["{a}", "{b}"],
                  objects=["obj001"], object_lines=["- obj001 (x): {c}"])


async def _make(ctx: StageContext, v: VideoRecord) -> SuitabilityResult:
    s = ctx.config.section(SuitabilitySettings)
    return await rate_units(v.name, Path(v.path), ctx.artifact(v, "crossscene", CrossSceneResult).units,
                            ctx.model("suitability"), s.min_score, s.frames, ctx.config.max_attempts,
                            ctx.frames(s.frames))


def _settings(ctx: StageContext) -> dict[str, object]:
    s = ctx.config.section(SuitabilitySettings)
    return {"frames": ctx.frames(s.frames).key(), "min_score": s.min_score}


STAGE = Stage(make=_make, artifact=SuitabilityResult,
              help="9. Task suitability: rate every unit for the six tasks (1-6); keep those rated 5-6.",
              upstream=("crossscene",), role="suitability", settings=_settings, settings_model=SuitabilitySettings,
              prompts=lambda: text_digest(suitability_prompt(PROBE_UNIT)))
