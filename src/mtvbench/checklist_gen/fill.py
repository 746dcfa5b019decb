"""Fill the missing checklist entries of a dataset in the released layout, resumably.

Where the result goes is the caller's choice: ``out=DIR`` writes a complete dataset at
``DIR`` (``mtqa/*.json`` and ``metadata.json`` copied, ``videos/`` hard links to the source's
videos, or copies where a hard link is impossible: a data root holds no symbolic link;
``checklist/`` the source's entries plus the new ones) and never touches the source;
``out=None`` writes into the source's ``checklist/`` files in place. A second run with the
same ``out`` continues from what ``DIR`` already holds;
``DIR`` may not hold another dataset (its ``mtqa/`` files must equal the source's).

With ``out=DIR`` the new folder is written beside it (``.DIR.partial``) and swapped in when every task is
done (:class:`mtvbench.util.files.FolderSwap`): until then ``DIR`` stays as it was. A run that stops after
generating checklists keeps ``.DIR.partial`` (the error names it) and the same command continues from it; a
run that stops before generating any leaves nothing beside ``DIR``; a run that generates nothing new leaves
``DIR`` untouched.

For every dialogue of ``mtqa/<task>.json`` and every round that is a model turn under the
official rule (:func:`mtvbench.data.schema.is_model_turn`), an entry of
``checklist/<task>_CheckList.json`` is generated when none exists. Existing entries are
never touched unless ``overwrite=True``; entries of rounds that are not model turns and
anything else already in the file are kept as they are. The checklist file is rewritten
atomically after every dialogue, so a killed run loses at most the dialogues in flight and
the next run continues where it stopped. Rounds whose checklist still breaks the rules
after the bounded re-asks are listed in the report and left without an entry.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.checklist_gen.generator import checklist_outcome
from mtvbench.data.layout import (
    FOLDERS_TEXT,
    MTQA_DIR,
    checklist_dir,
    checklist_entry,
    checklist_path,
    is_dataset,
    metadata_path,
    mtqa_dir,
    mtqa_path,
    videos_dir,
    write_checklist_file,
)
from mtvbench.data.official import refuse_links
from mtvbench.data.schema import TASKS, Task, is_model_turn
from mtvbench.errors import InputError, MtvbenchError, OutputError
from mtvbench.models.backend import ModelBackend
from mtvbench.util.files import FolderSwap, atomic_copy_file, ensure_dir, place_file
from mtvbench.util.jsonio import load_json_file

__all__ = ["ChecklistFailure", "FillReport", "check_out", "fill_checklists", "prepare_out"]


class ChecklistFailure(BaseModel):
    task: str
    video: str
    event: str
    round_index: int
    problems: list[str]


class FillReport(BaseModel):
    out: str = ""
    generated: int = 0
    kept: int = 0
    failed: list[ChecklistFailure] = Field(default_factory=list)
    files_written: list[str] = Field(default_factory=list)


def _round_index(entry: Any) -> int | None:
    if not isinstance(entry, dict):
        return None
    try:
        return int(entry.get("round index"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


async def fill_checklists(
    root: str | Path,
    backend: ModelBackend,
    *,
    out: str | Path | None = None,
    n: int = 5,
    tasks: Sequence[Task] = TASKS,
    overwrite: bool = False,
    concurrency: int = 4,
    max_attempts: int = 3,
    exact_split: bool = True,
    on_progress: Callable[[str], None] | None = None,
) -> FillReport:
    """Generate the missing checklist entries of the dataset at ``root`` into ``out`` (``None``: in place)."""
    root = Path(root)
    refuse_links(root)  # a data root holds no symbolic link (mtvbench.data.official)

    def filler(target: Path) -> _Filler:
        return _Filler(root, target, backend, n=n, overwrite=overwrite, concurrency=concurrency,
                       max_attempts=max_attempts, exact_split=exact_split, on_progress=on_progress)

    if out is None:
        work = filler(root)
        for task in tasks:
            await work.task(task)
        work.report.out = str(root)
        return work.report
    out = Path(out)
    check_out(root, out)
    swap = FolderSwap(out, resumable=True)
    try:
        with swap as stage:
            prepare_out(root, stage, previous=None if swap.resumed else out)
            work = filler(stage)
            try:
                for task in tasks:
                    await work.task(task)
            except BaseException as e:
                swap.keep_on_failure = swap.resumed or work.report.generated > 0
                if swap.keep_on_failure and isinstance(e, MtvbenchError):
                    e.hint = "; ".join(x for x in (e.hint, (
                        f"{out} is as it was; the checklists generated so far are kept in {stage}: the same "
                        "command continues from them")) if x)
                raise
            if work.report.generated == 0 and not swap.resumed and out.exists():
                raise _NothingNew  # nothing new: the earlier folder stays exactly as it is
    except _NothingNew:
        work.report.files_written = []
    work.report.out = str(out)
    work.report.files_written = [str(out / Path(f).relative_to(stage)) for f in work.report.files_written]
    return work.report


class _NothingNew(Exception):
    """No checklist was generated: the earlier ``--out`` folder is kept (caught by the caller)."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def check_out(root: Path, out: Path) -> None:
    """``out`` may receive a copy of the dataset at ``root``: not the dataset itself, a folder, and holding
    no other dataset (its ``mtqa/`` files, when there, are the source's)."""
    if not is_dataset(root):
        raise InputError(f"{root}: no {MTQA_DIR}/ folder (expected the released layout: {FOLDERS_TEXT})")
    if out.resolve() == root.resolve():
        raise InputError(f"--out {out} is the dataset itself: pass --in-place to write into it")
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder")
    for src in sorted(mtqa_dir(root).glob("*.json")):
        dst = mtqa_dir(out) / src.name
        if dst.exists() and not _same_file(src, dst):
            raise OutputError(f"{dst}: differs from {src}; {out} holds another dataset (choose an empty --out)")


