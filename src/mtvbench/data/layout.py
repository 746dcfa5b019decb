"""The released dataset layout (docs/official-format.md): its paths, its writer, its reader entry.

Every module that reads or writes a dataset asks this one for where things are::

    ROOT/mtqa/<stem>.json                 {video: [{"event_index": e, "mtqa": {"Round k": {...}}}, ...]}
    ROOT/checklist/<stem>_CheckList.json  {video: {"<event>": [{"round index": k, "Q1": .., "A1": ..}, ...]}}
    ROOT/videos/<video>.<ext>
    ROOT/metadata.json                    only in a dataset made by ``mtvbench build`` (:mod:`.buildmeta`)

Rules owned here:

- **event_index as written** (:func:`event_value`): an integer when the event is a canonical non-negative
  integer (``"0"``, ``"12"``), otherwise the string itself. The loader reads an integer as its decimal
  string and a string as it is, so a written dataset loads back with the same dialogue ids
  (``task/video/event``) and the checklist keys (``str(event)``) match.
- **what an export keeps** (:func:`kept`): with ``accepted_only`` only ``accepted`` dialogues, with
  ``drop_rejected`` every dialogue but ``rejected`` ones, otherwise all of them.
- **the writer** (:class:`LayoutWriter`, the only code that writes the layout): rounds are numbered
  ``Round 1..n`` in order, checklist entries come sorted by round, every task gets both files (empty ones
  too), each file written whole (:func:`write_layout_json`: UTF-8, indent 2, non-ASCII kept) or not at all.
  :meth:`LayoutWriter.export` writes the whole dataset folder (task files, videos, ``metadata.json``) beside
  the target and swaps it in only when all of it is written (:class:`mtvbench.util.files.FolderSwap`); an
  export without a dialogue is refused (:class:`~mtvbench.util.files.NothingWritten`) and the previous
  folder is kept as it was.
- **the mark of data that is not a benchmark** (:data:`NOT_A_BENCHMARK_KEY`): a dataset built with a scripted
  model carries, besides ``metadata.json``'s ``not_a_benchmark``, the same reason in every dialogue record of
  ``mtqa/<task>.json`` (``{"event_index": 0, "mtqa": {...}, "mtvbench_not_a_benchmark": "..."}``), so a copy
  of the folder without ``metadata.json`` is still recognised. The authors' eval.py and inference scripts read
  only ``event_index`` and ``mtqa`` of a dialogue record, and the loader reads the key only for the mark
  (:func:`mtvbench.data.official.load_official`), so the dialogues, prompts and scores are those of the
  data without it (``tests/protocol/test_parity.py``).
- **the reader** is :func:`mtvbench.data.official.load_official` (validation that collects every problem),
  which finds the files through the paths of this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtvbench.data.schema import TASKS, ChecklistItem, Task
from mtvbench.errors import OutputError
from mtvbench.util.files import FolderSwap, NothingWritten, VideoMode, atomic_write_json, place_file

MTQA_DIR = "mtqa"
CHECKLIST_DIR = "checklist"
VIDEOS_DIR = "videos"
METADATA_FILE = "metadata.json"
#: the key of a dialogue record (``mtqa/<task>.json``) that says why the dataset is not a real benchmark
NOT_A_BENCHMARK_KEY = "mtvbench_not_a_benchmark"
#: the three folders of a dataset root
FOLDERS = (MTQA_DIR, CHECKLIST_DIR, VIDEOS_DIR)
_CHECKLIST_SUFFIX = "_CheckList.json"
#: the layout in a message: "mtqa/, checklist/, videos/"
FOLDERS_TEXT = ", ".join(f"{d}/" for d in FOLDERS)
#: a checklist file's name in a message
CHECKLIST_PATTERN = f"<task>{_CHECKLIST_SUFFIX}"
_BY_STEM = {t.official_stem: t for t in TASKS}


# ----------------------------------------------------------------------------------- paths

def mtqa_name(task: Task) -> str:
    """The name of ``task``'s dialogue file (``summary.json`` for Content Summary)."""
    return f"{task.official_stem}.json"


def checklist_name(task: Task) -> str:
    """The name of ``task``'s checklist file (``summary_CheckList.json`` for Content Summary)."""
    return f"{task.official_stem}{_CHECKLIST_SUFFIX}"


