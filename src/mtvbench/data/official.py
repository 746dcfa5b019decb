"""Load the released MT-Video-Bench layout (``mtqa/``, ``checklist/``, ``videos/``).

The loader never stops at the first problem: every problem becomes a :class:`Problem`
naming the file, the video, the event and the field, so ``mtvbench validate`` can list
them all at once and ``mtvbench run`` can refuse invalid data with the same messages.
Quirks of the release that are accepted: ``event_index`` as int or string, any key order
inside checklist entries, ``round index`` as int or numeric string.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from mtvbench.data.schema import (
    TASKS,
    Benchmark,
    ChecklistItem,
    Dialogue,
    Round,
    Task,
    is_model_turn,
)
from mtvbench.errors import MtvbenchError

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov", ".avi")
_ROUND = re.compile(r"^Round (\d+)$")
_QKEY = re.compile(r"^Q(\d+)$")
_AKEY = re.compile(r"^A(\d+)$")
EXPECTED_ITEMS = 5


class Problem(BaseModel):
    level: Literal["error", "warning"]
    file: str
    message: str
    video: str | None = None
    event: str | None = None
    field: str | None = None

    def render(self) -> str:
        where = [self.file]
        if self.video is not None:
            where.append(f"video={self.video!r}")
        if self.event is not None:
            where.append(f"event={self.event!r}")
        if self.field is not None:
            where.append(f"field={self.field!r}")
        return f"{self.level.upper()}: {' '.join(where)}: {self.message}"


class DataError(MtvbenchError):
    """Raised when a dataset has errors; ``problems`` lists every one."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        errors = [p for p in problems if p.level == "error"]
        super().__init__(f"{len(errors)} error(s) in dataset:\n" + "\n".join(p.render() for p in errors))


class _Collector:
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def add(self, level: Literal["error", "warning"], path: Path, message: str, **where: Any) -> None:
        self.problems.append(Problem(level=level, file=self.rel(path), message=message, **where))


def _read_json(path: Path, col: _Collector) -> Any:
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        col.add("error", path, f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}")
    except (OSError, UnicodeDecodeError) as e:
        col.add("error", path, f"cannot be read: {e}")
    return None


