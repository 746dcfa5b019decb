"""Paired bootstrap comparison of two runs over the same dialogues.

Only dialogues scored in both runs are used (paired by dialogue id); the others are counted.
Each draw resamples, within every task, that task's paired dialogues with replacement (the
same draw for both runs), and computes the difference B - A of the task means; the Overall
difference of a draw is the plain mean of its task differences (Overall is the mean of the
task scores), likewise Perceptivity and Interactivity.

- CI: percentile interval of the draws (95% by default).
- p-value: two-sided bootstrap test of "no difference",
  ``p = min(1, 2 * min(#(d <= 0) + 1, #(d >= 0) + 1) / (n + 1))``, where ``d`` are the draws
  of the difference (the +1 keeps p above zero for a finite number of draws).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY, TASKS, Task
from mtvbench.report.tables import Col, TextTable, Value, to_markdown
from mtvbench.scoring.aggregate import DialogueScore, fmt


class Diff(BaseModel):
    name: str  # task value, "overall", "perceptivity", "interactivity"
    label: str
    a: float | None
    b: float | None
    diff: float | None  # B - A, percentage points
    ci95: tuple[float, float] | None
    p_value: float | None
    n: int  # paired dialogues


class Comparison(BaseModel):
    run_a: str
    run_b: str
    n_boot: int
    seed: int
    rows: list[Diff]
    unpaired_a: int
    unpaired_b: int
    #: why run A / B is incomplete (``Scores.incomplete_reasons``); empty when complete or unknown
    incomplete_a: list[str] = []
    incomplete_b: list[str] = []


def _p_two_sided(d: np.ndarray) -> float:
    n = len(d)
    le = int(np.sum(d <= 0)) + 1
    ge = int(np.sum(d >= 0)) + 1
    return float(min(1.0, 2.0 * min(le, ge) / (n + 1)))


def paired_bootstrap(a: Sequence[DialogueScore], b: Sequence[DialogueScore], *, n_boot: int = 10000, seed: int = 0,
                     alpha: float = 0.05, name_a: str = "A", name_b: str = "B") -> Comparison:
    sa = {d.dialogue_id: d for d in a if d.score is not None}
    sb = {d.dialogue_id: d for d in b if d.score is not None}
    paired = [k for k in sa if k in sb]
    by_task: dict[Task, tuple[np.ndarray, np.ndarray]] = {}
    for t in TASKS:
        ids = [k for k in paired if sa[k].task == t]
        if ids:
            by_task[t] = (np.array([sa[k].score for k in ids], float), np.array([sb[k].score for k in ids], float))
    rng = np.random.default_rng(seed)
    draws: dict[Task, np.ndarray] = {}
    for t, (va, vb) in by_task.items():
        idx = rng.integers(0, len(va), size=(n_boot, len(va)))
        draws[t] = (vb[idx] - va[idx]).mean(axis=1) * 100.0
    lo, hi = 100 * alpha / 2, 100 * (1 - alpha / 2)

    def row(name: str, label: str, tasks: Sequence[Task]) -> Diff:
        present = [t for t in tasks if t in by_task]
        n = sum(len(by_task[t][0]) for t in present)
        if not present:
            return Diff(name=name, label=label, a=None, b=None, diff=None, ci95=None, p_value=None, n=0)
        ma = float(np.mean([by_task[t][0].mean() for t in present]) * 100)
        mb = float(np.mean([by_task[t][1].mean() for t in present]) * 100)
        if n_boot <= 0:
            return Diff(name=name, label=label, a=ma, b=mb, diff=mb - ma, ci95=None, p_value=None, n=n)
        d = np.mean(np.stack([draws[t] for t in present]), axis=0)
        return Diff(name=name, label=label, a=ma, b=mb, diff=mb - ma,
                    ci95=(float(np.percentile(d, lo)), float(np.percentile(d, hi))), p_value=_p_two_sided(d), n=n)

    rows = [row("overall", "Overall", TASKS)]
    rows += [row(t.value, t.abbr, [t]) for t in TASKS]
    rows += [row("perceptivity", "Perceptivity", PERCEPTIVITY), row("interactivity", "Interactivity", INTERACTIVITY)]
    return Comparison(run_a=name_a, run_b=name_b, n_boot=n_boot, seed=seed, rows=rows,
                      unpaired_a=len(sa) - len(paired), unpaired_b=len(sb) - len(paired))


def comparison_table(c: Comparison) -> TextTable:
    """B - A per task and group. An Overall (or Perceptivity/Interactivity) over fewer tasks
    than it is defined on is labelled ``partial, k/n tasks``; incomplete runs are named with
    their reasons."""
    task_n = {r.name: r.n for r in c.rows}
    groups = {"overall": TASKS, "perceptivity": PERCEPTIVITY, "interactivity": INTERACTIVITY}

    def label(r: Diff) -> str:
        tasks = groups.get(r.name)
        if tasks is None:
            return r.label
        k = sum(1 for t in tasks if task_n.get(t.value, 0) > 0)
        return r.label if k == len(tasks) else f"{r.label} (partial, {k}/{len(tasks)} tasks)"

    rows: list[list[Value]] = [
        [label(r), r.a, r.b, r.diff, f"[{fmt(r.ci95[0])}, {fmt(r.ci95[1])}]" if r.ci95 else None, r.p_value, r.n]
        for r in c.rows]
    notes = []
    if c.unpaired_a or c.unpaired_b:
        notes.append(f"Left out (scored in one run only): {c.unpaired_a} in A, {c.unpaired_b} in B.")
    for which, reasons in (("A", c.incomplete_a), ("B", c.incomplete_b)):
        if reasons:
            notes.append(f"{which} is INCOMPLETE: " + "; ".join(reasons))
    return TextTable(
        columns=[Col("", "text", key="measure"), Col("A", "num", key="a"), Col("B", "num", key="b"),
                 Col("B - A", "num", key="diff"), Col("95% CI", "text", key="ci95"),
                 Col("p", "num", digits=4, key="p_value"), Col("pairs", "num", key="n")],
        rows=rows,
        intro=[f"Paired bootstrap over dialogues ({c.n_boot} draws, seed {c.seed}): B - A, percentage points; "
               "pairs = dialogues scored in both runs.", f"A = {c.run_a}; B = {c.run_b}."],
        notes=notes)


def comparison_markdown(c: Comparison) -> str:
    return to_markdown(comparison_table(c))


def compare_run_dirs(dir_a: str, dir_b: str, *, n_boot: int = 10000, seed: int = 0) -> Comparison:
    from pathlib import Path

    from mtvbench.analysis.rundata import load_run

    ra, rb = load_run(Path(dir_a), bootstrap=0), load_run(Path(dir_b), bootstrap=0)
    na, nb = ra.name, rb.name
    if na == nb:
        na, nb = f"{na} ({ra.run_dir.name})", f"{nb} ({rb.run_dir.name})"
    comp = paired_bootstrap(ra.dscores, rb.dscores, n_boot=n_boot, seed=seed, name_a=na, name_b=nb)
    comp.incomplete_a, comp.incomplete_b = list(ra.scores.incomplete_reasons), list(rb.scores.incomplete_reasons)
    return comp
