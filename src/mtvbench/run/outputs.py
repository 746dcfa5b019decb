"""Everything a run directory holds besides the store, written atomically.

``config.yaml`` (resolved settings, no secrets), ``benchmark.json`` (the evaluated
dialogues, so ``score``/``report`` need neither the dataset nor any API), and after scoring
``scores.json``, ``leaderboard.md`` and ``responses.jsonl``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from mtvbench.config import RunConfig
from mtvbench.data.schema import Dialogue
from mtvbench.errors import RunDirError
from mtvbench.judge.checklist import JudgeVerdict
from mtvbench.report.leaderboard import leaderboard_markdown
from mtvbench.run.store import RunStore
from mtvbench.scoring.aggregate import DialogueScore, Scores, compute_scores


class RunSnapshot(BaseModel):
    dialogues: list[Dialogue]
    videos: dict[str, str]


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_config(run_dir: Path, cfg: RunConfig) -> None:
    data = json.loads(cfg.model_dump_json())
    atomic_write(run_dir / "config.yaml", yaml.safe_dump(data, sort_keys=False))


def read_config(run_dir: Path) -> RunConfig:
    path = run_dir / "config.yaml"
    if not path.exists():
        raise RunDirError(f"{path}: missing (is {run_dir} a run directory?)")
    return RunConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def write_snapshot(run_dir: Path, dialogues: list[Dialogue], videos: dict[str, Path]) -> None:
    snap = RunSnapshot(dialogues=dialogues, videos={k: str(v) for k, v in videos.items()})
    atomic_write(run_dir / "benchmark.json", snap.model_dump_json())


def read_snapshot(run_dir: Path) -> RunSnapshot:
    path = run_dir / "benchmark.json"
    if not path.exists():
        raise RunDirError(f"{path}: missing (is {run_dir} a run directory?)")
    return RunSnapshot.model_validate_json(path.read_text(encoding="utf-8"))


def display_name(cfg: RunConfig) -> str:
    return cfg.model if cfg.context == "golden" else f"{cfg.model} [{cfg.context} context]"


@dataclass
class ScoredRun:
    """Everything a run directory holds, rescored (no API calls)."""

    run_dir: Path
    config: RunConfig
    snapshot: RunSnapshot
    responses: dict[str, dict[str, Any]]
    all_verdicts: dict[str, dict[int, JudgeVerdict]]
    verdicts: dict[str, dict[int, JudgeVerdict]]
    scores: Scores
    dscores: list[DialogueScore]


def load_scored(run_dir: Path, bootstrap: int | None = None) -> ScoredRun:
    """Read a run directory and recompute its scores; ``bootstrap`` overrides the CI draws."""
    run_dir = Path(run_dir)
    cfg = read_config(run_dir)
    snap = read_snapshot(run_dir)
    store = RunStore(run_dir, create=False)
    try:
        responses = store.final_responses()
        all_verdicts = store.verdicts()
        verdicts = store.final_verdicts()
    finally:
        store.close()
    scores, dscores = compute_scores(
        snap.dialogues, responses, verdicts, model=cfg.model, judge=cfg.judge, judge_runs=cfg.judge_runs,
        context=cfg.context, bootstrap=cfg.bootstrap if bootstrap is None else bootstrap, seed=cfg.seed)
    return ScoredRun(run_dir, cfg, snap, responses, all_verdicts, verdicts, scores, dscores)


def score_run(run_dir: Path) -> tuple[Scores, list[DialogueScore]]:
    """Recompute scores from what is stored and write the score files. No API calls."""
    run = load_scored(run_dir)
    run_dir, cfg, snap = run.run_dir, run.config, run.snapshot
    responses, verdicts, scores, dscores = run.responses, run.verdicts, run.scores, run.dscores
    atomic_write(run_dir / "scores.json", scores.model_dump_json(indent=2))
    note = None
    if cfg.judge == "offline":
        note = ("Judged by the offline lexical matcher: these numbers check the pipeline and are "
                "NOT comparable to the paper's (which uses Gemini-2.5-Flash as judge).")
    atomic_write(run_dir / "leaderboard.md", leaderboard_markdown([(display_name(cfg), scores)], note))
    atomic_write(run_dir / "responses.jsonl", _responses_jsonl(snap.dialogues, responses, verdicts, dscores))
    return scores, dscores


def _responses_jsonl(dialogues: list[Dialogue], responses: dict[str, Any], verdicts: dict[str, Any],
                     dscores: list[DialogueScore]) -> str:
    turn_scores = {t.turn_id: t for ds in dscores for t in ds.turns}
    lines = []
    for d in dialogues:
        for r in d.rounds:
            tid = d.turn_id(r.index)
            rec = responses.get(tid)
            if rec is None and not r.scored:
                continue
            ts = turn_scores.get(tid)
            runs = verdicts.get(tid, {})
            lines.append(json.dumps({
                "turn_id": tid, "task": d.task.value, "video": d.video, "event": d.event, "round": r.index,
                "ability": r.ability, "model_turn": r.model_turn, "scored": r.scored,
                "question": r.user, "golden_answer": r.assistant,
                "answer": rec["text"] if rec else None, "raw_answer": rec["raw_text"] if rec else None,
                "reasoning": rec["reasoning"] if rec else None, "outcome": rec["outcome"] if rec else "missing",
                "usage": rec["usage"] if rec else None,
                "checklist": [{"key": it.key, "question": it.question, "expected": it.expected} for it in
                              (r.checklist or [])],
                "judge_runs": [{"run": v.run, "status": v.status, "verdicts": v.verdicts} for _, v in
                               sorted(runs.items())],
                "turn_score": None if ts is None or ts.score is None else 100.0 * ts.score,
            }, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
