"""The run directory (``--out``) and its one owner, :class:`RunDirectory`.

A run directory holds

- ``config.yaml``: the resolved settings (no secrets) plus what :data:`~mtvbench.config.RECORD_KEYS` lists:
  the format, the version that wrote it, the base URL each role really called, what the model was sent and
  why the data is not a real benchmark (``not_a_benchmark``). This module is the only reader of the file:
  strictly (size-capped, UTF-8 YAML, its format checked) for scoring and analyses, and leniently for the
  protocol a new run in the same directory keeps (:meth:`RunDirectory.recorded_protocol`, asked once, where
  the settings are made: :func:`mtvbench.run.settings.build_config`);
- ``benchmark.json`` (:class:`RunSnapshot`): the evaluated dialogues and the key every stored result must
  match, so ``score`` and ``report`` need neither the dataset nor any API;
- ``store.sqlite`` (:class:`~mtvbench.run.store.RunStore`): every call and result, committed as it arrives;
- ``run.lock`` (:class:`~mtvbench.run.lock.RunLock`): one writer at a time.

Each carries ``schema_version`` and ``mtvbench_version``: a run directory of another format is refused with
the file, the version found and the version expected.

**Detection** is one rule (:meth:`RunDirectory.detect`): a folder with all three files is a run directory, a
folder with none of them is not one, and a folder with some but not all is refused with the first file
missing. ``score``, ``report``, ``compare``, ``agreement``, ``sweep``, ``stats``, ``estimate``, the review app
and ``run --answers-from`` all ask it.

**Loading** (:meth:`RunDirectory.load`) gives :class:`RunData`, the only record of a loaded run: the settings,
the snapshot, the current results and the scores recomputed from them (no API calls). The score files written
from it are :mod:`mtvbench.run.rescore`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from mtvbench._version import __version__
from mtvbench.config import RECORD_KEYS, RUN_SCHEMA_VERSION, RunConfig
from mtvbench.data.schema import Benchmark, Dialogue, NotABenchmark, Task
from mtvbench.errors import InputError, OutputError, RunDirError
from mtvbench.protocol import ProtocolName
from mtvbench.records import JudgeVerdict
from mtvbench.run.identity import RunKeys, current_results
from mtvbench.run.lock import RunLock
from mtvbench.run.store import FINAL_JUDGE, FINAL_OUTCOMES, RunStore
from mtvbench.scoring.aggregate import DialogueScore, Scores, compute_scores, modified_name
from mtvbench.scoring.usage import usage_report
from mtvbench.util.files import atomic_write_text, ensure_dir, read_bytes_capped
from mtvbench.util.jsonio import MAX_JSON_BYTES, decode_utf8, loads_strict

#: the largest config.yaml we read
MAX_CONFIG_BYTES = 8 << 20
#: a note to the user: (what, text), as :meth:`mtvbench.dispatch.Progress.note` takes it
Note = Callable[[str, str], None]


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


@dataclass
class RunData:
    """A loaded run directory, rescored (no API calls): what ``score``, ``report``, every analysis, the review
    app's run source, ``sweep`` and ``run --answers-from`` read of a run."""

    run_dir: Path
    config: RunConfig
    snapshot: RunSnapshot
    #: the current (fingerprint-matching) final responses (outcome ok/blocked/empty), by turn id
    responses: dict[str, dict[str, Any]]
    #: every judge run of the current answers, whatever its status (for display)
    all_verdicts: dict[str, dict[int, JudgeVerdict]]
    #: the judge runs that count for scoring (ok/unparsed)
    verdicts: dict[str, dict[int, JudgeVerdict]]
    scores: Scores
    dscores: list[DialogueScore]
    #: the run's name in tables when given (``report --label``); else :func:`display_name`
    label: str = field(default="")

    @property
    def dialogues(self) -> list[Dialogue]:
        return self.snapshot.dialogues

    @cached_property
    def videos(self) -> dict[str, Path]:
        return {k: Path(v) for k, v in self.snapshot.videos.items()}

    @property
    def name(self) -> str:
        return self.label or display_name(self.config)

    @cached_property
    def dialogue_score(self) -> dict[str, DialogueScore]:
        return {ds.dialogue_id: ds for ds in self.dscores}

    @cached_property
    def dialogue_by_id(self) -> dict[str, Dialogue]:
        return {d.id: d for d in self.dialogues}


