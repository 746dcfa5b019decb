"""Scores recomputed from what a run directory stores (no API calls): ``mtvbench score``, the end
of every run, and every report and analysis.

The store is read in one transaction (a consistent snapshot even while a run writes), and only
results whose fingerprint matches ``benchmark.json`` are scored (:mod:`mtvbench.run.identity`).
:func:`score_dir` writes ``scores.json``, ``leaderboard.md`` and ``responses.jsonl`` under the run
lock; while a run holds it, the scores of a consistent snapshot are returned and nothing is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtvbench.config import RunConfig
from mtvbench.data.schema import Task
from mtvbench.errors import BusyError, RunDirError
from mtvbench.records import JudgeVerdict
from mtvbench.render.leaderboard import leaderboard_markdown
from mtvbench.run.identity import Current, current_results
from mtvbench.run.lock import RunLock
from mtvbench.run.responses import responses_jsonl
from mtvbench.run.rundir import (
    RunSnapshot,
    SnapshotMemo,
    display_name,
    read_config,
    read_mark,
    read_snapshot,
    run_dir_path,
)
from mtvbench.run.store import FINAL_JUDGE, FINAL_OUTCOMES, RunStore
from mtvbench.scoring.aggregate import DialogueScore, Scores, compute_scores
from mtvbench.scoring.usage import usage_report
from mtvbench.util.files import atomic_write_text


def select_current(snap: RunSnapshot, context: str, store: RunStore, details: bool = True) -> Current:
    """The stored results that match ``snap`` (read inside one store snapshot by the caller; ``details``: the
    rows as :meth:`RunStore.response_rows` reads them)."""
    return current_results(snap.dialogues, context, snap.turn_keys, snap.judge_keys, store.response_rows(details),
                           store.verdict_rows(), FINAL_OUTCOMES, FINAL_JUDGE)


@dataclass
class ScoredRun:
    """Everything a run directory holds, rescored (no API calls)."""

    run_dir: Path
    config: RunConfig
    snapshot: RunSnapshot
    #: the current (fingerprint-matching) final responses, by turn id
    responses: dict[str, dict[str, Any]]
    #: every judge run of the current answers, whatever its status (for display)
    all_verdicts: dict[str, dict[int, JudgeVerdict]]
    #: the judge runs that count for scoring (ok/unparsed)
    verdicts: dict[str, dict[int, JudgeVerdict]]
    scores: Scores
    dscores: list[DialogueScore]


def load_scored(run_dir: Path, bootstrap: int | None = None, details: bool = True,
                memo: SnapshotMemo | None = None) -> ScoredRun:
    """Read a run directory and recompute its scores (no API calls).

    The store is read in one transaction (a consistent snapshot even while a run writes), and
    only results whose fingerprint matches ``benchmark.json`` are scored.

    Args:
        run_dir: a run directory written by :func:`mtvbench.evaluate`.
        bootstrap: bootstrap draws for the confidence intervals (default: the run's).
        details: read every column (the score files need them); without, only what scores and a report
            show (:meth:`RunStore.response_rows`): the same scores, read faster.
        memo: dialogues read before (:class:`~mtvbench.run.rundir.SnapshotMemo`: several runs of one benchmark).

    Returns:
        The settings, dialogues, current responses and verdicts, and the scores.

    Raises:
        RunDirError: not a run directory, another format, or a corrupt file."""
    run_dir = run_dir_path(run_dir)
    cfg = read_config(run_dir)
    snap = read_snapshot(run_dir, memo)
    store = RunStore(run_dir, create=False)
    try:
        with store.snapshot():
            cur = select_current(snap, cfg.context, store, details)
            calls, sessions = store.call_rows(), store.session_rows()
            left = store.resources_left(now=time.time())
            dataset = store.get_meta("dataset")
    finally:
        store.close()
    verdicts = cur.final_verdicts(FINAL_JUDGE)
    tasks = [Task(t) for t in snap.tasks] if snap.tasks else list(cfg.selected_tasks)
    scores, dscores = compute_scores(
        snap.dialogues, cur.responses, verdicts, model=cfg.model, judge=cfg.judge, judge_runs=cfg.judge_runs,
        context=cfg.context, bootstrap=cfg.bootstrap if bootstrap is None else bootstrap, seed=cfg.seed,
        tasks=tasks, limit=cfg.limit, stale=cur.stale_responses.keys(), protocol=cfg.protocol_name,
        inference=cfg.inference_label, preset_overrides=cfg.preset_overrides, not_a_benchmark=read_mark(run_dir),
        ablations=cfg.ablations)
    scores.counts.superseded_responses = cur.superseded_responses
    scores.counts.superseded_verdicts = cur.superseded_verdicts
    replaced = [rec.get("replaced_characters") or 0 for rec in cur.responses.values()]
    replaced += [v.replaced_characters for runs in cur.verdicts.values() for v in runs.values()]
    scores.counts.replies_with_replaced_characters = sum(1 for n in replaced if n)
    scores.counts.replaced_characters = sum(replaced)
    scores.usage = usage_report(calls, sessions, cfg.price)
    scores.left_on_server = left
    if cfg.limit is not None:
        scores.dialogues_in_data = _dialogues_in_data(run_dir, dataset)
    return ScoredRun(run_dir, cfg, snap, cur.responses, cur.verdicts, verdicts, scores, dscores)


def _dialogues_in_data(run_dir: Path, dataset: Any) -> int | None:
    """How many dialogues the run's dataset has for its tasks (the store's record of the dataset, checked; None
    when the store has none)."""
    if dataset is None:
        return None
    ids = dataset.get("dialogue_ids") if isinstance(dataset, dict) else None
    if not isinstance(ids, list):
        raise RunDirError(f"{run_dir / 'store.sqlite'}: table meta, row 'dataset': no list of dialogue ids")
    return len(ids)


@dataclass
class ScoreOutcome:
    scores: Scores
    dscores: list[DialogueScore]
    #: False when a run held the directory: scores computed from a consistent snapshot, no file written
    written: bool
    busy: str | None = None


def write_score_files(run: ScoredRun) -> None:
    """``responses.jsonl``, ``leaderboard.md``, then ``scores.json``: every text is made before the first file
    is written, and ``scores.json`` (the one that says ``complete``) is written last, so a failure or a kill in
    between never leaves a status next to files or a store it does not describe."""
    run_dir, cfg, snap, scores = run.run_dir, run.config, run.snapshot, run.scores
    note = None
    if cfg.judge == "offline":
        note = ("Judged by the offline lexical matcher: these numbers check the pipeline and are "
                "NOT comparable to the paper's (which uses Gemini-2.5-Flash as judge).")
    files = {"responses.jsonl": responses_jsonl(snap.dialogues, run.responses, run.verdicts, run.dscores),
             "leaderboard.md": leaderboard_markdown([(display_name(cfg), scores)], note),
             "scores.json": scores.model_dump_json(indent=2)}
    for name, text in files.items():
        atomic_write_text(run_dir / name, text)


def score_dir(run_dir: Path, lock: bool = True) -> ScoreOutcome:
    """Recompute scores from what is stored (no API calls) and write the score files.

    With ``lock`` (the ``score`` command) the run lock is taken without waiting; when a run
    holds it, the scores of a consistent snapshot are returned and no file is written (the
    run writes them when it finishes). ``lock=False`` is for the run itself, which holds it."""
    run_dir = run_dir_path(run_dir)
    read_config(run_dir)  # not a run directory (or another format): say so before taking any lock
    if not lock:
        run = load_scored(run_dir)
        write_score_files(run)
        return ScoreOutcome(run.scores, run.dscores, written=True)
    try:
        held = RunLock(run_dir, purpose="score").acquire(wait=False)
    except BusyError as e:
        run = load_scored(run_dir)
        return ScoreOutcome(run.scores, run.dscores, written=False, busy=e.message)
    with held:
        run = load_scored(run_dir)
        write_score_files(run)
    return ScoreOutcome(run.scores, run.dscores, written=True)


def score_run(run_dir: Path) -> tuple[Scores, list[DialogueScore]]:
    """:func:`score_dir` for callers that need only the scores."""
    out = score_dir(run_dir)
    return out.scores, out.dscores
