"""Everything a run directory holds besides the store, written atomically with the user's umask.

``config.yaml`` (resolved settings, no secrets), ``benchmark.json`` (the evaluated
dialogues and the fingerprint keys every stored result must match, so ``score``/``report``
need neither the dataset nor any API), and after scoring ``scores.json``,
``leaderboard.md`` and ``responses.jsonl``. ``config.yaml``, ``benchmark.json`` and the
store carry ``schema_version`` and ``mtvbench_version``: a run directory of another format
is refused with the file, the version found and the one expected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from mtvbench import __version__
from mtvbench.config import RECORD_KEYS, RUN_SCHEMA_VERSION, RunConfig
from mtvbench.data.schema import Benchmark, Dialogue, Task
from mtvbench.errors import BusyError, InputError, RunDirError
from mtvbench.judge.checklist import JudgeVerdict
from mtvbench.report.leaderboard import leaderboard_markdown
from mtvbench.run.identity import Current, RunKeys, current_results
from mtvbench.run.lock import RunLock
from mtvbench.run.store import FINAL_JUDGE, FINAL_OUTCOMES, RunStore
from mtvbench.scoring.aggregate import DialogueScore, Scores, compute_scores
from mtvbench.scoring.usage import usage_report
from mtvbench.util.files import atomic_write_text, read_bytes_capped
from mtvbench.util.jsonio import load_json_file

#: kept for the modules that import the writer from here; it is :func:`mtvbench.util.files.atomic_write_text`
atomic_write = atomic_write_text
#: the largest config.yaml we read
MAX_CONFIG_BYTES = 8 << 20


class RunSnapshot(BaseModel):
    """``benchmark.json``: what was evaluated, and the key every stored result must match."""

    schema_version: int = RUN_SCHEMA_VERSION
    mtvbench_version: str = __version__
    data_root: str = ""
    tasks: list[str] = Field(default_factory=list)
    dialogues: list[Dialogue]
    videos: dict[str, str]
    #: video name -> content key (media.cache.fingerprint)
    video_keys: dict[str, str] = Field(default_factory=dict)
    #: turn id -> input key of every round the model is asked (see run.identity)
    turn_keys: dict[str, str] = Field(default_factory=dict)
    #: turn id -> judge key of every scored turn
    judge_keys: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, cfg: RunConfig, bench: Benchmark, keys: RunKeys) -> RunSnapshot:
        return cls(data_root=str(bench.root), tasks=[t.value for t in cfg.selected_tasks], dialogues=bench.dialogues,
                   videos={k: str(v) for k, v in bench.videos.items()}, video_keys=keys.video_keys,
                   turn_keys=keys.turn_keys(bench.dialogues), judge_keys=keys.judge_keys(bench.dialogues))


def run_dir_path(run_dir: Path) -> Path:
    """A run directory to read: a file is one clear error (a missing one is reported by read_config)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: is a file, not a run directory")
    return run_dir


def _other_format(path: Path, found: Any, made_by: Any) -> RunDirError:
    return RunDirError(
        f"{path}: run-directory format {found if found is not None else 1} (written by "
        f"{made_by or 'an mtvbench before 0.2'}); this mtvbench ({__version__}) reads format {RUN_SCHEMA_VERSION}",
        hint="evaluate into a new --out, or use the mtvbench version that wrote this run directory")


def write_config(run_dir: Path, cfg: RunConfig) -> None:
    """Settings (no secrets) plus the format, the version and the base URL each role really calls
    (also when it came from ``OPENAI_BASE_URL`` or the provider's default; null for local backends)."""
    from mtvbench.models.endpoints import effective_base_url

    endpoints = {"model": effective_base_url(cfg.backend_spec, cfg.model_settings.backend_options()),
                 "judge": effective_base_url(cfg.judge, cfg.judge_settings.backend_options())}
    data = {"schema_version": RUN_SCHEMA_VERSION, "mtvbench_version": __version__, "endpoints": endpoints,
            **json.loads(cfg.model_dump_json())}
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(data, sort_keys=False))