def prepare_out(root: Path, out: Path, previous: Path | None = None) -> Path:
    """Lay out ``out`` as a copy of the dataset at ``root`` (see module doc): ``mtqa/`` and ``metadata.json``
    copied, ``videos/`` linked, and the checklist files of an earlier ``--out`` folder ``previous``, from
    which the generation continues; checklists come later."""
    check_out(root, out)
    ensure_dir(checklist_dir(out))
    for src in sorted(mtqa_dir(root).glob("*.json")):
        if not (mtqa_dir(out) / src.name).exists():
            atomic_copy_file(src, mtqa_dir(out) / src.name)
    if metadata_path(root).is_file() and not metadata_path(out).exists():
        atomic_copy_file(metadata_path(root), metadata_path(out))
    if previous is not None and checklist_dir(previous).is_dir():
        for f in sorted(checklist_dir(previous).glob("*.json")):
            if f.is_file() and not f.is_symlink() and not (checklist_dir(out) / f.name).exists():
                atomic_copy_file(f, checklist_dir(out) / f.name)
    _link_videos(videos_dir(root), videos_dir(out))
    return out


def _link_videos(src: Path, dst: Path) -> None:
    """Every regular file under ``src`` hard-linked (else copied) to the same place under ``dst``;
    links in ``src`` are left out (the dataset's own validation names them)."""
    if src.is_symlink() or not src.is_dir():
        return
    for dirpath, _, filenames in os.walk(src):
        for name in filenames:
            f = Path(dirpath) / name
            if f.is_file() and not f.is_symlink():
                place_file(f, dst / f.relative_to(src), "link")


def _check_shape(checklists: Any, source: Path) -> None:
    """``{video: {event: [entry, ...]}}``, or one :class:`InputError` naming the place."""
    if not isinstance(checklists, dict):
        raise InputError(f"{source}: a checklist file must hold a JSON object keyed by video")
    for video, events in checklists.items():
        if not isinstance(events, dict):
            raise InputError(f"{source}: video {video!r}: expected an object keyed by event index")
        for event, entries in events.items():
            if not isinstance(entries, list):
                raise InputError(f"{source}: video {video!r}, event {event!r}: expected a list of entries")