class RunDirectory:
    """The single owner of a run directory: its files, its lock, its format and identity checks, whether a folder
    is one (:meth:`detect`) and loading it (:meth:`load`). See the module docstring for the files."""

    CONFIG = "config.yaml"
    SNAPSHOT = "benchmark.json"
    STORE = RunStore.FILENAME
    #: the files every run directory has (the store is made first, then the other two)
    FILES = (CONFIG, SNAPSHOT, STORE)

    def __init__(self, path: Path | str):
        self.path = Path(path)
        #: whether :meth:`claim` made the folder (removed again when the lock or the preparation fails)
        self.created = False

    # detection ------------------------------------------------------------------------------------
    def missing(self) -> list[str]:
        """The files of :data:`FILES` this folder lacks."""
        return [name for name in self.FILES if not (self.path / name).is_file()]

    def _missing_error(self, name: str) -> RunDirError:
        return RunDirError(f"{self.path / name}: missing (is {self.path} a run directory?)")

    @classmethod
    def detect(cls, path: Path | str) -> RunDirectory | None:
        """The run directory at ``path``; None where nothing of one is (not a folder, or none of its files).

        Raises:
            RunDirError: a folder with some of a run directory's files but not all, naming the first missing."""
        found = cls(path)
        if not found.path.is_dir():
            return None
        missing = found.missing()
        if len(missing) == len(cls.FILES):
            return None
        if missing:
            raise found._missing_error(missing[0])
        return found

    @classmethod
    def open(cls, path: Path | str) -> RunDirectory:
        """The run directory at ``path``, to read.

        Raises:
            RunDirError: a file, or a folder without one of the files (the first missing is named)."""
        found = cls.detect(path)
        if found is not None:
            return found
        nothing = cls(path)
        if nothing.path.exists() and not nothing.path.is_dir():
            raise RunDirError(f"{nothing.path}: is a file, not a run directory")
        raise nothing._missing_error(cls.FILES[0])

    # config.yaml ----------------------------------------------------------------------------------
    def _config_data(self) -> dict[str, Any]:
        path = self.path / self.CONFIG
        if not path.is_file():
            raise self._missing_error(self.CONFIG)
        try:
            data = yaml.safe_load(read_bytes_capped(path, MAX_CONFIG_BYTES, self.CONFIG).decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise RunDirError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from e
        if not isinstance(data, dict):
            raise RunDirError(f"{path}: not a run configuration (expected a mapping of settings)")
        if data.get("schema_version") != RUN_SCHEMA_VERSION:
            raise _other_format(path, data.get("schema_version"), data.get("mtvbench_version"))
        return data

    def config(self) -> RunConfig:
        """The settings of the run (its recorded keys dropped; :meth:`mark` reads the mark)."""
        data = self._config_data()
        for key in RECORD_KEYS:
            data.pop(key, None)
        try:
            return RunConfig.model_validate(data)
        except ValidationError as e:
            fields = "; ".join(f"field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}" for err in e.errors())
            raise RunDirError(f"{self.path / self.CONFIG}: {fields}") from e

    def mark(self) -> NotABenchmark | None:
        """Why the run's data is not a real benchmark, as its ``config.yaml`` recorded it (None: a real one)."""
        found = self._config_data().get("not_a_benchmark")
        if found is None:
            return None
        try:
            return NotABenchmark.model_validate(found)
        except ValidationError as e:
            raise RunDirError(f"{self.path / self.CONFIG}: field 'not_a_benchmark': {e.errors()[0]['msg']}") from e

    def recorded_protocol(self) -> ProtocolName | None:
        """The protocol ``config.yaml`` records, for a new run in this directory to keep; None when there is no
        run directory here (yet), or it records none or cannot be read (the run then says what is wrong with
        the directory, under the lock)."""
        try:
            if self.path.is_dir() and (self.path / self.CONFIG).is_file():
                found = self._config_data().get("protocol")
                return found if found in ("authors", "paper") else None  # type: ignore[return-value]
        except (OSError, RunDirError, InputError):
            pass
        return None

    def write_config(self, cfg: RunConfig, not_a_benchmark: NotABenchmark | None = None) -> None:
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
        atomic_write_text(self.path / self.CONFIG, yaml.safe_dump(data, sort_keys=False))

    # benchmark.json -------------------------------------------------------------------------------
    def snapshot_bytes(self) -> bytes:
        """The bytes of ``benchmark.json`` (size-capped)."""
        path = self.path / self.SNAPSHOT
        if not path.is_file():
            raise self._missing_error(self.SNAPSHOT)
        try:
            return read_bytes_capped(path, MAX_JSON_BYTES, self.SNAPSHOT)
        except InputError as e:
            raise RunDirError(e.message) from e

    def snapshot(self, memo: SnapshotMemo | None = None, raw: bytes | None = None,
                 read_before: bool = False) -> RunSnapshot:
        """``benchmark.json``, validated (``memo``: dialogues validated before are not again).

        Args:
            raw: its bytes, read before (:meth:`snapshot_bytes`); None: read now.
            read_before: these very bytes were read strictly before (the caller knows them by their digest), so
                only the C parser reads them now; the snapshot is validated as always."""
        path = self.path / self.SNAPSHOT
        raw = self.snapshot_bytes() if raw is None else raw
        try:
            data: Any = json.loads(raw.decode("utf-8-sig")) if read_before else loads_strict(
                decode_utf8(raw, str(path)), str(path))
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

    def write_snapshot(self, snapshot: RunSnapshot) -> None:
        atomic_write_text(self.path / self.SNAPSHOT, snapshot.model_dump_json())

    # store.sqlite and run.lock ----------------------------------------------------------------------
    def store(self, create: bool = False) -> RunStore:
        """The run store (``create``: made when missing, for a run); the caller closes it."""
        return RunStore(self.path, create=create)

    def lock(self, purpose: str = "run", wait: bool = False,
             on_wait: Callable[[str], None] | None = None) -> RunLock:
        """The run lock, taken (:class:`~mtvbench.errors.BusyError` when another process holds it and not
        ``wait``); released by its ``with`` block."""
        held = RunLock(self.path, purpose=purpose).acquire(wait, on_wait=on_wait)
        assert isinstance(held, RunLock)
        return held

    @contextlib.contextmanager
    def claim(self, wait: bool, note: Note) -> Iterator[RunLock]:
        """For a run: the folder made (if new) and locked for the ``with`` block; a folder this call made is
        removed again when the lock cannot be taken (only while still empty: a process that made it at the
        same time may hold it now)."""
        self.created = not self.path.exists()
        ensure_dir(self.path)
        try:
            held = self.lock(wait=wait, on_wait=lambda holder: note("waiting", f"{self.path} is in use by {holder}"))
        except BaseException:
            if self.created:
                with contextlib.suppress(OSError):
                    os.rmdir(self.path)
            raise
        with held:
            yield held

    @contextlib.contextmanager
    def session(self, cfg: RunConfig, full: Benchmark, snapshot: RunSnapshot, mark: NotABenchmark | None,
                note: Note) -> Iterator[RunStore]:
        """For a run, under :meth:`claim`'s lock: the store opened and checked (format, run identity, dataset),
        then ``config.yaml`` and ``benchmark.json`` written and a store session begun; on leaving the block the
        session is ended and the store closed, whatever happened.

        A run directory :meth:`claim` made is removed again when any of the preparation fails. The scores.json
        of an earlier session is removed before this one stores anything: it describes a store this session
        changes, and a run killed before its end (or a failed write of the score files) must not leave it
        saying ``complete`` (the run writes scores.json at its end; ``mtvbench score`` writes it at any time)."""
        store: RunStore | None = None
        try:
            store = self.store(create=True)
            if (retried := store.check_identity(cfg.identity())) is not None:
                note("settings", retried)
            moved = store.check_dataset(full.root, [d.id for d in full.dialogues])
            if moved:
                note("data", moved)
            (self.path / "scores.json").unlink(missing_ok=True)
            self.write_config(cfg, mark)
            self.write_snapshot(snapshot)
        except BaseException:
            if store is not None:
                store.close()
            if self.created:
                shutil.rmtree(self.path, ignore_errors=True)
            raise
        try:
            store.begin_session()
            yield store
        finally:
            with contextlib.suppress(OutputError):  # disk full: the error that stopped the run is reported
                store.end_session()
            store.close()

    # loading --------------------------------------------------------------------------------------
    def load(self, bootstrap: int | None = None, details: bool = False, memo: SnapshotMemo | None = None,
             label: str = "") -> RunData:
        """Read the run directory and recompute its scores (no API calls).

        The store is read in one transaction (a consistent snapshot even while a run writes), and
        only results whose fingerprint matches ``benchmark.json`` are scored.

        Args:
            bootstrap: bootstrap draws for the confidence intervals (default: the run's).
            details: read every column (the score files and stored answers need them); without, only what
                scores and a report show (:meth:`RunStore.response_rows`): the same scores, read faster.
            memo: dialogues read before (:class:`SnapshotMemo`: several runs of one benchmark).
            label: the run's name in tables (default: :func:`display_name`).

        Raises:
            RunDirError: not a run directory, another format, or a corrupt file."""
        RunDirectory.open(self.path)
        cfg = self.config()
        snap = self.snapshot(memo)
        store = self.store()
        try:
            with store.snapshot():
                cur = current_results(snap.dialogues, cfg.context, snap.turn_keys, snap.judge_keys,
                                      store.response_rows(details), store.verdict_rows(), FINAL_OUTCOMES, FINAL_JUDGE)
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
            inference=cfg.inference_label, preset_overrides=cfg.preset_overrides, not_a_benchmark=self.mark(),
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
            scores.dialogues_in_data = self._dialogues_in_data(dataset)
        return RunData(run_dir=self.path, config=cfg, snapshot=snap, responses=cur.responses,
                       all_verdicts=cur.verdicts, verdicts=verdicts, scores=scores, dscores=dscores, label=label)

    def _dialogues_in_data(self, dataset: Any) -> int | None:
        """How many dialogues the run's dataset has for its tasks (the store's record of the dataset, checked; None
        when the store has none)."""
        if dataset is None:
            return None
        ids = dataset.get("dialogue_ids") if isinstance(dataset, dict) else None
        if not isinstance(ids, list):
            raise RunDirError(f"{self.path / self.STORE}: table meta, row 'dataset': no list of dialogue ids")
        return len(ids)


def _other_format(path: Path, found: Any, made_by: Any) -> RunDirError:
    return RunDirError(
        f"{path}: run-directory format {found if found is not None else 'not recorded'} (written by "
        f"{made_by or 'an mtvbench that did not record its version'}); this mtvbench ({__version__}) reads format "
        f"{RUN_SCHEMA_VERSION}",
        hint="evaluate into a new --out, or use the mtvbench version that wrote this run directory")


def display_name(cfg: RunConfig) -> str:
    """The run's name in tables: the model, marked when preset values were overridden or the context
    is not the golden one."""
    name = modified_name(cfg.model, cfg.preset_overrides)
    return name if cfg.context == "golden" else f"{name} [{cfg.context} context]"


def unique_names(runs: Sequence[RunData]) -> list[str]:
    """Display names, made unique with the folder name when two runs share one."""
    names = [r.name for r in runs]
    return [f"{n} ({r.run_dir.name})" if names.count(n) > 1 else n for r, n in zip(runs, names)]
