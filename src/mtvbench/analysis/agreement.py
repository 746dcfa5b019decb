"""Agreement between a judge and human annotators (paper Table 3 and §4.5), and the judge's
consistency with itself across its repeated runs.

Human file (CSV with a header, a JSON list of objects, or JSON Lines), one record per
scored turn or per checklist item:

- the turn: ``turn_id`` (``task/video/event#round``), or ``dialogue_id`` + ``round``, or
  ``task`` (``object_reference`` or the released stem, e.g. ``summary``) + ``video`` +
  ``event`` + ``round``;
- turn level: ``score`` (the share of checklist items satisfied, 0-1 or 0-100; rank and
  linear correlations do not depend on the scale);
- item level: ``item`` (``Q3``, ``A3`` or ``3``) and ``verdict`` (Yes/No); the human turn
  score is then the share of items whose verdict equals the checklist's expected answer;
- optional ``annotator`` (or ``rater``): several annotators' scores of a turn are averaged (the
  mean of the raters); item verdicts are combined by majority (ties left out of kappa);
- optional ``at`` (when the rating was made), ``seed`` (the seed of the sample the turn was drawn
  in) and ``answer_digest`` (the digest of the answer the human rated, as the run's verdict
  fingerprints take it: a run whose judge judged another answer for that turn leaves the turn out
  and says so). ``mtvbench review export RUN_DIR`` writes this format (:func:`~mtvbench.scoring.human.human_jsonl`), and
  reads it back with :func:`~mtvbench.scoring.human.load_human` before it keeps the file (one reader,
in :mod:`mtvbench.scoring.human`, which the review app uses too).

Statistics: Spearman, Kendall's tau-b and Pearson (``scipy.stats``) between the judge's and
the humans' scores, per turn (default) or per dialogue (mean over the turns both scored; the
paper's Table 3), each with a percentile bootstrap CI over the units (turns or dialogues);
Cohen's kappa between the judge's item verdicts (majority over its runs) and the humans';
Fleiss' kappa over the judge's runs on every item that all its runs answered; among the humans,
Krippendorff's alpha (nominal) over their item verdicts (any number of raters per item) and
Fleiss' kappa over the items every one of them rated (the statistics:
:mod:`mtvbench.scoring.kappa`, shared with the review's progress).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel

from mtvbench.errors import ConfigError
from mtvbench.render.console import FormatOption, OutputFormat, print_tables
from mtvbench.render.tables import Col, TextTable, to_markdown
from mtvbench.run.responses import judged_answer
from mtvbench.scoring.human import (
    AgreementError,
    HumanRecord,
    answer_digest,
    human_agreement,
    load_human,
)
from mtvbench.scoring.kappa import cohen_kappa, fleiss_kappa
from mtvbench.util.files import atomic_write_text

Level = Literal["turn", "dialogue"]




# ------------------------------------------------------------------------------ statistics

def correlations(x: Sequence[float], y: Sequence[float]) -> dict[str, float | None]:
    """Spearman rho, Kendall tau-b and Pearson r (scipy); ``None`` when undefined."""
    from scipy import stats

    out: dict[str, float | None] = {"spearman": None, "kendall": None, "pearson": None}
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return out
    for name, fn in (("spearman", stats.spearmanr), ("kendall", stats.kendalltau), ("pearson", stats.pearsonr)):
        v = float(fn(x, y)[0])
        out[name] = None if math.isnan(v) else v
    return out


def bootstrap_correlations(pairs: Sequence[tuple[float, float]], n_boot: int, seed: int = 0,
                           alpha: float = 0.05) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap CIs of :func:`correlations` over ``pairs`` (the units resampled with
    replacement, ``n_boot`` draws, seeded); a draw where a measure is undefined is left out of its CI.
    ``None`` for a measure with fewer than 3 units or fewer than half the draws defined."""
    import numpy as np

    out: dict[str, tuple[float, float] | None] = {"spearman": None, "kendall": None, "pearson": None}
    if n_boot < 1 or len(pairs) < 3:
        return out
    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    idx = np.random.default_rng(seed).integers(0, len(pairs), size=(n_boot, len(pairs)))
    draws: dict[str, list[float]] = defaultdict(list)
    for row in idx:
        for name, v in correlations(list(x[row]), list(y[row])).items():
            if v is not None:
                draws[name].append(v)
    for name, vals in draws.items():
        if len(vals) >= n_boot / 2:
            lo, hi = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
            out[name] = (float(lo), float(hi))
    return out


