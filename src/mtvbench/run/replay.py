"""Judging another run's stored answers with another judge (``mtvbench run --answers-from RUN_DIR --judge J
--out RUN2``): the inputs of the paper's Table 3, several judges on the same answers, without asking the
model again.

- **Settings** (:func:`answer_settings`): what made the answers (the dataset, the model and its settings,
  context, protocol, inference, frames, tasks, limit) is RUN_DIR's, from its ``config.yaml``; a value given
  anyway must agree. :func:`check_same_answers` compares the two runs' identities
  (:meth:`~mtvbench.config.RunConfig.identity`): only the judge may differ.
- **The model** is a :class:`StoredAnswers` backend: it answers each turn with RUN_DIR's stored final answer
  when RUN_DIR asked that turn with the same input (the input keys of the two ``benchmark.json`` agree: same
  dataset text, video content and settings), and makes no call (0 requests, 0 tokens, no frame decoded).
  Each answer records where it came from (its ``inputs``: the run directory and the answer's fingerprint).
  A turn RUN_DIR has no such answer for is an error result: the run is INCOMPLETE, says why, and asks for it
  again on resume (when RUN_DIR has it by then).
- **Identity**: ``answers_from`` is part of RUN2's identity, so RUN2 resumes only from the same run
  directory and never turns into a run that asks the model; resume, the lock, INCOMPLETE and the score
  files are those of any run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtvbench.config import RunConfig
from mtvbench.data.schema import Benchmark
from mtvbench.errors import ConfigError
from mtvbench.models.backend import BackendBase
from mtvbench.models.resilience import CircuitBreaker
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.identity import RunKeys
from mtvbench.run.rescore import load_scored
from mtvbench.run.rundir import read_config, run_dir_path

#: the settings that made the answers: taken from the run directory the answers come from
ANSWER_KEYS = ("data", "model", "model_spec", "model_settings", "context", "protocol", "inference", "frames",
               "max_side", "frame_size", "jpeg_quality", "tasks", "limit", "preset_overrides")
#: identity keys that may differ between the two runs
OWN_KEYS = ("judge", "answers_from")


def answer_settings(values: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """``values`` (settings of the new run) with the answers' settings of the run directory ``source`` under
    them: what is not given is ``source``'s."""
    source = Path(source).expanduser().resolve()
    if values.get("out") is not None and Path(values["out"]).expanduser().resolve() == source:
        raise ConfigError(f"--answers-from {source} is the run directory --out names: write the other judge's "
                          "run to another --out")
    src = read_config(run_dir_path(source))
    stored = json.loads(src.model_dump_json(include=set(ANSWER_KEYS)))
    return stored | dict(values) | {"answers_from": str(source)}


def check_same_answers(cfg: RunConfig, src: RunConfig) -> None:
    """One :class:`ConfigError` when ``cfg`` would make other answers than ``src`` (anything but the judge)."""
    a, b = cfg.identity(), src.identity()
    diff = [k for k in sorted(set(a) | set(b)) if k not in OWN_KEYS and a.get(k) != b.get(k)]
    if diff:
        raise ConfigError(f"--answers-from {cfg.answers_from}: its answers were made with other settings ("
                          f"{', '.join(diff)} differ); the settings of the answers are that run's",
                          hint="leave those settings out: they are taken from the run directory")


class StoredAnswers(BackendBase):
    """The model of a run with ``answers_from``: another run's stored answers, no call (module docstring)."""

    needs_frames = False

    def __init__(self, source: Path, answers: dict[str, dict[str, Any]], reads_golden: bool):
        self.source = source
        self.name = f"answers of {source}"
        self.answers = answers
        self.reads_golden_answer = reads_golden
        #: a missing answer is not a failing endpoint: this breaker never opens
        self.breaker = CircuitBreaker(self.name, None, threshold=2**62)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        row = self.answers.get(request.id)
        if row is None:
            return GenerationResult(outcome="error", attempts=0, error=(
                f"{self.source} has no final answer to {request.id} for the same input (the dataset text, the "
                "video or a setting changed, or that run has not answered it yet)"))
        return GenerationResult(text=row["text"], raw_text=row["raw_text"], reasoning=row["reasoning"],
                                outcome=row["outcome"], attempts=0,
                                replaced_characters=row.get("replaced_characters") or 0,  # the source's count
                                inputs={"answers_from": str(self.source), "fingerprint": row["fingerprint"]})


def stored_answers(cfg: RunConfig, bench: Benchmark, video_keys: Mapping[str, str]) -> StoredAnswers:
    """The :class:`StoredAnswers` of ``cfg.answers_from`` for the turns of ``bench``: a turn's answer is used
    when the source asked it with the input key this run computes for it."""
    assert cfg.answers_from is not None
    source = run_dir_path(Path(cfg.answers_from))
    run = load_scored(source, bootstrap=0)
    check_same_answers(cfg, run.config)
    snap = run.snapshot
    reads_golden = _reads_golden(source, run.config, snap.dialogues, snap.video_keys, snap.turn_keys)
    mine = RunKeys(cfg, video_keys, reads_golden=reads_golden).turn_keys(bench.dialogues)
    answers = {tid: row for tid, row in run.responses.items() if tid in mine and snap.turn_keys.get(tid) == mine[tid]}
    return StoredAnswers(source, answers, reads_golden)


def _reads_golden(source: Path, src: RunConfig, dialogues: list, video_keys: Mapping[str, str],
                  turn_keys: Mapping[str, str]) -> bool:
    """Whether the source's model read the golden answer (its fingerprints have it): the one of the two key
    rules that gives the source's own ``benchmark.json`` keys back from its own dialogues."""
    for reads in (False, True):
        if RunKeys(src, video_keys, reads_golden=reads).turn_keys(dialogues) == dict(turn_keys):
            return reads
    raise ConfigError(f"--answers-from {source}: its benchmark.json keys cannot be computed again (written by "
                      "another mtvbench version?): its answers cannot be matched to turns",
                      hint="score it with this mtvbench (`mtvbench score`), or run it again with this version")