def _model_rounds(task: Task, dialogue: Any) -> list[tuple[int, str, str]]:
    rounds: list[tuple[int, str, str]] = []
    for name, body in (dialogue.get("mtqa") or {}).items():
        if not str(name).startswith("Round ") or not isinstance(body, dict):
            continue
        try:
            k = int(str(name).split()[1])
        except (IndexError, ValueError):
            continue
        if is_model_turn(task, body.get("Ability")):
            rounds.append((k, str(body.get("User", "")), str(body.get("Assistant", ""))))
    return sorted(rounds)


class _Filler:
    def __init__(self, root: Path, target: Path, backend: ModelBackend, *, n: int, overwrite: bool,
                 concurrency: int, max_attempts: int, exact_split: bool,
                 on_progress: Callable[[str], None] | None):
        self.root, self.target, self.backend, self.n, self.overwrite = root, target, backend, n, overwrite
        self.max_attempts, self.exact_split, self.on_progress = max_attempts, exact_split, on_progress
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.report = FillReport()

    async def task(self, task: Task) -> None:
        dialogues_file = mtqa_path(self.root, task)
        if not dialogues_file.exists():
            return
        mtqa = load_json_file(dialogues_file, "mtqa file")
        ck_path = checklist_path(self.target, task)
        source = ck_path if ck_path.exists() else checklist_path(self.root, task)
        checklists: Any = load_json_file(source, "checklist file") if source.exists() else {}
        _check_shape(checklists, source)
        lock = asyncio.Lock()
        jobs = []
        for video, dialogues in (mtqa.items() if isinstance(mtqa, dict) else []):
            for d in dialogues if isinstance(dialogues, list) else []:
                if isinstance(d, dict) and d.get("event_index") is not None:
                    jobs.append(self.dialogue(task, video, str(d["event_index"]), _model_rounds(task, d),
                                              checklists, lock))
        wrote = await asyncio.gather(*jobs)
        if any(wrote):
            self.report.files_written.append(str(ck_path))
        elif source != ck_path and source.exists():  # --out: the layout is complete even where nothing was new
            atomic_copy_file(source, ck_path)

    async def dialogue(self, task: Task, video: str, event: str, rounds: list[tuple[int, str, str]],
                       checklists: dict[str, Any], lock: asyncio.Lock) -> bool:
        existing = checklists.get(video, {}).get(event, [])
        have = {_round_index(e) for e in existing}
        todo = [(k, u, a) for k, u, a in rounds if self.overwrite or k not in have]
        self.report.kept += sum(1 for k, _, _ in rounds if k in have and not self.overwrite)
        if not todo:
            return False

        async def gen(k: int, user: str, assistant: str) -> tuple[int, Any]:
            async with self.sem:
                return k, await checklist_outcome(
                    self.backend, user, assistant, self.n, max_attempts=self.max_attempts,
                    exact_split=self.exact_split, request_id=f"checklist/{task.value}/{video}/{event}/{k}")

        results = await asyncio.gather(*(gen(k, u, a) for k, u, a in todo))
        async with lock:
            entries = list(checklists.setdefault(video, {}).setdefault(event, []))
            for k, out in sorted(results, key=lambda x: x[0]):
                if not out.ok:
                    self.report.failed.append(ChecklistFailure(task=task.value, video=video, event=event,
                                                               round_index=k, problems=out.problems))
                    continue
                entries = [e for e in entries if _round_index(e) != k]
                entries.append(checklist_entry(k, out.items))
                self.report.generated += 1
            entries.sort(key=lambda e: (_round_index(e) is None, _round_index(e) or 0))
            checklists[video][event] = entries
            write_checklist_file(self.target, task, checklists)
        if self.on_progress:
            self.on_progress(f"{task.value}/{video}/{event}")
        return True
