"""Load one run directory into memory: settings, dialogues, stored calls and scores.

Scores are recomputed with :func:`mtvbench.scoring.aggregate.compute_scores` from what the
store holds (the same function ``mtvbench score`` uses), so an analysis never depends on a
stale ``scores.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from mtvbench.config import RunConfig
from mtvbench.data.schema import Dialogue
from mtvbench.records import JudgeVerdict
from mtvbench.run.rescore import load_scored
from mtvbench.run.rundir import SnapshotMemo, display_name
from mtvbench.scoring.aggregate import DialogueScore, Scores


@dataclass
class RunData:
    run_dir: Path
    config: RunConfig
    dialogues: list[Dialogue]
    videos: dict[str, Path]
    #: final responses (outcome ok/blocked/empty), keyed by turn id
    responses: dict[str, dict[str, Any]]
    #: every stored judge run, whatever its status (for display)
    all_verdicts: dict[str, dict[int, JudgeVerdict]]
    #: judge runs that count for scoring (ok/unparsed)
    verdicts: dict[str, dict[int, JudgeVerdict]]
    scores: Scores
    dscores: list[DialogueScore]
    label: str = field(default="")

    @property
    def name(self) -> str:
        return self.label or display_name(self.config)

    @cached_property
    def dialogue_score(self) -> dict[str, DialogueScore]:
        return {ds.dialogue_id: ds for ds in self.dscores}

    @cached_property
    def dialogue_by_id(self) -> dict[str, Dialogue]:
        return {d.id: d for d in self.dialogues}


def load_run(run_dir: Path, label: str | None = None, bootstrap: int | None = None,
             memo: SnapshotMemo | None = None) -> RunData:
    """Read a run directory (no API calls). ``bootstrap`` overrides the config's CI draws; ``memo``: the
    dialogues of runs read before (several runs of one benchmark validate them once)."""
    r = load_scored(run_dir, bootstrap, details=False, memo=memo)  # an analysis reads no prompt, raw reply, parts
    return RunData(run_dir=r.run_dir, config=r.config, dialogues=r.snapshot.dialogues,
                   videos={k: Path(v) for k, v in r.snapshot.videos.items()}, responses=r.responses,
                   all_verdicts=r.all_verdicts, verdicts=r.verdicts, scores=r.scores, dscores=r.dscores,
                   label=label or "")


def unique_names(runs: list[RunData]) -> list[str]:
    """Display names, made unique with the folder name when two runs share one."""
    names = [r.name for r in runs]
    out = []
    for r, n in zip(runs, names):
        out.append(f"{n} ({r.run_dir.name})" if names.count(n) > 1 else n)
    return out
