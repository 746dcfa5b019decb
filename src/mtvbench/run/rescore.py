"""The score files of a run directory, recomputed from what it stores (no API calls): ``mtvbench score`` and
the end of every run.

The scores are :meth:`mtvbench.run.rundir.RunDirectory.load`'s (one store transaction, only results whose
fingerprint matches ``benchmark.json``). :func:`score_dir` writes ``scores.json``, ``leaderboard.md`` and
``responses.jsonl`` under the run lock; while a run holds it, the scores of a consistent snapshot are returned
and nothing is written. Either way what a report keeps of the run is kept for the next report
(:mod:`mtvbench.run.reportcache`), so a report of finished runs does not read them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mtvbench.errors import BusyError
from mtvbench.render.leaderboard import leaderboard_markdown
from mtvbench.run.reportcache import read_whole
from mtvbench.run.responses import responses_jsonl
from mtvbench.run.rundir import RunData, RunDirectory, display_name
from mtvbench.scoring.aggregate import DialogueScore, Scores
from mtvbench.util.files import atomic_write_text


@dataclass
class ScoreOutcome:
    scores: Scores
    dscores: list[DialogueScore]
    #: False when a run held the directory: scores computed from a consistent snapshot, no file written
    written: bool
    busy: str | None = None


def write_score_files(run: RunData) -> None:
    """``responses.jsonl``, ``leaderboard.md``, then ``scores.json``: every text is made before the first file
    is written, and ``scores.json`` (the file that says ``complete``) is written last, so a failure or a kill in
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
    rundir = RunDirectory.open(run_dir)
    rundir.config()  # not a run directory (or another format): say so before taking any lock
    if not lock:
        run, _ = read_whole(rundir, details=True)
        write_score_files(run)
        return ScoreOutcome(run.scores, run.dscores, written=True)
    try:
        held = rundir.lock(purpose="score")
    except BusyError as e:
        run, _ = read_whole(rundir, details=True)
        return ScoreOutcome(run.scores, run.dscores, written=False, busy=e.message)
    with held:
        run, _ = read_whole(rundir, details=True)
        write_score_files(run)
    return ScoreOutcome(run.scores, run.dscores, written=True)