def mtqa_rel(task: Task) -> str:
    """``mtqa/<stem>.json``: the path inside a dataset root (messages, package data)."""
    return f"{MTQA_DIR}/{mtqa_name(task)}"


def checklist_rel(task: Task) -> str:
    """``checklist/<stem>_CheckList.json``: the path inside a dataset root."""
    return f"{CHECKLIST_DIR}/{checklist_name(task)}"


def mtqa_dir(root: Path) -> Path:
    """The folder of the dialogue files, ``ROOT/mtqa``."""
    return Path(root) / MTQA_DIR


def checklist_dir(root: Path) -> Path:
    """The folder of the checklist files, ``ROOT/checklist``."""
    return Path(root) / CHECKLIST_DIR


def videos_dir(root: Path) -> Path:
    """The folder of the videos, ``ROOT/videos``."""
    return Path(root) / VIDEOS_DIR


def metadata_path(root: Path) -> Path:
    """``ROOT/metadata.json``, which only a dataset made by ``mtvbench build`` has."""
    return Path(root) / METADATA_FILE


def mtqa_path(root: Path, task: Task) -> Path:
    """The dialogue file of ``task`` under ``root``."""
    return mtqa_dir(root) / mtqa_name(task)


def checklist_path(root: Path, task: Task) -> Path:
    """The checklist file of ``task`` under ``root``."""
    return checklist_dir(root) / checklist_name(task)


def is_dataset(root: Path) -> bool:
    """A folder that holds a released layout (its ``mtqa/`` folder exists)."""
    return mtqa_dir(root).is_dir()


def task_of_mtqa(name: str) -> Task | None:
    """The task whose dialogue file is called ``name`` (``summary.json``), else None."""
    return _BY_STEM.get(name.removesuffix(".json")) if name.endswith(".json") else None


def task_of_checklist(name: str) -> Task | None:
    """The task whose checklist file is called ``name`` (``summary_CheckList.json``), else None."""
    return _BY_STEM.get(name.removesuffix(_CHECKLIST_SUFFIX)) if name.endswith(_CHECKLIST_SUFFIX) else None


def layout_files(root: Path) -> list[Path]:
    """The JSON files of a dataset root as they are (known or not): mtqa, then checklist."""
    return sorted(mtqa_dir(root).glob("*.json")) + sorted(checklist_dir(root).glob("*.json"))


# ----------------------------------------------------------------------------------- records

def event_value(event: str) -> int | str:
    """``event_index`` as written (see the module doc): ``"3"`` -> 3, ``"03"`` and ``"a"`` stay strings."""
    return int(event) if event.isascii() and event.isdigit() and str(int(event)) == event else event


def checklist_entry(round_index: int, items: list[ChecklistItem]) -> dict[str, Any]:
    """A checklist entry of the released layout: ``{"round index": k, "Q1": ..., "A1": ...}``."""
    entry: dict[str, Any] = {"round index": round_index}
    for i, it in enumerate(items, 1):
        entry[f"Q{i}"] = it.question
        entry[f"A{i}"] = it.expected
    return entry


def kept(status: str, *, accepted_only: bool = False, drop_rejected: bool = False) -> bool:
    """Whether an export writes a dialogue of this review status (see the module doc)."""
    if accepted_only:
        return status == "accepted"
    return not (drop_rejected and status == "rejected")


def write_layout_json(path: Path, obj: Any) -> None:
    """Write one file of the layout in its format (UTF-8, indent 2), whole or not at all."""
    atomic_write_json(path, obj)


def write_checklist_file(root: Path, task: Task, checklists: dict[str, Any]) -> Path:
    """``checklist/<stem>_CheckList.json`` of ``root`` (``{video: {event: [entry, ...]}}``); returns its path."""
    path = checklist_path(root, task)
    write_layout_json(path, checklists)
    return path


def place_video(out: Path, src: Path, rel: Path | str, mode: VideoMode, previous: Path | None = None) -> Path:
    """Put the video ``src`` at ``out/videos/<rel>`` (a copy or a hard link, never a symbolic link). ``previous``:
    the folder ``out`` replaces; a copy it already holds (the same size) is hard-linked, not copied again."""
    dst = videos_dir(out) / rel
    old = videos_dir(previous) / rel if previous is not None else None
    if mode == "copy" and old is not None and old.is_file() and not old.is_symlink() \
            and old.stat().st_size == src.stat().st_size:
        place_file(old, dst, "link")
    else:
        place_file(src, dst, mode)
    return dst