# ------------------------------------------------------------------------------ agreement

class JudgeAgreement(BaseModel):
    judge: str
    run_dir: str
    level: Level
    n: int
    spearman: float | None
    kendall: float | None
    pearson: float | None
    #: measure -> its 95% percentile bootstrap CI over the units (absent: undefined or no draws)
    ci95: dict[str, tuple[float, float]] = {}
    n_items: int = 0
    cohen_kappa: float | None = None
    judge_runs: int = 1
    n_items_all_runs: int = 0
    fleiss_kappa_runs: float | None = None
    unanimous_share: float | None = None
    #: human-rated turns left out: the humans rated another answer than this run's judge judged
    other_answers: int = 0
    #: human records left out because they name a turn or a checklist item this run does not have, and
    #: the first of them (``turn_id`` or ``turn_id item``)
    records_not_in_run: int = 0
    not_in_run_example: str | None = None
    #: measure -> why it is undefined ("–"), for each measure that is
    undefined: dict[str, str] = {}


class AgreementReport(BaseModel):
    human_file: str
    level: Level
    rows: list[JudgeAgreement]
    human_annotators: int
    human_fleiss_kappa: float | None = None
    #: Krippendorff's alpha (nominal) among the humans over their item verdicts, and its units
    human_alpha: float | None = None
    human_alpha_units: int = 0
    #: the sample seeds the human file names
    seeds: list[int] = []
    bootstrap: int = 0
    unmatched_human_turns: dict[str, int] = {}
    #: all human records, and those without an ``answer_digest`` (taken as ratings of the judged answers,
    #: unchecked)
    human_records: int = 0
    records_without_digest: int = 0


def _majority(labels: Sequence[str]) -> str | None:
    c = Counter(labels).most_common()
    if not c or (len(c) > 1 and c[0][1] == c[1][1]):
        return None
    return c[0][0]


def human_scores(records: Sequence[HumanRecord], expected: dict[str, dict[str, str]]
                 ) -> tuple[dict[str, float], dict[tuple[str, str], str]]:
    """Turn scores (fraction) and majority item verdicts from the human records.
    ``expected[turn_id][A_k]`` is the checklist's expected answer."""
    turn_ann: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    items: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for r in records:
        if r.score is not None:
            turn_ann[r.turn_id][r.annotator].append(r.score)
        elif r.item is not None and r.verdict is not None:
            items[(r.turn_id, r.item)][r.annotator] = r.verdict
    scores: dict[str, float] = {}
    all_scores = [s for a in turn_ann.values() for v in a.values() for s in v]
    scale = 100.0 if all_scores and max(all_scores) > 1.0 else 1.0
    for tid, anns in turn_ann.items():
        per = [sum(v) / len(v) / scale for v in anns.values()]
        scores[tid] = sum(per) / len(per)
    # item-level turns: share of items matching the expected answer, per annotator, averaged
    by_turn_ann: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for (tid, key), anns in items.items():
        exp = expected.get(tid, {}).get(key)
        if exp is None:
            continue
        for ann, v in anns.items():
            by_turn_ann[tid][ann].append(v == exp)
    for tid, anns in by_turn_ann.items():
        if tid in scores:
            continue
        per = [sum(v) / len(v) for v in anns.values()]
        scores[tid] = sum(per) / len(per)
    majority = {k: m for k, anns in items.items() if (m := _majority(list(anns.values()))) is not None}
    return scores, majority