def _safe_video_name(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or "\x00" in name:
        return False
    parts = re.split(r"[\\/]", name)
    return ".." not in parts and not re.match(r"^[A-Za-z]:", name)


def find_video(root: Path, name: str) -> Path | None:
    """``videos/<name>`` or ``videos/<name>.<ext>``; never outside ``videos/``."""
    vdir = (root / "videos").resolve()
    candidates = [vdir / name] + [vdir / f"{name}{s}" for s in VIDEO_SUFFIXES]
    for c in candidates:
        try:
            resolved = c.resolve()
        except OSError:
            continue
        if resolved.is_file() and resolved.is_relative_to(vdir):
            return resolved
    return None


def _normalise_yes_no(value: Any) -> str | None:
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return value.strip().capitalize()
    return None


def _parse_checklist_entry(
    entry: Any, path: Path, video: str, event: str, col: _Collector
) -> tuple[int, list[ChecklistItem]] | None:
    if not isinstance(entry, dict):
        col.add("error", path, "checklist entry is not an object", video=video, event=event)
        return None
    where = {"video": video, "event": event}
    raw_round = entry.get("round index")
    if isinstance(raw_round, bool) or raw_round is None:
        col.add("error", path, "missing or invalid 'round index'", field="round index", **where)
        return None
    try:
        round_index = int(raw_round)
    except (TypeError, ValueError):
        col.add("error", path, f"'round index' is not an integer: {raw_round!r}", field="round index", **where)
        return None
    qs: dict[int, str] = {}
    ans: dict[int, Any] = {}
    for key, value in entry.items():
        if key == "round index":
            continue
        if m := _QKEY.match(key):
            if not isinstance(value, str) or not value.strip():
                col.add("error", path, f"round {round_index}: {key} is empty or not text", field=key, **where)
                continue
            qs[int(m.group(1))] = value.strip()
        elif m := _AKEY.match(key):
            ans[int(m.group(1))] = value
        else:
            col.add("warning", path, f"round {round_index}: unknown key {key!r} ignored", field=key, **where)
    items: list[ChecklistItem] = []
    ok = True
    for n in sorted(set(qs) | set(ans)):
        if n not in qs:
            col.add("error", path, f"round {round_index}: A{n} has no Q{n}", field=f"Q{n}", **where)
            ok = False
            continue
        if n not in ans:
            col.add("error", path, f"round {round_index}: Q{n} has no A{n}", field=f"A{n}", **where)
            ok = False
            continue
        exp = _normalise_yes_no(ans[n])
        if exp is None:
            col.add("error", path, f"round {round_index}: A{n} must be 'Yes' or 'No', got {ans[n]!r}",
                    field=f"A{n}", **where)
            ok = False
            continue
        if exp != ans[n]:
            col.add("warning", path, f"round {round_index}: A{n} spelled {ans[n]!r}, read as {exp!r}",
                    field=f"A{n}", **where)
        items.append(ChecklistItem(key=f"Q{n}", question=qs[n], expected=exp))  # type: ignore[arg-type]
    if ok and sorted(qs) != list(range(1, len(qs) + 1)):
        col.add("error", path, f"round {round_index}: item numbers are not 1..n: {sorted(qs)}",
                field="Q", **where)
        ok = False
    if ok and len(items) != EXPECTED_ITEMS:
        col.add("warning", path, f"round {round_index}: {len(items)} checklist items (expected {EXPECTED_ITEMS})",
                field="Q", **where)
    if not items:
        ok = False
        col.add("error", path, f"round {round_index}: checklist has no items", **where)
    return (round_index, items) if ok else None


def _load_checklists(root: Path, task: Task, col: _Collector) -> dict[tuple[str, str], dict[int, list[ChecklistItem]]]:
    path = root / "checklist" / f"{task.official_stem}_CheckList.json"
    out: dict[tuple[str, str], dict[int, list[ChecklistItem]]] = {}
    if not path.exists():
        col.add("warning", path, "checklist file missing: no turn of this task will be scored")
        return out
    data = _read_json(path, col)
    if data is None:
        return out
    if not isinstance(data, dict):
        col.add("error", path, "top level must be an object keyed by video name")
        return out
    for video, events in data.items():
        if not isinstance(events, dict):
            col.add("error", path, "value must be an object keyed by event_index", video=video)
            continue
        for event_key, entries in events.items():
            event = str(event_key)
            if not isinstance(entries, list):
                col.add("error", path, "value must be a list of checklist entries", video=video, event=event)
                continue
            per_round = out.setdefault((video, event), {})
            for entry in entries:
                parsed = _parse_checklist_entry(entry, path, video, event, col)
                if parsed is None:
                    continue
                k, items = parsed
                if k in per_round:
                    col.add("error", path, f"duplicate checklist for round {k}", video=video, event=event,
                            field="round index")
                    continue
                per_round[k] = items
    return out


def _parse_rounds(mtqa: Any, path: Path, video: str, event: str, task: Task, col: _Collector) -> list[Round] | None:
    where = {"video": video, "event": event}
    if not isinstance(mtqa, dict) or not mtqa:
        col.add("error", path, "'mtqa' must be a non-empty object of 'Round k' entries", field="mtqa", **where)
        return None
    rounds: list[Round] = []
    ok = True
    for name, body in mtqa.items():
        m = _ROUND.match(str(name))
        if not m:
            col.add("error", path, f"round key {name!r} is not of the form 'Round k'", field=f"mtqa.{name}", **where)
            ok = False
            continue
        k = int(m.group(1))
        if not isinstance(body, dict):
            col.add("error", path, f"{name} must be an object", field=f"mtqa.{name}", **where)
            ok = False
            continue
        fields: dict[str, str] = {}
        for fld in ("User", "Assistant"):
            val = body.get(fld)
            if not isinstance(val, str):
                col.add("error", path, f"{name}: '{fld}' missing or not text", field=f"mtqa.{name}.{fld}", **where)
                ok = False
            else:
                fields[fld] = val
        ability = body.get("Ability")
        if ability is not None and not isinstance(ability, str):
            col.add("error", path, f"{name}: 'Ability' must be text", field=f"mtqa.{name}.Ability", **where)
            ok = False
            ability = None
        if len(fields) == 2:
            rounds.append(Round(index=k, user=fields["User"], assistant=fields["Assistant"], ability=ability,
                                model_turn=is_model_turn(task, ability)))
    if not ok:
        return None
    indices = sorted(r.index for r in rounds)
    if indices != list(range(1, len(indices) + 1)):
        col.add("error", path, f"rounds must be numbered Round 1..Round n without gaps, got {indices}",
                field="mtqa", **where)
        return None
    rounds.sort(key=lambda r: r.index)
    if not any(r.model_turn for r in rounds):
        col.add("warning", path, "no round is a model turn under this task's rule", field="mtqa", **where)
    return rounds


def load_official(root: str | Path, tasks: tuple[Task, ...] = TASKS, check_videos: bool = True
                  ) -> tuple[Benchmark | None, list[Problem]]:
    """Load a dataset; return (benchmark or None when there are errors, all problems)."""
    root = Path(root).expanduser().resolve()
    col = _Collector(root)
    if not root.is_dir():
        col.add("error", root, "dataset folder does not exist")
        return None, col.problems
    mtqa_dir, ck_dir = root / "mtqa", root / "checklist"
    for d in (mtqa_dir,):
        if not d.is_dir():
            col.add("error", d, "folder missing (expected the released layout: mtqa/, checklist/, videos/)")
            return None, col.problems
    known = {t.official_stem for t in TASKS}
    for f in sorted(mtqa_dir.glob("*.json")):
        if f.stem not in known:
            col.add("error", f, f"unknown task file; expected one of {sorted(known)}")
    if ck_dir.is_dir():
        for f in sorted(ck_dir.glob("*.json")):
            if f.stem.removesuffix("_CheckList") not in known or not f.stem.endswith("_CheckList"):
                col.add("error", f, "unknown checklist file; expected <task>_CheckList.json")

    dialogues: list[Dialogue] = []
    videos: dict[str, Path] = {}
    missing_videos: set[str] = set()
    seen_ids: set[str] = set()
    for task in tasks:
        path = mtqa_dir / f"{task.official_stem}.json"
        if not path.exists():
            col.add("warning", path, "task file missing")
            continue
        data = _read_json(path, col)
        if data is None:
            continue
        if not isinstance(data, dict):
            col.add("error", path, "top level must be an object keyed by video name")
            continue
        checklists = _load_checklists(root, task, col)
        used_checklists: set[tuple[str, str, int]] = set()
        for video, entries in data.items():
            if not _safe_video_name(video):
                col.add("error", path, "video name would escape the data root", video=video)
                continue
            if not isinstance(entries, list):
                col.add("error", path, "value must be a list of dialogues", video=video)
                continue
            if check_videos and video not in videos and video not in missing_videos:
                vp = find_video(root, video)
                if vp is None:
                    missing_videos.add(video)
                    col.add("error", path, f"video file not found under videos/ (tried {video} and "
                            f"{video}{{{','.join(VIDEO_SUFFIXES)}}})", video=video)
                else:
                    videos[video] = vp
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    col.add("error", path, f"dialogue #{i} is not an object", video=video)
                    continue
                raw_event = entry.get("event_index")
                if raw_event is None or isinstance(raw_event, (bool, list, dict)):
                    col.add("error", path, f"dialogue #{i}: missing or invalid event_index", video=video,
                            field="event_index")
                    continue
                event = str(raw_event)
                rounds = _parse_rounds(entry.get("mtqa"), path, video, event, task, col)
                if rounds is None:
                    continue
                per_round = checklists.get((video, event), {})
                for k, items in per_round.items():
                    rnd = next((r for r in rounds if r.index == k), None)
                    if rnd is None:
                        col.add("error", root / "checklist" / f"{task.official_stem}_CheckList.json",
                                f"checklist for round {k}, which does not exist (dialogue has {len(rounds)} rounds)",
                                video=video, event=event, field="round index")
                        continue
                    used_checklists.add((video, event, k))
                    if not rnd.model_turn:
                        col.add("warning", root / "checklist" / f"{task.official_stem}_CheckList.json",
                                f"checklist for round {k}, which is not a model turn (Ability={rnd.ability!r}); "
                                "it is not evaluated", video=video, event=event, field="round index")
                        continue
                    rnd.checklist = items
                d = Dialogue(task=task, video=video, event=event, rounds=rounds)
                if d.id in seen_ids:
                    col.add("error", path, "duplicate dialogue id (same video and event_index twice)",
                            video=video, event=event, field="event_index")
                    continue
                seen_ids.add(d.id)
                dialogues.append(d)
        for (video, event), per_round in checklists.items():
            if f"{task.value}/{video}/{event}" not in seen_ids and per_round:
                col.add("error", root / "checklist" / f"{task.official_stem}_CheckList.json",
                        "checklist for a dialogue that does not exist in mtqa/", video=video, event=event)
    if not dialogues and not any(p.level == "error" for p in col.problems):
        col.add("error", mtqa_dir, "no dialogues found")
    errors = any(p.level == "error" for p in col.problems)
    return (None if errors else Benchmark(root=root, dialogues=dialogues, videos=videos)), col.problems


def load_benchmark(root: str | Path, check_videos: bool = True, tasks: tuple[Task, ...] = TASKS) -> Benchmark:
    """Load (only ``tasks``) or raise :class:`DataError` listing every error."""
    bench, problems = load_official(root, tasks=tasks, check_videos=check_videos)
    if bench is None:
        raise DataError(problems)
    return bench

