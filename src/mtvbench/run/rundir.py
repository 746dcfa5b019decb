"""The run-directory format: ``config.yaml`` and ``benchmark.json``, written atomically with the
user's umask, read back strictly.

``config.yaml`` holds the resolved settings (no secrets) plus the format, the version that wrote
it and the base URL each role really called; ``benchmark.json`` (:class:`RunSnapshot`) the
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
from mtvbench.data.schema import Benchmark, Dialogue
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
            "inference_sent": cfg.inference_label, **json.loads(cfg.model_dump_json())}
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
    _upgrade(path, data)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        fields = "; ".join(f"field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors())
        raise RunDirError(f"{path}: {fields}") from e


def _upgrade(path: Path, data: dict[str, Any]) -> None:
    """A config.yaml written before protocols existed: its run is ``paper`` (Figure 15 with the paper's
    judge and scoring). One made with the removed ``prompt_style: authors`` (the Qwen script's prompt
    with the paper's judge) is neither protocol: refused with what to do."""
    style = data.pop("prompt_style", "paper")
    if style != "paper":
        raise RunDirError(f"{path}: this run was made with --prompt-style {style}, which mtvbench no longer has "
                          "(the Qwen script's prompt with the paper's judge and scoring)",
                          hint="evaluate into a new --out with --protocol authors (the authors' released code) or "
                               "--protocol paper")
    data.setdefault("protocol", "paper")


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