def same_answers(run: Any, records: Sequence[HumanRecord]) -> tuple[list[HumanRecord], int]:
    """The records of turns whose rated answer is the answer the run's judge judged (records without an
    ``answer_digest`` are taken as they are), and how many rated turns are left out."""
    judged: dict[str, str | None] = {}
    for d in run.dialogues:
        for r in d.scored_turns:
            a = judged_answer(d, r, run.responses)
            judged[d.turn_id(r.index)] = answer_digest(a) if a is not None else None
    other = {r.turn_id for r in records if r.answer_digest is not None and r.turn_id in judged
             and judged[r.turn_id] not in (None, r.answer_digest)}
    return [r for r in records if r.turn_id not in other], len(other)


def _pairs(j_turn: dict[str, float], h_scores: dict[str, float], level: Level) -> list[tuple[float, float]]:
    """(judge, human) per turn both scored, or per dialogue (the means over those turns)."""
    both = [t for t in sorted(h_scores) if t in j_turn]
    if level == "turn":
        return [(j_turn[t], h_scores[t]) for t in both]
    by_d: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t in both:
        by_d[t.rpartition("#")[0]].append((j_turn[t], h_scores[t]))
    return [(sum(j for j, _ in v) / len(v), sum(h for _, h in v) / len(v)) for v in by_d.values()]


def judge_agreement(run: Any, records: Sequence[HumanRecord], level: Level = "turn", *, bootstrap: int = 0,
                    seed: int = 0) -> tuple[JudgeAgreement, int]:
    """Agreement of one run's judge (a :class:`~mtvbench.run.rundir.RunData`) with the
    humans. Returns the row and the number of human turns the run does not hold."""
    records, other = same_answers(run, records)
    expected: dict[str, dict[str, str]] = {}
    for d in run.dialogues:
        for r in d.scored_turns:
            expected[d.turn_id(r.index)] = {it.answer_key: it.expected for it in r.checklist or []}
    h_scores, h_items = human_scores(records, expected)
    absent = [r for r in records if r.turn_id not in expected or (r.item is not None and r.item not in
                                                                 expected[r.turn_id])]
    j_turn = {t.turn_id: t.score for ds in run.dscores for t in ds.turns if t.score is not None}
    unmatched = sum(1 for tid in h_scores if tid not in j_turn)
    pairs = _pairs(j_turn, h_scores, level)
    corr = correlations([p[0] for p in pairs], [p[1] for p in pairs])
    cis = {k: v for k, v in bootstrap_correlations(pairs, bootstrap, seed).items() if v is not None}
    # item verdicts of the judge
    ja, ha = [], []
    all_runs_ratings = []
    runs_n = run.config.judge_runs
    for tid, runs in sorted(run.verdicts.items()):
        ok = [v for _, v in sorted(runs.items()) if v.status == "ok" and v.verdicts]
        for key in expected.get(tid, {}):
            labels = [v.verdicts[key] for v in ok if key in v.verdicts]
            if len(labels) == runs_n and runs_n >= 2:
                all_runs_ratings.append(labels)
            if (tid, key) in h_items and labels:
                m = _majority(labels)
                if m is not None:
                    ja.append(m)
                    ha.append(h_items[(tid, key)])
    fk = fleiss_kappa(all_runs_ratings) if all_runs_ratings else None
    unanimous = (sum(len(set(r)) == 1 for r in all_runs_ratings) / len(all_runs_ratings)
                 if all_runs_ratings else None)
    row = JudgeAgreement(judge=run.config.judge, run_dir=str(run.run_dir), level=level, n=len(pairs),
                         spearman=corr["spearman"], kendall=corr["kendall"], pearson=corr["pearson"], ci95=cis,
                         n_items=len(ja), cohen_kappa=cohen_kappa(ja, ha) if ja else None, judge_runs=runs_n,
                         n_items_all_runs=len(all_runs_ratings), fleiss_kappa_runs=fk, unanimous_share=unanimous,
                         other_answers=other, records_not_in_run=len(absent),
                         not_in_run_example=f"{absent[0].turn_id} {absent[0].item or ''}".strip() if absent else None)
    row.undefined = _undefined(row, pairs, ja, ha, all_runs_ratings)
    return row, unmatched