class LayoutWriter:
    """Collects dialogues (and the videos and ``metadata.json`` of an export), then writes the twelve task
    files of the layout. Every export writes the layout through this class.

    ``not_a_benchmark``: why the data is not a real benchmark (built with a scripted model), written into every
    dialogue record (:data:`NOT_A_BENCHMARK_KEY`); may be set any time before writing."""

    def __init__(self, not_a_benchmark: str | None = None) -> None:
        self.mtqa: dict[Task, dict[str, list[dict[str, Any]]]] = {t: {} for t in TASKS}
        self.checklists: dict[Task, dict[str, dict[str, list[dict[str, Any]]]]] = {t: {} for t in TASKS}
        self.not_a_benchmark = not_a_benchmark
        #: (source file, path under videos/, how it is placed) of every video of an export
        self.videos: list[tuple[Path, Path | str, VideoMode]] = []
        #: ``metadata.json`` of an export (None: none is written)
        self.metadata: dict[str, Any] | None = None

    @property
    def dialogues(self) -> int:
        """How many dialogues have been added so far, over every task."""
        return sum(len(v) for t in TASKS for v in self.mtqa[t].values())

    def add(self, task: Task, video: str, event: str, rounds: list[dict[str, Any]],
            checklists: dict[int, list[ChecklistItem]]) -> int:
        """One dialogue (rounds in order, checklists by round index); returns its number of checklist entries."""
        self.mtqa[task].setdefault(video, []).append(
            {"event_index": event_value(event), "mtqa": {f"Round {k}": r for k, r in enumerate(rounds, 1)}})
        entries = [checklist_entry(k, items) for k, items in sorted(checklists.items())]
        if entries:
            self.checklists[task].setdefault(video, {})[event] = entries
        return len(entries)

    def add_video(self, src: Path, rel: Path | str, mode: VideoMode) -> None:
        """A video of the export: ``src`` placed at ``videos/<rel>`` when the export is written."""
        self.videos.append((Path(src), rel, mode))

    def _records(self, task: Task) -> dict[str, list[dict[str, Any]]]:
        if self.not_a_benchmark is None:
            return self.mtqa[task]
        return {video: [{**d, NOT_A_BENCHMARK_KEY: self.not_a_benchmark} for d in dialogues]
                for video, dialogues in self.mtqa[task].items()}

    def write(self, folder: Path, previous: Path | None = None) -> None:
        """Everything collected into ``folder`` as it is (for a caller that owns the folder's swap, such as
        the review export): the task files, the videos (copies the replaced folder ``previous`` holds are
        linked from there), ``metadata.json``."""
        for t in TASKS:
            write_layout_json(mtqa_path(folder, t), self._records(t))
            write_checklist_file(folder, t, self.checklists[t])
        for src, rel, mode in self.videos:
            place_video(folder, src, rel, mode, previous)
        if self.metadata is not None:
            write_layout_json(metadata_path(folder), self.metadata)

    def export(self, out: Path, empty: str = "no dialogue to export") -> None:
        """The dataset folder ``out``, written beside it and swapped in whole (see the module doc); without a
        dialogue :class:`NothingWritten` (saying ``empty``) and ``out`` is left as it was. A folder ``out`` that
        holds anything but an earlier export (the layout's folders and ``metadata.json``) is refused: replacing
        it would delete those files."""
        foreign = sorted(p.name for p in out.iterdir() if p.name not in {*FOLDERS, METADATA_FILE}) \
            if out.is_dir() else []
        if foreign:
            raise OutputError(f"{out}: holds files that are not part of an export ({', '.join(foreign[:3])}"
                              f"{', ...' if len(foreign) > 3 else ''}); the export replaces the whole folder",
                              hint="choose a new or empty folder, or move those files away")
        with FolderSwap(out) as stage:
            if not self.dialogues:
                raise NothingWritten(f"{out}: {empty}; " + (
                    "the previous export there is kept as it was" if out.exists() else "nothing was written"))
            self.write(stage, previous=out if out.is_dir() else None)
