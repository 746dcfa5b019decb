"""Stage 11 — checklists for the generated dialogues, with the shared generator (:mod:`mtvbench.checklists`).

Every round that will be a model turn in the released layout (the official rule,
:func:`mtvbench.data.schema.is_model_turn`) gets ``n`` yes/no items from the Figure 16
prompt, rule-checked and re-asked (bounded). Resumable per round; rounds whose checklist
still breaks the rules are listed as failures (the dialogue is still exported; that
round is then unscored, which ``mtvbench validate`` reports).
"""

from __future__ import annotations

import asyncio

from mtvbench.checklists.generator import checklist_outcome
from mtvbench.construct.records import ChecklistResult, Failure, GenerateResult
from mtvbench.data.schema import is_model_turn
from mtvbench.models.base import ModelBackend


async def make_checklists(video: str, generated: GenerateResult, backend: ModelBackend,
                          previous: ChecklistResult | None = None, n: int = 5, max_attempts: int = 3,
                          concurrency: int = 4, exact_split: bool = True) -> ChecklistResult:
    old = previous.checklists if previous else {}
    out = ChecklistResult(video=video, checklists={k: dict(v) for k, v in old.items()})
    sem = asyncio.Semaphore(max(1, concurrency))
    incomplete = False

    async def one(key: str, k: int, user: str, assistant: str) -> None:
        nonlocal incomplete
        async with sem:
            res = await checklist_outcome(backend, user, assistant, n, max_attempts=max_attempts,
                                          exact_split=exact_split, request_id=f"checklist/{video}/{key}/{k}")
        if res.ok:
            out.checklists.setdefault(key, {})[k] = res.items
        else:
            if res.error:
                incomplete = True
            out.failures.append(Failure(item=f"{key} round {k}", problems=res.problems))

    jobs = []
    for key, d in generated.dialogues.items():
        done = out.checklists.get(key, {})
        for r in d.rounds:
            if is_model_turn(d.task, r.ability) and r.index not in done:
                jobs.append(one(key, r.index, r.user, r.assistant))
    await asyncio.gather(*jobs)
    out.complete = not incomplete
    return out