def _undefined(row: JudgeAgreement, pairs: Sequence[tuple[float, float]], ja: Sequence[str], ha: Sequence[str],
               all_runs: Sequence[Sequence[str]]) -> dict[str, str]:
    """Why each undefined measure of ``row`` is undefined (the footnote of its "–")."""
    out: dict[str, str] = {}
    unit = f"{row.level}s"
    if row.spearman is None:
        why = (f"fewer than 2 {unit} scored by both the judge and the humans ({len(pairs)})" if len(pairs) < 2
               else f"the judge gave every {row.level} the same score" if len({p[0] for p in pairs}) < 2
               else f"the humans gave every {row.level} the same score")
        out.update({"spearman": why, "kendall": why, "pearson": why})
    if row.cohen_kappa is None:
        out["cohen_kappa"] = ("no checklist item has both a human verdict and a judge verdict" if not ja else
                              f"the judge and the humans answered every item {ja[0]!r} (chance agreement is 1)"
                              if set(ja) == set(ha) and len(set(ja)) == 1 else "undefined for these verdicts")
    if row.fleiss_kappa_runs is None:
        out["fleiss_kappa_runs"] = ("one judge run per turn" if row.judge_runs < 2 else
                                    "no item was answered by every judge run" if not all_runs else
                                    "every judge run gave every item the same answer")
    if row.unanimous_share is None:
        out["unanimous_share"] = out["fleiss_kappa_runs"]
    return out


#: measure -> its column name in the tables
_MEASURES = {"spearman": "Spearman", "kendall": "Kendall-Tau", "pearson": "Pearson",
             "cohen_kappa": "Cohen's kappa vs humans (items)", "fleiss_kappa_runs": "Fleiss' kappa across runs",
             "unanimous_share": "unanimous share"}


def undefined_notes(rep: AgreementReport, measures: Sequence[str]) -> list[str]:
    """One line per judge and reason for the "–" cells of ``measures`` (said once, not in each cell)."""
    out = []
    for name, r in zip(_judge_names(rep), rep.rows):
        by_reason: dict[str, list[str]] = defaultdict(list)
        for m in measures:
            if m in r.undefined:
                by_reason[r.undefined[m]].append(_MEASURES[m])
        out += [f"–: {name}: {', '.join(cols)} undefined: {why}." for why, cols in by_reason.items()]
    return out


def agreement_report(human_file: Path, run_dirs: Sequence[Path], level: Level = "turn", *, bootstrap: int = 0,
                     seed: int = 0) -> AgreementReport:
    from mtvbench.run.rundir import RunDirectory

    records = load_human(human_file)
    if not records:
        raise AgreementError(f"{human_file}: no human records (see docs/reference/formats.md for the format)")
    rows, unmatched = [], {}
    for rd in run_dirs:
        run = RunDirectory.open(rd).load(bootstrap=0)
        row, miss = judge_agreement(run, records, level, bootstrap=bootstrap, seed=seed)
        if row.n == 0 and row.n_items == 0:
            example = records[0].turn_id
            why = (f"every one of its rated turns was rated on another answer than {rd} judged ({row.other_answers} "
                   "turns): judge the rated run's answers (`mtvbench run --answers-from RUN_DIR`)"
                   if row.other_answers else f"none of its {len(records)} records is a scored turn of {rd} "
                   f"(e.g. {example!r}); turn ids look like task/video/event#round, as in responses.jsonl")
            raise AgreementError(f"{human_file}: {why}")
        rows.append(row)
        unmatched[str(rd)] = miss
    people, hk, alpha, units = human_agreement(records)
    return AgreementReport(human_file=str(human_file), level=level, rows=rows, human_annotators=people,
                           human_fleiss_kappa=hk, human_alpha=alpha, human_alpha_units=units,
                           seeds=sorted({r.seed for r in records if r.seed is not None}), bootstrap=bootstrap,
                           unmatched_human_turns=unmatched, human_records=len(records),
                           records_without_digest=sum(1 for r in records if r.answer_digest is None))