def read_config(run_dir: Path) -> RunConfig:
    path = run_dir / "config.yaml"
    if not path.exists():
        raise RunDirError(f"{path}: missing (is {run_dir} a run directory?)")
    try:
        data = yaml.safe_load(read_bytes_capped(path, MAX_CONFIG_BYTES, "config.yaml").decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise RunDirError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: not a run configuration (expected a mapping of settings)")
    if data.get("schema_version") != RUN_SCHEMA_VERSION:
        raise _other_format(path, data.get("schema_version"), data.get("mtvbench_version"))
    for key in RECORD_KEYS:
        data.pop(key, None)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        fields = "; ".join(f"field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors())
        raise RunDirError(f"{path}: {fields}") from e


def write_snapshot(run_dir: Path, snapshot: RunSnapshot) -> None:
    atomic_write_text(run_dir / "benchmark.json", snapshot.model_dump_json())


def read_snapshot(run_dir: Path) -> RunSnapshot:
    path = run_dir / "benchmark.json"
    if not path.exists():
        raise RunDirError(f"{path}: missing (is {run_dir} a run directory?)")
    try:
        data = load_json_file(path)
    except InputError as e:
        raise RunDirError(e.message) from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: not a benchmark snapshot (expected a JSON object)")
    if data.get("schema_version") != RUN_SCHEMA_VERSION:
        raise _other_format(path, data.get("schema_version"), data.get("mtvbench_version"))
    try:
        return RunSnapshot.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise RunDirError(f"{path}: field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']} "
                          f"({e.error_count()} problem(s))") from e


def display_name(cfg: RunConfig) -> str:
    return cfg.model if cfg.context == "golden" else f"{cfg.model} [{cfg.context} context]"


def select_current(snap: RunSnapshot, context: str, store: RunStore) -> Current:
    """The stored results that match ``snap`` (read inside one store snapshot by the caller)."""
    return current_results(snap.dialogues, context, snap.turn_keys, snap.judge_keys, store.response_rows(),
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


def load_scored(run_dir: Path, bootstrap: int | None = None) -> ScoredRun:
    """Read a run directory and recompute its scores; ``bootstrap`` overrides the CI draws.

    The store is read in one transaction (a consistent snapshot even while a run writes), and
    only results whose fingerprint matches ``benchmark.json`` are scored."""
    run_dir = run_dir_path(run_dir)
    cfg = read_config(run_dir)
    snap = read_snapshot(run_dir)
    store = RunStore(run_dir, create=False)
    try:
        with store.snapshot():
            cur = select_current(snap, cfg.context, store)
            calls, sessions = store.call_rows(), store.session_rows()
    finally:
        store.close()
    verdicts = cur.final_verdicts(FINAL_JUDGE)
    tasks = [Task(t) for t in snap.tasks] if snap.tasks else list(cfg.selected_tasks)
    scores, dscores = compute_scores(
        snap.dialogues, cur.responses, verdicts, model=cfg.model, judge=cfg.judge, judge_runs=cfg.judge_runs,
        context=cfg.context, bootstrap=cfg.bootstrap if bootstrap is None else bootstrap, seed=cfg.seed,
        tasks=tasks, limit=cfg.limit, stale=cur.stale_responses.keys())
    scores.counts.superseded_responses = cur.superseded_responses
    scores.counts.superseded_verdicts = cur.superseded_verdicts
    scores.usage = usage_report(calls, sessions, cfg.price)
    return ScoredRun(run_dir, cfg, snap, cur.responses, cur.verdicts, verdicts, scores, dscores)


@dataclass
class ScoreOutcome:
    scores: Scores
    dscores: list[DialogueScore]
    #: False when a run held the directory: scores computed from a consistent snapshot, no file written
    written: bool
    busy: str | None = None


def write_score_files(run: ScoredRun) -> None:
    run_dir, cfg, snap, scores = run.run_dir, run.config, run.snapshot, run.scores
    atomic_write_text(run_dir / "scores.json", scores.model_dump_json(indent=2))
    note = None
    if cfg.judge == "offline":
        note = ("Judged by the offline lexical matcher: these numbers check the pipeline and are "
                "NOT comparable to the paper's (which uses Gemini-2.5-Flash as judge).")
    atomic_write_text(run_dir / "leaderboard.md", leaderboard_markdown([(display_name(cfg), scores)], note))
    atomic_write_text(run_dir / "responses.jsonl",
                      _responses_jsonl(snap.dialogues, run.responses, run.verdicts, run.dscores))


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
                "usage": rec["usage"] if rec else None, "fingerprint": rec["fingerprint"] if rec else None,
                "checklist": [{"key": it.key, "question": it.question, "expected": it.expected} for it in
                              (r.checklist or [])],
                "judge_runs": [{"run": v.run, "status": v.status, "verdicts": v.verdicts} for _, v in
                               sorted(runs.items())],
                "turn_score": None if ts is None or ts.score is None else 100.0 * ts.score,
            }, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
