"""Fill the missing checklist entries of a dataset in the released layout, resumably.

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
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mtvbench.checklists.generator import checklist_outcome, entry_from_items
from mtvbench.data.schema import TASKS, Task, is_model_turn
from mtvbench.models.base import ModelBackend


class ChecklistFailure(BaseModel):
    task: str
    video: str
    event: str
    round_index: int
    problems: list[str]


class FillReport(BaseModel):
    generated: int = 0
    kept: int = 0
    failed: list[ChecklistFailure] = Field(default_factory=list)
    files_written: list[str] = Field(default_factory=list)


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write JSON to a temporary file in the same folder, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    n: int = 5,
    tasks: Sequence[Task] = TASKS,
    overwrite: bool = False,
    concurrency: int = 4,
    max_attempts: int = 3,
    exact_split: bool = True,
    on_progress: Callable[[str], None] | None = None,
) -> FillReport:
    """Generate the missing checklist entries of the dataset at ``root`` (see module doc)."""
    filler = _Filler(Path(root), backend, n=n, overwrite=overwrite, concurrency=concurrency,
                     max_attempts=max_attempts, exact_split=exact_split, on_progress=on_progress)
    for task in tasks:
        await filler.task(task)
    return filler.report


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
    def __init__(self, root: Path, backend: ModelBackend, *, n: int, overwrite: bool, concurrency: int,
                 max_attempts: int, exact_split: bool, on_progress: Callable[[str], None] | None):
        self.root, self.backend, self.n, self.overwrite = root, backend, n, overwrite
        self.max_attempts, self.exact_split, self.on_progress = max_attempts, exact_split, on_progress
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.report = FillReport()

    async def task(self, task: Task) -> None:
        mtqa_path = self.root / "mtqa" / f"{task.official_stem}.json"
        if not mtqa_path.exists():
            return
        mtqa = json.loads(mtqa_path.read_text(encoding="utf-8"))
        ck_path = self.root / "checklist" / f"{task.official_stem}_CheckList.json"
        checklists: dict[str, Any] = json.loads(ck_path.read_text(encoding="utf-8")) if ck_path.exists() else {}
        lock = asyncio.Lock()
        jobs = []
        for video, dialogues in (mtqa.items() if isinstance(mtqa, dict) else []):
            for d in dialogues if isinstance(dialogues, list) else []:
                if isinstance(d, dict) and d.get("event_index") is not None:
                    jobs.append(self.dialogue(task, video, str(d["event_index"]), _model_rounds(task, d),
                                              checklists, ck_path, lock))
        wrote = await asyncio.gather(*jobs)
        if any(wrote):
            self.report.files_written.append(str(ck_path))

    async def dialogue(self, task: Task, video: str, event: str, rounds: list[tuple[int, str, str]],
                       checklists: dict[str, Any], ck_path: Path, lock: asyncio.Lock) -> bool:
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
                entries.append(entry_from_items(k, out.items))
                self.report.generated += 1
            entries.sort(key=lambda e: (_round_index(e) is None, _round_index(e) or 0))
            checklists[video][event] = entries
            atomic_write_json(ck_path, checklists)
        if self.on_progress:
            self.on_progress(f"{task.value}/{video}/{event}")
        return True