def _judge_names(rep: AgreementReport) -> list[str]:
    names = [r.judge for r in rep.rows]
    return [r.judge if names.count(r.judge) == 1 else f"{r.judge} ({Path(r.run_dir).name})" for r in rep.rows]


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def _ci(r: JudgeAgreement, measure: str) -> str | None:
    ci = r.ci95.get(measure)
    return None if ci is None else f"[{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"


def _human_notes(rep: AgreementReport) -> list[str]:
    """Who the humans are and how much they agree among themselves."""
    seeds = f" (sample seed {', '.join(map(str, rep.seeds))})" if rep.seeds else ""
    line = f"Human raters: {rep.human_annotators}{seeds}"
    if rep.human_alpha is not None:
        line += (f"; Krippendorff's alpha among them (nominal, item verdicts): {rep.human_alpha:.3f} over "
                 f"{rep.human_alpha_units} items rated by two or more")
    elif rep.human_annotators >= 2:
        line += "; Krippendorff's alpha among them: undefined (no item verdict rated by two, or one label throughout)"
    if rep.human_fleiss_kappa is not None:
        line += f"; Fleiss' kappa (items all rated): {rep.human_fleiss_kappa:.3f}"
    out = [line]
    miss = {k: v for k, v in rep.unmatched_human_turns.items() if v}
    if miss:
        out.append("Human-scored turns without a judge score: "
                   + ", ".join(f"{Path(k).name}: {v}" for k, v in miss.items()))
    other = [(n, r.other_answers) for n, r in zip(_judge_names(rep), rep.rows) if r.other_answers]
    if other:
        out.append("Left out, rated on another answer than the judge judged (not the same answers): "
                   + ", ".join(f"{n}: {k} turn(s)" for n, k in other))
    absent = [(n, r) for n, r in zip(_judge_names(rep), rep.rows) if r.records_not_in_run]
    if absent:
        out.append("Left out, naming a turn or checklist item the run does not have: "
                   + ", ".join(f"{n}: {r.records_not_in_run} of {rep.human_records} human records "
                               f"(e.g. {r.not_in_run_example!r})" for n, r in absent))
    if rep.records_without_digest:
        out.append(f"{rep.records_without_digest} of {rep.human_records} human records name no answer_digest: "
                   "taken as ratings of the answers each judge judged (not checked)")
    return out


