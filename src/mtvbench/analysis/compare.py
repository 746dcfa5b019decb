"""Paired bootstrap comparison of two runs over the same dialogues.

Only dialogues scored in both runs are used (paired by dialogue id); the others are counted
and make the comparison INCOMPLETE. Each draw resamples, within every task, that task's
paired dialogues with replacement (the same draw for both runs), and computes the difference
B - A of the task means; the Overall difference of a draw is the plain mean of its task
differences (Overall is the mean of the task scores), likewise Perceptivity and
Interactivity. Overall over fewer than the six tasks is labelled partial.

- CI: percentile interval of the draws (95% by default).
- p-value: two-sided bootstrap test of "no difference",
  ``p = min(1, 2 * min(#(d <= 0) + 1, #(d >= 0) + 1) / (n + 1))``, where ``d`` are the draws
  of the difference (the +1 keeps p above zero for a finite number of draws).
- ``n``: the paired dialogues of a row (summed over its tasks). A bootstrap over a handful of
  dialogues gives confident-looking but meaningless intervals, so a row any of whose tasks
  has fewer than ``min_n`` paired dialogues (default 10) gets no CI and no p-value, only its
  difference and the reason.

:func:`compare_run_dirs` also checks that the two runs asked the same questions: different
dialogue sets (ids), or the same ids with different rounds or checklists (compared on the
runs' ``benchmark.json`` snapshots), are an error naming the difference (``common_only``
compares the shared, identical dialogues instead); different judges, judge runs, contexts or
frame settings are reported as caveats.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from pydantic import BaseModel

from mtvbench.data.schema import INTERACTIVITY, PERCEPTIVITY, TASKS, Dialogue, Task
from mtvbench.errors import ConfigError, InputError
from mtvbench.render.console import FormatOption, OutputFormat, print_tables
from mtvbench.render.tables import Col, TextTable, Value, to_markdown
from mtvbench.scoring.aggregate import DialogueScore, fmt
from mtvbench.scoring.effects import summary_line
from mtvbench.util.files import atomic_write_text

#: the fewest paired dialogues per task for which a CI and p-value are reported
DEFAULT_MIN_N = 10


class Diff(BaseModel):
    name: str  # task value, "overall", "perceptivity", "interactivity"
    label: str
    a: float | None
    b: float | None
    diff: float | None  # B - A, percentage points
    ci95: tuple[float, float] | None
    p_value: float | None
    n: int  # paired dialogues
    #: the fewest paired dialogues of one of the row's tasks
    n_min: int = 0
    #: why the CI and p-value are not given (``None``: they are)
    withheld: str | None = None


class Comparison(BaseModel):
    run_a: str
    run_b: str
    n_boot: int
    seed: int
    rows: list[Diff]
    unpaired_a: int
    unpaired_b: int
    min_n: int = DEFAULT_MIN_N
    #: differences between the runs' settings that the reader must know about
    caveats: list[str] = []
    #: reasons the comparison does not cover everything (dialogues left out, incomplete runs)
    incomplete_reasons: list[str] = []
    #: one line per run whose data is not a real benchmark (``run A: NOT a real benchmark: why``)
    not_a_benchmark: list[str] = []

    @property
    def complete(self) -> bool:
        return not self.incomplete_reasons


def _p_two_sided(d: np.ndarray) -> float:
    n = len(d)
    le = int(np.sum(d <= 0)) + 1
    ge = int(np.sum(d >= 0)) + 1
    return float(min(1.0, 2.0 * min(le, ge) / (n + 1)))


def paired_bootstrap(a: Sequence[DialogueScore], b: Sequence[DialogueScore], *, n_boot: int = 10000, seed: int = 0,
                     alpha: float = 0.05, name_a: str = "A", name_b: str = "B",
                     min_n: int = DEFAULT_MIN_N) -> Comparison:
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
        if len(present) < len(tasks) and len(tasks) > 1:
            label = f"{label} (partial, {len(present)}/{len(tasks)} tasks)"
        if not present:
            return Diff(name=name, label=label, a=None, b=None, diff=None, ci95=None, p_value=None, n=0)
        sizes = {t: len(by_task[t][0]) for t in present}
        n, n_min = sum(sizes.values()), min(sizes.values())
        ma = float(np.mean([by_task[t][0].mean() for t in present]) * 100)
        mb = float(np.mean([by_task[t][1].mean() for t in present]) * 100)
        base = Diff(name=name, label=label, a=ma, b=mb, diff=mb - ma, ci95=None, p_value=None, n=n, n_min=n_min)
        small = [t for t in present if sizes[t] < min_n]
        if small:
            which = ", ".join(f"{t.abbr} {sizes[t]}" for t in small)
            return base.model_copy(update={"withheld": f"too few dialogues ({which}; fewer than {min_n} per task)"})
        if n_boot <= 0:
            return base.model_copy(update={"withheld": "no bootstrap draws"})
        d = np.mean(np.stack([draws[t] for t in present]), axis=0)
        return base.model_copy(update={"ci95": (float(np.percentile(d, lo)), float(np.percentile(d, hi))),
                                       "p_value": _p_two_sided(d)})

    rows = [row("overall", "Overall", TASKS)]
    rows += [row(t.value, t.abbr, [t]) for t in TASKS]
    rows += [row("perceptivity", "Perceptivity", PERCEPTIVITY), row("interactivity", "Interactivity", INTERACTIVITY)]
    unpaired_a, unpaired_b = len(sa) - len(paired), len(sb) - len(paired)
    reasons = []
    if unpaired_a or unpaired_b:
        reasons.append(f"dialogues scored in one run only are left out ({unpaired_a} in A, {unpaired_b} in B)")
    return Comparison(run_a=name_a, run_b=name_b, n_boot=n_boot, seed=seed, rows=rows, unpaired_a=unpaired_a,
                      unpaired_b=unpaired_b, min_n=min_n, incomplete_reasons=reasons)


def missing_notes(c: Comparison) -> list[str]:
    """Why cells are "–", said once each: the tasks with too few paired dialogues (and the rows
    that include them), no bootstrap draws, rows without any paired dialogue."""
    out = []
    small = [(r.label, r.n) for r in c.rows if r.name in {t.value for t in TASKS} and 0 < r.n < c.min_n]
    too_few = [r.label for r in c.rows if r.withheld and r.withheld.startswith("too few")]
    if small:
        out.append(f"–: no CI or p-value for {', '.join(too_few)}: too few paired dialogues "
                   f"({', '.join(f'{label} {n}' for label, n in small)}; a CI needs {c.min_n} per task, --min-n).")
    if any(r.withheld == "no bootstrap draws" for r in c.rows):
        out.append("–: no CI or p-value: no bootstrap draws (--bootstrap 0).")
    empty = [r.label for r in c.rows if r.n == 0]
    if empty:
        out.append(f"–: {', '.join(empty)}: no dialogue scored in both runs.")
    return out


def comparison_table(c: Comparison) -> TextTable:
    """B - A per task and group with n per row; "–" where a row has no CI/p-value, with the reason
    said once under the table (:func:`missing_notes`); an Overall over fewer tasks is labelled
    partial (in :func:`paired_bootstrap`); incomplete runs, left-out dialogues and caveats are
    listed under the table."""
    rows: list[list[Value]] = []
    for r in c.rows:
        ci = f"[{fmt(r.ci95[0])}, {fmt(r.ci95[1])}]" if r.ci95 else None
        rows.append([r.label, r.a, r.b, r.diff, ci, r.p_value, r.n])
    notes = ["n counts the dialogues scored in both runs.", *missing_notes(c)]
    notes += [f"INCOMPLETE: {reason}." for reason in c.incomplete_reasons]
    notes += c.not_a_benchmark
    if c.unpaired_a or c.unpaired_b:
        notes.append(f"Left out (scored in one run only): {c.unpaired_a} in A, {c.unpaired_b} in B.")
    notes += [f"Caveat: {cav}" for cav in c.caveats]
    status = "" if c.complete else " INCOMPLETE."
    return TextTable(
        columns=[Col("", "text", key="measure"), Col("A", "num", key="a"), Col("B", "num", key="b"),
                 Col("B - A", "num", key="diff"), Col("95% CI", "text", key="ci95"),
                 Col("p", "num", digits=4, key="p_value"), Col("n (paired dialogues)", "num", key="n")],
        rows=rows,
        intro=[f"Paired bootstrap over dialogues ({c.n_boot} draws, seed {c.seed}): B - A, percentage points."
               f"{status}", f"A = {c.run_a}; B = {c.run_b}."],
        notes=notes)


def comparison_markdown(c: Comparison) -> str:
    return to_markdown(comparison_table(c))


# ------------------------------------------------------------------------------ two run directories

def _round_diff(da: Dialogue, db: Dialogue) -> str | None:
    """Where two dialogues of the same id differ (questions, answers, turns, checklists), or None."""
    if len(da.rounds) != len(db.rounds):
        return f"{len(da.rounds)} rounds in A, {len(db.rounds)} in B"
    for ra, rb in zip(da.rounds, db.rounds):
        for fld, what in (("user", "question"), ("assistant", "golden answer"), ("ability", "Ability"),
                          ("model_turn", "turn selection"), ("checklist", "checklist")):
            if getattr(ra, fld) != getattr(rb, fld):
                return f"round {ra.index}: {what}"
    return None


def check_same_dialogues(a: Sequence[Dialogue], b: Sequence[Dialogue], *, common_only: bool = False) -> set[str]:
    """The ids to compare. Different dialogue sets are an error unless ``common_only``; shared ids
    whose content differs (another version of the data) are always an error."""
    da, db = {d.id: d for d in a}, {d.id: d for d in b}
    only_a, only_b = sorted(set(da) - set(db)), sorted(set(db) - set(da))
    changed = [(k, why) for k in sorted(set(da) & set(db)) if (why := _round_diff(da[k], db[k])) is not None]
    problems = []
    if (only_a or only_b) and not common_only:
        for side, ids in (("A", only_a), ("B", only_b)):
            if ids:
                problems.append(f"{len(ids)} dialogue(s) only in {side} (e.g. {', '.join(ids[:3])})")
    if changed:
        shown = "; ".join(f"{k}: {why}" for k, why in changed[:3])
        problems.append(f"{len(changed)} shared dialogue(s) differ in content, so the runs used different versions "
                        f"of the data (e.g. {shown})")
    if problems:
        hint = None if changed or common_only else ("hint: --common-only compares the dialogues both runs share "
                                                    "(e.g. a --limit run against a full one)")
        raise InputError("the runs were evaluated on different dialogues: " + "; ".join(problems), hint=hint)
    return set(da) & set(db)


def compare_run_dirs(dir_a: str | Path, dir_b: str | Path, *, n_boot: int = 10000, seed: int = 0,
                     min_n: int = DEFAULT_MIN_N, common_only: bool = False) -> Comparison:
    from mtvbench.run.rundir import RunDirectory

    ra, rb = RunDirectory.open(dir_a).load(bootstrap=0), RunDirectory.open(dir_b).load(bootstrap=0)
    keep = check_same_dialogues(ra.dialogues, rb.dialogues, common_only=common_only)
    na, nb = ra.name, rb.name
    if na == nb:
        na, nb = f"{na} ({ra.run_dir.name})", f"{nb} ({rb.run_dir.name})"
    comp = paired_bootstrap([d for d in ra.dscores if d.dialogue_id in keep],
                            [d for d in rb.dscores if d.dialogue_id in keep],
                            n_boot=n_boot, seed=seed, name_a=na, name_b=nb, min_n=min_n)
    ca, cb = ra.config, rb.config
    for what, x, y in (("protocol", ca.protocol_name, cb.protocol_name), ("judge", ca.judge, cb.judge),
                       ("judge runs per turn", ca.judge_runs, cb.judge_runs),
                       ("context", ca.context, cb.context),
                       ("frame settings", ca.frame_settings().key(), cb.frame_settings().key()),
                       ("temporal grounding ablations", ", ".join(ca.ablations) or "none",
                        ", ".join(cb.ablations) or "none")):
        if x != y:
            comp.caveats.append(f"the runs differ in {what} (A: {x}, B: {y}); the difference is not the models' alone")
    if len(keep) < max(len(ra.dialogues), len(rb.dialogues)):
        comp.caveats.append(f"compared on the {len(keep)} dialogues both runs share (--common-only); A has "
                            f"{len(ra.dialogues)}, B has {len(rb.dialogues)}")
    for side, r in (("A", ra), ("B", rb)):
        if any((r.scores.protocol_effects or {}).values()):  # a run whose numbers some eval.py behaviour moved
            comp.caveats.append(f"run {side} ({r.scores.protocol}): "
                                f"{summary_line(r.scores.protocol_effects, r.scores.paper_reading)}")
        if not r.scores.complete:
            comp.incomplete_reasons.append(f"run {side} is incomplete: {'; '.join(r.scores.incomplete_reasons)}")
        if r.scores.not_a_benchmark is not None:
            comp.not_a_benchmark.append(f"run {side}: {r.scores.not_a_benchmark.line}")
    return comp


__all__ = ["DEFAULT_MIN_N", "Comparison", "Diff", "check_same_dialogues", "compare_run_dirs", "comparison_markdown",
           "comparison_table", "paired_bootstrap"]


def command(
    run_a: Annotated[Path, typer.Argument(help="run directory A (baseline)")],
    run_b: Annotated[Path, typer.Argument(help="run directory B")],
    n_boot: Annotated[int, typer.Option("--bootstrap", help="bootstrap draws")] = 10000,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    min_n: Annotated[int, typer.Option(help="fewest paired dialogues per task for a CI and p-value")] = DEFAULT_MIN_N,
    common_only: Annotated[bool, typer.Option(help="compare only the dialogues both runs share (else different "
                                                   "dialogue sets are an error)")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """B - A per task and Overall, paired bootstrap over dialogues (95% CI, p-value, n per row).

    Runs over different dialogues are refused; different protocols, judges or contexts are flagged; rows
    with fewer than --min-n paired dialogues in a task get no CI or p-value. Exit 3 when
    dialogues were left out or a run is incomplete."""
    if min_n < 1:
        raise ConfigError("--min-n must be at least 1")
    comp = compare_run_dirs(run_a, run_b, n_boot=n_boot, seed=seed, min_n=min_n, common_only=common_only)
    if json_out:
        atomic_write_text(json_out, comp.model_dump_json(indent=2) + "\n")
    print_tables([comparison_table(comp)], output_format, json_obj=comp.model_dump(mode="json"))
    if not comp.complete:
        raise typer.Exit(3)
