"""The run-directory format: ``config.yaml`` and ``benchmark.json``, written atomically with the
user's umask, read back strictly.

``config.yaml`` holds the resolved settings (no secrets) plus the format, the version that wrote
it, the base URL each role really called and why the data is not a real benchmark
(``not_a_benchmark``); ``benchmark.json`` (:class:`RunSnapshot`) the
evaluated dialogues and the fingerprint keys every stored result must match, so ``score`` and
``report`` need neither the dataset nor any API. Both carry ``schema_version`` and
``mtvbench_version`` (as does the store, :mod:`mtvbench.run.store`): a run directory of another
format is refused with the file, the version found and the one expected. The score files
written after scoring are :mod:`mtvbench.run.rescore`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from mtvbench._version import __version__
from mtvbench.config import RECORD_KEYS, RUN_SCHEMA_VERSION, RunConfig
from mtvbench.data.schema import Benchmark, Dialogue, NotABenchmark
from mtvbench.errors import InputError, RunDirError
from mtvbench.run.identity import RunKeys
from mtvbench.scoring.aggregate import modified_name
from mtvbench.util.files import atomic_write_text, read_bytes_capped
from mtvbench.util.jsonio import load_json_file

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
        f"{path}: run-directory format {found if found is not None else 'not recorded'} (written by "
        f"{made_by or 'an mtvbench that did not record its version'}); this mtvbench ({__version__}) reads format "
        f"{RUN_SCHEMA_VERSION}",
        hint="evaluate into a new --out, or use the mtvbench version that wrote this run directory")


def write_config(run_dir: Path, cfg: RunConfig, not_a_benchmark: NotABenchmark | None = None) -> None:
    """Settings (no secrets) plus the format, the version and the base URL each role really calls
    (also when it came from ``OPENAI_BASE_URL`` or the provider's default; null for local backends), and why
    the data is not a real benchmark (``not_a_benchmark``: null for a real one). The recorded keys
    (:data:`~mtvbench.config.RECORD_KEYS`) are dropped when the file is given back to ``--config``."""
    from mtvbench.models.endpoints import effective_base_url

    endpoints = {"model": effective_base_url(cfg.backend_spec, cfg.model_settings.backend_options()),
                 "judge": effective_base_url(cfg.judge, cfg.judge_settings.backend_options())}
    data = {"schema_version": RUN_SCHEMA_VERSION, "mtvbench_version": __version__, "endpoints": endpoints,
            "inference_sent": cfg.inference_label,
            "not_a_benchmark": not_a_benchmark.model_dump() if not_a_benchmark is not None else None,
            **json.loads(cfg.model_dump_json())}
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(data, sort_keys=False))


def read_config(run_dir: Path) -> RunConfig:
    """The settings of the run directory (its recorded keys dropped; :func:`read_mark` reads the mark)."""
    data = _config_data(run_dir)
    path = run_dir / "config.yaml"
    for key in RECORD_KEYS:
        data.pop(key, None)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        fields = "; ".join(f"field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors())
        raise RunDirError(f"{path}: {fields}") from e


def read_mark(run_dir: Path) -> NotABenchmark | None:
    """Why the run's data is not a real benchmark, as its ``config.yaml`` recorded it (None: a real one)."""
    path = run_dir / "config.yaml"
    found = _config_data(run_dir).get("not_a_benchmark")
    if found is None:
        return None
    try:
        return NotABenchmark.model_validate(found)
    except ValidationError as e:
        raise RunDirError(f"{path}: field 'not_a_benchmark': {e.errors()[0]['msg']}") from e


def _config_data(run_dir: Path) -> dict[str, Any]:
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
    return data


def write_snapshot(run_dir: Path, snapshot: RunSnapshot) -> None:
    atomic_write_text(run_dir / "benchmark.json", snapshot.model_dump_json())


class SnapshotMemo:
    """The dialogues of the snapshots read so far, as read and validated: a report over many runs of one
    benchmark validates its dialogues once (a snapshot whose ``dialogues`` equal an earlier one's gets the
    same :class:`Dialogue` objects, which nobody changes: a protocol makes copies)."""

    def __init__(self) -> None:
        self._seen: list[tuple[list[Any], list[Dialogue]]] = []

    def dialogues(self, raw: Any) -> list[Dialogue] | None:
        return next((done for seen, done in self._seen if seen == raw), None)

    def remember(self, raw: list[Any], dialogues: list[Dialogue]) -> None:
        self._seen.append((raw, dialogues))


def read_snapshot(run_dir: Path, memo: SnapshotMemo | None = None) -> RunSnapshot:
    """``benchmark.json`` of ``run_dir``, validated (``memo``: dialogues validated before are not again)."""
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
    known = memo.dialogues(data.get("dialogues")) if memo is not None else None
    try:
        if known is None:
            snap = RunSnapshot.model_validate(data)
            if memo is not None:
                memo.remember(data["dialogues"], snap.dialogues)
            return snap
        snap = RunSnapshot.model_validate({**data, "dialogues": []})
        snap.dialogues = known
        return snap
    except ValidationError as e:
        err = e.errors()[0]
        raise RunDirError(f"{path}: field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']} "
                          f"({e.error_count()} problem(s))") from e


def display_name(cfg: RunConfig) -> str:
    """The run's name in tables: the model, marked when preset values were overridden or the context
    is not the golden one."""
    name = modified_name(cfg.model, cfg.preset_overrides)
    return name if cfg.context == "golden" else f"{name} [{cfg.context} context]"
