"""Judging another run's stored answers with another judge (``mtvbench run --answers-from RUN_DIR --judge J
--out RUN2``): the inputs of the paper's Table 3, several judges on the same answers, without asking the
model again.

- **Settings** (:func:`answer_settings`, :func:`check_given`): every setting is in one of three lists
  (:data:`ANSWER_KEYS`, :data:`ASKING_KEYS`, :data:`OWN_KEYS`). What made the answers (the dataset, the model
  label, its spec and settings, context, inference, frames, tasks) and how the model is asked (which this run
  never does) are RUN_DIR's, from its ``config.yaml``; a value given anyway, by flag or in ``--config``, must
  agree, else one error names each. The judge and its settings, the limit, seed, bootstrap, prices and the
  protocol are this run's (limit and protocol RUN_DIR's unless given; another protocol only where it asks the
  model what RUN_DIR asked). :func:`check_same_answers` compares the two runs' identities
  (:meth:`~mtvbench.config.RunConfig.identity`) and model labels for callers of the API.
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
from mtvbench.models.settings import settings_from_options
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.identity import RunKeys
from mtvbench.run.rundir import RunDirectory

#: How a run of stored answers treats each run setting: every field of :class:`RunConfig` is in exactly one of
#: these three (``tests/run/test_answers_from.py`` checks it, so a new setting cannot slip through).
#: The settings that made the answers: RUN_DIR's (the model label included); a value given must agree.
ANSWER_KEYS = ("data", "model", "model_spec", "model_settings", "context", "inference", "frames", "max_side",
               "frame_size", "jpeg_quality", "sampling", "clip_share", "frame_timestamps", "tasks", "preset_overrides")
#: How the model is asked, which a run of stored answers never does: RUN_DIR's recorded; a value given must agree.
ASKING_KEYS = ("videos_in_flight", "decode_workers", "cache_order", "cache_dir", "executor", "ray_address", "ray")
#: The settings this run uses: the judge, its settings and concurrency (``concurrency`` is the default of
#: ``judge_concurrency``), the scores' (``seed``, ``bootstrap``, ``prices``), where it is written, and ``limit`` and
#: ``protocol``, which are RUN_DIR's unless given (a protocol only where it asks the model what RUN_DIR asked).
OWN_KEYS = ("judge", "out", "judge_runs", "judge_max_attempts", "concurrency", "judge_concurrency", "judge_settings",
            "limit", "protocol", "seed", "bootstrap", "prices", "answers_from")
#: own settings that are RUN_DIR's unless given
INHERITED_KEYS = ("limit", "protocol")
#: identity keys that may differ between the two runs (the protocol is checked turn by turn: :func:`stored_answers`)
_FREE_IDENTITY = ("judge", "answers_from", "protocol", "inference")
#: the longest value a refusal quotes
_QUOTED = 60


def answer_settings(values: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """``values`` (settings of the new run) with RUN_DIR ``source``'s settings under them: those that made the
    answers and those of asking the model (:data:`ANSWER_KEYS`, :data:`ASKING_KEYS`), and its ``limit`` and
    ``protocol`` unless given. :func:`check_given` then refuses a given value that changes one of the first two."""
    source = Path(source).expanduser().resolve()
    if values.get("out") is not None and Path(values["out"]).expanduser().resolve() == source:
        raise ConfigError(f"--answers-from {source} is the run directory --out names: write the other judge's "
                          "run to another --out")
    src = RunDirectory.open(source).config()
    stored = json.loads(src.model_dump_json(include={*ANSWER_KEYS, *ASKING_KEYS, *INHERITED_KEYS}))
    return _merged(stored, values) | {"answers_from": str(source)}


def _merged(under: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``under``, section by section (a flag's ``model_settings.temperature`` changes that
    value, not the whole section)."""
    out = dict(under)
    for key, value in over.items():
        below = out.get(key)
        if key == "model_settings":  # an option that names a field (--model-option timeout_s=60) is that field
            value = settings_from_options(value)
        out[key] = _merged(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return out


def check_given(cfg: RunConfig, given: Mapping[str, Any], origins: Mapping[str, str], config: str | None) -> None:
    """One :class:`ConfigError` naming every setting given (a flag in ``origins``, else a key of the ``config``
    file in ``given``) that changes one of RUN_DIR's (:data:`ANSWER_KEYS`: the answers were made with it;
    :data:`ASKING_KEYS`: the model is asked nothing)."""
    assert cfg.answers_from is not None
    source = Path(cfg.answers_from)
    src = RunDirectory.open(source).config()
    lines = []
    for key in (*ANSWER_KEYS, *ASKING_KEYS):
        why = ("its answers were made with" if key in ANSWER_KEYS
               else "not used (the model is asked nothing); the recorded value is")
        for dotted, mine, theirs in _differences(key, _plain(getattr(cfg, key)), _plain(getattr(src, key))):
            name = _named(dotted, given, origins, config)
            lines.append(f"{name}: {_quoted(mine)}, but {why} {_quoted(theirs)}")
    if lines:
        raise ConfigError(f"--answers-from {source}: {len(lines)} setting(s) given that are that run's:\n"
                          + "\n".join(lines),
                          hint="leave them out: a run of stored answers takes them from the run directory the "
                               "answers come from (the model label included)")


def _plain(value: Any) -> Any:
    """A setting as compared: JSON values, a path resolved."""
    if isinstance(value, Path):
        return str(value.expanduser().resolve())
    return json.loads(json.dumps(value.model_dump(mode="json") if hasattr(value, "model_dump") else value,
                                 default=str))


def _differences(key: str, mine: Any, theirs: Any) -> list[tuple[str, Any, Any]]:
    """(dotted key, this run's value, RUN_DIR's) of every leaf where the two differ."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return [d for k in sorted(set(mine) | set(theirs))
                for d in _differences(f"{key}.{k}", mine.get(k), theirs.get(k))]
    return [] if mine == theirs else [(key, mine, theirs)]


def _named(dotted: str, given: Mapping[str, Any], origins: Mapping[str, str], config: str | None) -> str:
    """How the user gave ``dotted``: its flag, else the config file's key."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):  # the flag of the key or of a section above it (--model-option)
        if ".".join(parts[:n]) in origins:
            return origins[".".join(parts[:n])]
    if config is not None and parts[0] in given:
        return f"{config}: {dotted}"
    return dotted


def _quoted(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= _QUOTED else text[:_QUOTED - 1] + "…"


def check_same_answers(cfg: RunConfig, src: RunConfig) -> None:
    """One :class:`ConfigError` when ``cfg`` would make other answers than ``src``, or name them by another model
    (anything but the judge; the protocol is checked turn by turn)."""
    a, b = cfg.identity(), src.identity()
    diff = [k for k in sorted(set(a) | set(b)) if k not in _FREE_IDENTITY and a.get(k) != b.get(k)]
    diff += [k for k in ("model", "inference") if getattr(cfg, k) != getattr(src, k) and k not in diff]
    if diff:
        raise ConfigError(f"--answers-from {cfg.answers_from}: its answers were made with other settings ("
                          f"{', '.join(sorted(diff))} differ); the settings of the answers are that run's",
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
    source = Path(cfg.answers_from)
    run = RunDirectory.open(source).load(bootstrap=0, details=True)
    check_same_answers(cfg, run.config)
    snap = run.snapshot
    reads_golden = _reads_golden(source, run.config, snap.dialogues, snap.video_keys, snap.turn_keys)
    mine = RunKeys(cfg, video_keys, reads_golden=reads_golden).turn_keys(bench.dialogues)
    if cfg.protocol_name != run.config.protocol_name:
        _check_protocol(cfg, run.config, source, bench, mine, snap)
    answers = {tid: row for tid, row in run.responses.items() if tid in mine and snap.turn_keys.get(tid) == mine[tid]}
    return StoredAnswers(source, answers, reads_golden)


def _check_protocol(cfg: RunConfig, src: RunConfig, source: Path, bench: Benchmark, mine: Mapping[str, str],
                    snap: Any) -> None:
    """Another protocol judges RUN_DIR's answers only where it asks the model what RUN_DIR asked: every turn it
    asks in a dialogue RUN_DIR evaluated has RUN_DIR's input key (the same rounds, prompts and history)."""
    asked = {d.id for d in snap.dialogues}
    turns = {d.turn_id(r.index) for d in bench.dialogues if d.id in asked for r in d.rounds}
    other = sorted(t for t in turns if t in mine and snap.turn_keys.get(t) != mine[t])
    if other:
        raise ConfigError(f"--protocol {cfg.protocol_name}: {len(other)} turn(s) it asks the model (e.g. {other[0]}) "
                          f"{source} did not ask with that input (it ran --protocol {src.protocol_name}, inference "
                          f"{src.inference}): its answers cannot be judged under --protocol {cfg.protocol_name}",
                          hint=f"leave --protocol out: the run then judges under {src.protocol_name}, as {source} did")


def _reads_golden(source: Path, src: RunConfig, dialogues: list, video_keys: Mapping[str, str],
                  turn_keys: Mapping[str, str]) -> bool:
    """Whether the source's model read the golden answer (its fingerprints then include it). Both key rules
    are tried; the rule that gives the source's own ``benchmark.json`` keys back from its dialogues says which."""
    for reads in (False, True):
        if RunKeys(src, video_keys, reads_golden=reads).turn_keys(dialogues) == dict(turn_keys):
            return reads
    raise ConfigError(f"--answers-from {source}: its benchmark.json keys cannot be computed again (written by "
                      "another mtvbench version?): its answers cannot be matched to turns",
                      hint="score it with this mtvbench (`mtvbench score`), or run it again with this version")
