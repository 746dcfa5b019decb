"""What the temporal grounding ablations change (``run --sampling clip``, ``--frame-timestamps on``), from stored
runs: each ablation run against the reference run of the paper's setting (the first run given without an
ablation), paired by dialogue.

- Overall and per task: each run's score and the paired bootstrap difference (ablation - reference) with its
  95 % CI (:func:`mtvbench.analysis.compare.paired_bootstrap`, the CI withheld where a task has too few
  dialogues);
- split by how much of the video the dialogue's named ranges cover (every question and golden answer of the
  dialogue, :func:`mtvbench.util.timecodes.named_ranges`, over the video's length) and by the video's length:
  per bin the dialogues both runs scored, their mean scores and the difference with a percentile bootstrap
  CI over those dialogues (seeded);
- the share of the ablation run's turns whose text named a range.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from mtvbench.analysis.compare import paired_bootstrap
from mtvbench.analysis.metadata import DialogueMeta
from mtvbench.data.schema import Dialogue
from mtvbench.render.tables import Col, TextTable, to_markdown
from mtvbench.run.plan import rounds_to_call, turn_ranges
from mtvbench.run.rundir import RunData
from mtvbench.util.timecodes import named_ranges

#: bins of the share of the video the named ranges cover (upper bounds, exclusive)
COVERAGE_BINS = ((0.0, "no range"), (0.10, "< 10%"), (0.30, "10-30%"), (float("inf"), ">= 30%"))
#: bins of the video's length in minutes (upper bounds, exclusive)
LENGTH_BINS = ((2.0, "< 2 min"), (10.0, "2-10 min"), (float("inf"), ">= 10 min"))


class GroundingRow(BaseModel):
    run: str
    split: str
    bin: str
    n: int
    reference: float | None
    ablation: float | None
    diff: float | None
    ci95: tuple[float, float] | None = None
    #: why no CI is given
    withheld: str | None = None


class GroundingReport(BaseModel):
    reference: str
    rows: list[GroundingRow]
    #: per ablation run, the share (%) of its turns whose text named a range
    named_share: dict[str, float | None]


def coverage(d: Dialogue, duration_s: float | None) -> float | None:
    """The share of the video the ranges named anywhere in the dialogue cover (None: length unknown)."""
    text = "\n".join(t for r in d.rounds for t in (r.user, r.assistant))
    if not named_ranges(text, float("inf")).ranges:
        return 0.0
    if not duration_s:
        return None
    return named_ranges(text, duration_s).seconds / duration_s


def _bin(value: float | None, bins: Sequence[tuple[float, str]], zero_label: bool) -> str | None:
    if value is None:
        return None
    if zero_label and value == 0.0:
        return bins[0][1]
    for upper, label in bins[1:] if zero_label else bins:
        if value < upper:
            return label
    return bins[-1][1]


def _bootstrap(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> tuple[float, float] | None:
    if len(a) < 2 or n_boot <= 0:
        return None
    idx = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    d = (b[idx] - a[idx]).mean(axis=1) * 100.0
    return float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))


def named_share(run: RunData) -> float | None:
    """The share (%) of a run's turns whose text named a range (self context: read in the golden history)."""
    ctx = "golden" if run.config.context == "self" else run.config.context
    turns = [(d, r) for d in run.dialogues for r in rounds_to_call(d, run.config.context)]
    if not turns:
        return None
    return 100.0 * sum(bool(turn_ranges(d, r, ctx, float("inf")).ranges) for d, r in turns) / len(turns)


def grounding_report(runs: Sequence[RunData], names: Sequence[str], meta: dict[str, DialogueMeta],
                     n_boot: int = 2000, seed: int = 0) -> GroundingReport | None:
    """The comparison of each ablation run with the reference run (None: no ablation run, or no reference)."""
    ref_i = next((i for i, r in enumerate(runs) if not r.config.ablations), None)
    ablated = [i for i, r in enumerate(runs) if r.config.ablations]
    if ref_i is None or not ablated:
        return None
    ref = runs[ref_i]
    dialogues = {d.id: d for d in ref.dialogues}
    rows: list[GroundingRow] = []
    shares: dict[str, float | None] = {}
    for i in ablated:
        run, name = runs[i], names[i]
        shares[name] = named_share(run)
        comp = paired_bootstrap(ref.dscores, run.dscores, n_boot=n_boot, seed=seed)
        for r in comp.rows:
            rows.append(GroundingRow(run=name, split="task", bin=r.label, n=r.n, reference=r.a, ablation=r.b,
                                     diff=r.diff, ci95=r.ci95, withheld=r.withheld))
        sa = {d.dialogue_id: d.score for d in ref.dscores if d.score is not None}
        sb = {d.dialogue_id: d.score for d in run.dscores if d.score is not None}
        paired = [k for k in sa if k in sb and k in dialogues]
        for split, bins, key in (("coverage", COVERAGE_BINS, "coverage"), ("video length", LENGTH_BINS, "length")):
            groups: dict[str, list[str]] = {label: [] for _, label in bins}
            for k in paired:
                m = meta.get(k)
                dur = m.duration_s if m is not None else None
                value = coverage(dialogues[k], dur) if key == "coverage" else (dur / 60.0 if dur else None)
                label = _bin(value, bins, zero_label=key == "coverage")
                if label is not None:
                    groups[label].append(k)
            for label, ids in groups.items():
                a = np.array([sa[k] for k in ids], float)
                b = np.array([sb[k] for k in ids], float)
                ci = _bootstrap(a, b, n_boot, seed)
                rows.append(GroundingRow(
                    run=name, split=split, bin=label, n=len(ids),
                    reference=float(a.mean() * 100) if len(ids) else None,
                    ablation=float(b.mean() * 100) if len(ids) else None,
                    diff=float((b - a).mean() * 100) if len(ids) else None, ci95=ci,
                    withheld=None if ci is not None else ("no dialogue" if not ids else "fewer than 2 dialogues")))
    return GroundingReport(reference=names[ref_i], rows=rows, named_share=shares)


def grounding_table(rep: GroundingReport) -> TextTable:
    cols = [Col("Ablation run", "id", key="run"), Col("Split", "text", key="split"), Col("Bin", "text", key="bin"),
            Col("n (dialogues)", "num", key="n"), Col("Reference", "num", key="reference"),
            Col("Ablation", "num", key="ablation"), Col("Δ", "num", key="diff"), Col("95% CI", "text", key="ci")]
    body = [[r.run, r.split, r.bin, r.n, r.reference, r.ablation, r.diff,
             f"[{r.ci95[0]:+.2f}, {r.ci95[1]:+.2f}]" if r.ci95 else (r.withheld or "–")] for r in rep.rows]
    notes = [f"Reference: {rep.reference} (the paper's setting); Δ = ablation - reference, paired by dialogue, "
             "percentile bootstrap 95% CI. Task rows: the task means (Overall: their mean); coverage and video length "
             "bins: the mean over their dialogues. Coverage: the share of the video the ranges named in the dialogue "
             "cover."]
    notes += [f"{n}: {'–' if s is None else f'{s:.1f}%'} of its turns named a range of the video"
              for n, s in rep.named_share.items()]
    return TextTable(columns=cols, rows=body, title="Temporal grounding ablations", notes=notes)


def grounding_markdown(rep: GroundingReport) -> str:
    return to_markdown(grounding_table(rep))