def agreement_tables(rep: AgreementReport) -> list[TextTable]:
    """Table 3 layout (correlations x100, with bootstrap CIs) and the judge's consistency table."""
    names = _judge_names(rep)
    measures = [("spearman", "Spearman"), ("kendall", "Kendall-Tau"), ("pearson", "Pearson")]
    cols, cells = [Col("Judge", "id")], []
    for key, label in measures:
        cols.append(Col(label, "num", key=key))
        if rep.bootstrap:
            cols.append(Col("95% CI", "text", key=f"{key}_ci95"))
    cols.append(Col("n", "num"))
    for n, r in zip(names, rep.rows):
        row: list[Any] = [n]
        for key, _ in measures:
            row += [_pct(getattr(r, key))] + ([_ci(r, key)] if rep.bootstrap else [])
        cells.append([*row, r.n])
    mean = " (the mean of the raters)" if rep.human_annotators > 1 else ""
    notes = undefined_notes(rep, ["spearman", "kendall", "pearson"])
    if rep.bootstrap:
        notes.append(f"95% CI: percentile bootstrap over the {rep.level}s ({rep.bootstrap} draws, seeded); "
                     f"\"–\" where fewer than 3 {rep.level}s or most draws are undefined.")
    corr = TextTable(
        columns=cols, rows=cells,
        intro=[f"Agreement with human scores{mean} ({rep.human_file}), per {rep.level}; correlations x100 "
               "(Table 3 layout)."],
        notes=notes + _human_notes(rep))
    kappa = TextTable(
        columns=[Col("Judge", "id"), Col("Cohen's kappa vs humans (items)", "num"), Col("items", "num"),
                 Col("judge runs", "num"), Col("Fleiss' kappa across runs", "num"), Col("items in all runs", "num"),
                 Col("unanimous share", "num")],
        rows=[[n, r.cohen_kappa, r.n_items, r.judge_runs, r.fleiss_kappa_runs, r.n_items_all_runs, r.unanimous_share]
              for n, r in zip(names, rep.rows)],
        notes=undefined_notes(rep, ["cohen_kappa", "fleiss_kappa_runs", "unanimous_share"]))
    return [corr, kappa]


def agreement_csv_table(rep: AgreementReport) -> TextTable:
    """One row per judge with every measure (correlations as coefficients, not x100)."""
    keys = ["spearman", "kendall", "pearson", "n", "n_items", "cohen_kappa", "judge_runs", "n_items_all_runs",
            "fleiss_kappa_runs", "unanimous_share", "other_answers", "records_not_in_run"]
    ends = [(m, i, f"{m}_ci95_{end}") for m in ("spearman", "kendall", "pearson") for i, end in enumerate(("lo", "hi"))]

    def cis(r: JudgeAgreement) -> list[float | None]:
        return [c[i] if (c := r.ci95.get(m)) is not None else None for m, i, _ in ends]

    return TextTable(columns=[Col("judge", "id"), Col("run_dir", "id"), Col("level", "text")]
                     + [Col(k, "num", digits=4) for k in keys + [key for *_, key in ends]],
                     rows=[[n, r.run_dir, r.level, *(getattr(r, k) for k in keys), *cis(r)]
                           for n, r in zip(_judge_names(rep), rep.rows)])


def agreement_markdown(rep: AgreementReport) -> str:
    return "\n".join(to_markdown(t) for t in agreement_tables(rep))


def command(
    run_dirs: Annotated[list[Path], typer.Argument(help="run directories, one per judge, of the same answers")],
    human: Annotated[Path, typer.Option(help="human scores: CSV/JSON/JSONL per (dialogue, turn) or per item")],
    level: Annotated[str, typer.Option(help="turn | dialogue (the paper's Table 3: dialogue)")] = "turn",
    bootstrap: Annotated[int, typer.Option(min=0, help="bootstrap draws for the CIs of the correlations (0: none)")
                         ] = 1000,
    seed: Annotated[int, typer.Option(help="random seed of the bootstrap")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the result as JSON here")] = None,
    output_format: FormatOption = OutputFormat.auto,
) -> None:
    """Judge-human agreement (Table 3: Spearman, Kendall-tau, Pearson with bootstrap CIs; one row per judge),
    Cohen's and Fleiss' kappa, and the agreement among the human raters (Krippendorff's alpha)."""
    if level not in ("turn", "dialogue"):
        raise ConfigError("--level must be turn or dialogue")
    rep = agreement_report(human, run_dirs, level, bootstrap=bootstrap, seed=seed)  # type: ignore[arg-type]
    if json_out:
        atomic_write_text(json_out, rep.model_dump_json(indent=2))
    tables = [agreement_csv_table(rep)] if output_format == OutputFormat.csv else agreement_tables(rep)
    print_tables(tables, output_format, json_obj=rep.model_dump(mode="json"))
