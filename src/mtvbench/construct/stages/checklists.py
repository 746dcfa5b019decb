"""Stage 11 — checklists for the generated dialogues, with the shared generator (:mod:`mtvbench.checklist_gen`).

Every round that will be a model turn in the released layout (the official rule,
:func:`mtvbench.data.schema.is_model_turn`) gets ``n`` yes/no items from the Figure 16
prompt, rule-checked and re-asked (bounded, :func:`mtvbench.checklist_gen.generator.checklist_check`).
Every reply is in the call journal, so a re-run asks only what is missing. Rounds whose
checklist still breaks the rules are listed as failures (given up; the dialogue is still
exported and that round is then unscored, which ``mtvbench validate`` reports); a failed
call makes the stage incomplete.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from mtvbench.checklist_gen.generator import CHECKLIST_REASK, checklist_check, checklist_request
from mtvbench.construct.artifacts import Artifact, Failure, Shortfall, VideoRecord, after_asks, given_up
from mtvbench.construct.calls import StageModel, failure, gather_all
from mtvbench.construct.stages import Stage, StageContext, text_digest
from mtvbench.construct.stages.generate import GenerateResult
from mtvbench.data.schema import ChecklistItem, is_model_turn
from mtvbench.models.ask import ReaskPolicy, ask
from mtvbench.prompts.generation import render_checklist_prompt
from mtvbench.util.strict import STRICT


class ChecklistSettings(BaseModel):
    """The ``checklists`` section of the build config."""

    model_config = STRICT

    #: yes/no items per scored round (Figure 16: five)
    items: int = 5
    #: exactly one "No" item and ``items - 1`` "Yes" items (Figure 16); false: at least one of each
    exact_split: bool = True


class ChecklistResult(Artifact):
    """The checklists stage's artifact: per dialogue (``<unit>/<task>``) and round index, the round's checklist
    items, and the rounds whose checklist was given up."""

    #: "<unit>/<task>" -> {round index -> items}
    checklists: dict[str, dict[int, list[ChecklistItem]]] = Field(default_factory=dict)
    failures: list[Failure] = Field(default_factory=list)

    def shortfall(self) -> Shortfall | None:
        """Scored rounds without a checklist (items ``<unit>/<task>/<round>``); a failure when a dialogue
        is left without any."""
        bad = given_up(self.failures)
        if not bad:
            return None
        total = sum(len(rounds) for rounds in self.checklists.values()) + len(self.failures)
        bare = {f.item.rsplit("/", 1)[0] for f in bad} - {k for k, rounds in self.checklists.items() if rounds}
        why = f"no checklist for {len(bad)} of {total} scored rounds{after_asks(bad)}"
        if bare:
            why += f" ({len(bare)} dialogue{'s' if len(bare) != 1 else ''} without any)"
        return Shortfall(why=why, failed=bool(bare))


async def make_checklists(video: str, generated: GenerateResult, model: StageModel, n: int = 5,
                          max_attempts: int = 3, exact_split: bool = True) -> ChecklistResult:
    """Write a checklist of ``n`` yes/no items for every round of ``generated`` that is a model turn under the
    official rule, one call per round; a reply that breaks the checklist rules is asked again, up to
    ``max_attempts`` calls."""
    policy = ReaskPolicy(max_attempts, CHECKLIST_REASK)
    check = checklist_check(n, exact_split)
    jobs = [(key, r) for key, d in sorted(generated.dialogues.items()) for r in d.rounds
            if is_model_turn(d.task, r.ability)]

    async def checklist_round(key: str, k: int, user: str, assistant: str):  # noqa: ANN202 - AskOutcome
        item = f"{key}/{k}"
        return await ask(model.caller(video, "checklists", item), checklist_request(user, assistant, n, item),
                         check, policy)

    outcomes = await gather_all(checklist_round(key, r.index, r.user, r.assistant) for key, r in jobs)
    out = ChecklistResult(video=video)
    for (key, r), res in zip(jobs, outcomes):
        if res.ok:
            out.checklists.setdefault(key, {})[r.index] = res.value
        else:
            out.failures.append(failure(f"{key}/{r.index}", res))
    out.complete = not any(f.kind == "error" for f in out.failures)
    return out


async def _make(ctx: StageContext, v: VideoRecord) -> ChecklistResult:
    s = ctx.config.section(ChecklistSettings)
    return await make_checklists(v.name, ctx.artifact(v, "generate", GenerateResult), ctx.model("checklist"),
                                 s.items, ctx.config.max_attempts, s.exact_split)


STAGE = Stage(make=_make, artifact=ChecklistResult,
              help="11. Generate checklists (Figure 16) for the evaluated rounds.", upstream=("generate",),
              role="checklist", settings_model=ChecklistSettings,
              settings=lambda ctx: ctx.config.section(ChecklistSettings).model_dump(mode="json"),
              prompts=lambda: text_digest(render_checklist_prompt("{q}", "{a}", 5)))
