"""Load the released MT-Video-Bench layout (``mtqa/``, ``checklist/``, ``videos/``).

The loader never stops at the first problem: every problem becomes a :class:`Problem`
naming the file, the video, the event and the field, so ``mtvbench validate`` can list
them all at once and ``mtvbench run`` can refuse invalid data with the same messages.
Quirks of the release that are accepted: ``event_index`` as int or string, any key order
inside checklist entries, ``round index`` as int or numeric string.

Files are read strictly (:func:`mtvbench.util.jsonio.load_json_file`): a key given twice
(a video or a ``Round k`` twice, which a plain JSON reader silently drops), ``NaN``,
nesting deeper than 64 levels, invalid UTF-8 and anything that is not a regular file (a
FIFO would block forever) are errors naming the line and the place in the file.

Record values, error (E) or warning (W):

- E ``event_index`` missing, ``true``/``false``, a list/object, a float (``1.5``, also
  ``2.0``: it would not match the checklist key ``"2"``), a negative integer or a blank string;
- E ``round index`` missing, a bool, a float (``2.0``, ``2.5``), a non-numeric string, or < 1;
- E a round key not of the form ``Round k`` (k >= 1); W rounds not numbered 1..n in file order (a gap,
  or out of order): the ``authors`` protocol takes answers by position as the authors' eval.py does;
- E ``User`` (the question) missing, not text or blank: the model would be asked nothing;
- E ``Assistant`` (the golden answer) missing or not text; W blank: it is only the history of
  later turns (and the ``oracle`` baseline), and the judge never reads it;
- E ``Ability`` present but not text; a missing ``Ability`` makes the round context only in
  the four labelled tasks (the official rule);
- E a checklist question blank or not text, an answer other than Yes/No; W ``yes``/``NO``
  (read as Yes/No), a number of items other than 5, unknown keys in a checklist entry, a ``round index``
  given as text (the authors' eval.py never matches it), a checklist on a round that is not a model turn,
  two checklist entries for one round (the last is used; under ``authors`` the last one whose ``round index`` is
  a number, as eval.py keys entries by the raw value);

Every round keeps its place in the file (``position``) and every checklist entry its keys and values
as written (``checklist_raw``): the ``authors`` protocol (:mod:`mtvbench.protocol`) reads them.
- E a video name that is empty or blank, or that would leave ``videos/``;
- E a video that is missing, not a regular file, empty, not openable, without a video
  stream, without a decodable first frame, or truncated (:mod:`mtvbench.media.probe`);
- E a symbolic link anywhere under the data root, ``videos/`` itself included, one error
  naming each link (:func:`find_links`). A dataset holds its files: a link could point
  anywhere (outside the root, at a file that changes under a run, nowhere at all), so none is
  followed. Hard links and copies are fine (``download``, ``review export --video-mode link``).

Dataset level:

- E (with ``require_scored``, as ``mtvbench validate`` loads) dialogues but no scored turn, in
  the whole dataset or in one task: nothing of it would be evaluated (``mtvbench checklists``
  loads without the rule: writing the missing checklists is its job);
- W ``metadata.json`` says the dataset was built with a scripted model, or its dialogue records carry the
  mark (``mtvbench_not_a_benchmark``, which eval.py ignores; read for nothing else): NOT a real benchmark,
  carried in :attr:`Benchmark.not_a_benchmark` (:func:`mtvbench.data.buildmeta.mark_of`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from mtvbench.data.buildmeta import mark_of, record_mark
from mtvbench.data.layout import (
    CHECKLIST_PATTERN,
    FOLDERS_TEXT,
    MTQA_DIR,
    checklist_dir,
    checklist_path,
    checklist_rel,
    mtqa_dir,
    mtqa_path,
    task_of_checklist,
    task_of_mtqa,
    videos_dir,
)
from mtvbench.data.schema import (
    TASKS,
    Benchmark,
    ChecklistItem,
    Dialogue,
    NumberedEntry,
    Round,
    Task,
    is_model_turn,
)
from mtvbench.errors import InputError, MtvbenchError
from mtvbench.media.probe import ProbeCache
from mtvbench.util.jsonio import JSONFileError, load_json_file
from mtvbench.util.jsonio import yes_no as _normalise_yes_no

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
        super().__init__(f"{len(errors)} error(s) in dataset:\n" + "\n".join(p.render() for p in errors),
                         hint="`mtvbench validate DATA` lists them with the warnings")


class _Collector:
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []

    def rel(self, path: Path) -> str:
        """A file inside the dataset as a relative path; the dataset folder itself in full."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return str(path) if rel == Path(".") else str(rel)

    def add(self, level: Literal["error", "warning"], path: Path, message: str, **where: Any) -> None:
        self.problems.append(Problem(level=level, file=self.rel(path), message=message, **where))


def _dotted(path: Sequence[str | int]) -> str | None:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[") or None


def _read_json(path: Path, col: _Collector, checklist: bool = False) -> Any:
    """The file's JSON, or None after recording why not (one problem naming the line and the record)."""
    try:
        return load_json_file(path, "data file")
    except JSONFileError as e:
        # both files are keyed by video; a checklist file then by event
        where: list[str | int] = list(e.json_path)
        video = where.pop(0) if where and isinstance(where[0], str) else None
        event = where.pop(0) if checklist and video is not None and where and isinstance(where[0], str) else None
        reason = f"line {e.line}: {e.reason}" if e.line is not None else e.reason
        col.add("error", path, reason, video=video, event=event, field=_dotted(where))
    except InputError as e:
        col.add("error", path, e.message.removeprefix(f"{path}: "))
    return None


def _safe_video_name(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or "\x00" in name:
        return False
    parts = re.split(r"[\\/]", name)
    return ".." not in parts and not re.match(r"^[A-Za-z]:", name)


def find_links(root: Path) -> list[Path]:
    """Every symbolic link under ``root``, sorted; none is followed (a linked folder is listed,
    not entered)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [Path(dirpath) / n for n in dirnames + filenames if (Path(dirpath) / n).is_symlink()]
    return sorted(out)


def _add_links(col: _Collector, root: Path) -> set[Path]:
    """One error per symbolic link under ``root``; returns the links."""
    links = find_links(root)
    for link in links:
        try:
            target = f" (to {os.readlink(link)})"
        except OSError:
            target = ""
        col.add("error", link, f"is a symbolic link{target}; a data root holds no links: put the file itself "
                "there (a copy, or a hard link: `cp -l`, `mtvbench review export --video-mode link`)")
    return set(links)


def refuse_links(root: Path) -> None:
    """:class:`DataError` naming every symbolic link under ``root`` (for commands that read a data root
    without loading it whole, e.g. ``checklists``)."""
    col = _Collector(Path(root))
    if _add_links(col, Path(root)):
        raise DataError(col.problems)


def locate_video(root: Path, name: str) -> tuple[Path | None, Path | None]:
    """(the video file, None) or (None, the path that exists there but is not a regular file:
    a symbolic link, a FIFO, a device, ...).

    Tries ``videos/<name>`` and ``videos/<name>.<ext>``; never anything outside ``videos/`` and
    never through a link (``videos/`` itself a link is returned as the odd path).
    """
    vdir = videos_dir(root)
    if vdir.is_symlink():
        return None, vdir
    candidates = [vdir / name] + [vdir / f"{name}{s}" for s in VIDEO_SUFFIXES]
    odd: Path | None = None
    for c in candidates:
        try:
            mode = os.lstat(c).st_mode
        except OSError:  # nothing there (or a parent is not a folder)
            continue
        if stat.S_ISREG(mode) and c.resolve().parent.is_relative_to(vdir.resolve()):
            return c, None
        if odd is None and not stat.S_ISDIR(mode):
            odd = c  # a link (or reached through one), FIFO, socket or device: never opened (a FIFO would block)
    return None, odd


def find_video(root: Path, name: str) -> Path | None:
    """``videos/<name>`` or ``videos/<name>.<ext>`` when it is a regular file; never outside ``videos/``."""
    return locate_video(root, name)[0]


def _round_index(raw: Any) -> tuple[int | None, str]:
    """A checklist's ``round index``: an integer >= 1 or a string of digits (a quirk of the release)."""
    if raw is None or isinstance(raw, bool):
        return None, f"missing or invalid 'round index' (got {raw!r})"
    if isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit():
        raw = int(raw.strip())
    if not isinstance(raw, int):
        return None, f"'round index' must be an integer such as 3, got {raw!r}"
    if raw < 1:
        return None, f"'round index' must be >= 1 (rounds are numbered from Round 1), got {raw}"
    return raw, ""


def _event_key(raw: Any) -> tuple[str | None, str]:
    """A dialogue's ``event_index`` as the string key the checklist file uses, or (None, why not)."""
    if raw is None or isinstance(raw, (bool, list, dict)):
        return None, f"missing or invalid event_index (got {raw!r})"
    if isinstance(raw, float):
        hint = f" (write {int(raw)})" if raw.is_integer() else ""
        return None, f"event_index must be an integer or a string, got {raw!r}{hint}"
    if isinstance(raw, int):
        return (str(raw), "") if raw >= 0 else (None, f"event_index must be >= 0, got {raw}")
    if isinstance(raw, str) and raw.strip():
        return raw, ""
    return None, f"event_index is empty or blank (got {raw!r})"


class _Entry(NamedTuple):
    """One parsed checklist entry."""

    round_index: int
    items: list[ChecklistItem]
    #: the ``Q*``/``A*`` keys and ``str()`` of their values, in file order (as eval.py reads them)
    raw: list[tuple[str, str]]
    #: ``round index`` was given as text
    index_text: bool
    #: the round's last entry whose ``round index`` is a number, when this one (the last) gives it as text:
    #: the authors' eval.py keys entries by the raw value and judges that one
    by_number: _Entry | None = None


def _parse_checklist_entry(
    entry: Any, path: Path, video: str, event: str, col: _Collector
) -> _Entry | None:
    if not isinstance(entry, dict):
        col.add("error", path, "checklist entry is not an object", video=video, event=event)
        return None
    where = {"video": video, "event": event}
    raw_round = entry.get("round index")
    round_index, why = _round_index(raw_round)
    if round_index is None:
        col.add("error", path, why, field="round index", **where)
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
    index_text = isinstance(raw_round, str)
    if ok and index_text:
        col.add("warning", path, f"round {round_index}: 'round index' given as text ({raw_round!r}); the authors' "
                "eval.py never matches it, so --protocol authors does not judge this checklist (as eval.py)",
                field="round index", **where)
    raw = [(str(k), str(v)) for k, v in entry.items() if str(k).startswith(("Q", "A"))]
    return _Entry(round_index, items, raw, index_text) if ok else None


def _load_checklists(root: Path, task: Task, col: _Collector) -> dict[tuple[str, str], dict[int, _Entry]]:
    path = checklist_path(root, task)
    out: dict[tuple[str, str], dict[int, _Entry]] = {}
    if not path.exists():
        col.add("warning", path, "checklist file missing: no turn of this task will be scored")
        return out
    data = _read_json(path, col, checklist=True)
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
            written: dict[int, list[_Entry]] = {}
            for entry in entries:
                parsed = _parse_checklist_entry(entry, path, video, event, col)
                if parsed is not None:
                    written.setdefault(parsed.round_index, []).append(parsed)
            for k, found in written.items():
                per_round[k] = _chosen_entry(k, found, path, video, event, col)
    return out


def _chosen_entry(k: int, found: list[_Entry], path: Path, video: str, event: str, col: _Collector) -> _Entry:
    """The entry of round ``k`` among those written for it: the last one (the paper's reading), with the entry the
    authors' eval.py judges when that differs: eval.py keys its lookup by the raw ``round index``, so among
    ``2`` and ``"2"`` the last entry written as a number is judged and an entry written as text never is."""
    last = found[-1]
    if len(found) == 1:
        return last
    numbers = [e for e in found if not e.index_text]
    where = {"video": video, "event": event, "field": "round index"}
    if not last.index_text:
        why = "the last one is used (also by the authors' eval.py)"
    elif numbers:
        why = ("--protocol paper uses the last one; --protocol authors judges the last one whose 'round index' is "
               "a number (entry written as text ignored), as the authors' eval.py, which keys entries by the raw "
               "value")
        last = last._replace(by_number=numbers[-1])
    else:
        why = ("--protocol paper uses the last one; --protocol authors judges none (every one gives 'round index' "
               "as text, which the authors' eval.py never matches)")
    col.add("warning", path, f"{len(found)} checklist entries for round {k}: {why}", **where)
    return last


def _parse_rounds(mtqa: Any, path: Path, video: str, event: str | None, task: Task, col: _Collector
                  ) -> list[Round] | None:
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
            elif not val.strip() and fld == "User":
                col.add("error", path, f"{name}: the question ('User') is blank", field=f"mtqa.{name}.User", **where)
                ok = False
            else:
                if not val.strip():
                    col.add("warning", path, f"{name}: the golden answer ('Assistant') is blank",
                            field=f"mtqa.{name}.Assistant", **where)
                fields[fld] = val
        ability = body.get("Ability")
        if ability is not None and not isinstance(ability, str):
            col.add("error", path, f"{name}: 'Ability' must be text", field=f"mtqa.{name}.Ability", **where)
            ok = False
            ability = None
        if k < 1:
            col.add("error", path, f"round key {name!r}: rounds are numbered from Round 1", field=f"mtqa.{name}",
                    **where)
            ok = False
            continue
        if len(fields) == 2:
            rounds.append(Round(index=k, user=fields["User"], assistant=fields["Assistant"], ability=ability,
                                model_turn=is_model_turn(task, ability), position=len(rounds)))
    if not ok:
        return None
    in_file = [r.index for r in rounds]
    if in_file != list(range(1, len(in_file) + 1)):
        col.add("warning", path, f"rounds are not numbered Round 1..Round n in file order (got {in_file}): "
                "--protocol authors pairs round k with the answer at position k, as the authors' eval.py does",
                field="mtqa", **where)
    rounds.sort(key=lambda r: r.index)
    if not any(r.model_turn for r in rounds):
        col.add("warning", path, "no round is a model turn under this task's rule", field="mtqa", **where)
    return rounds


def _check_video_files(videos: dict[str, Path], cache: ProbeCache | None, col: _Collector) -> None:
    """One problem per video that is not usable (:mod:`mtvbench.media.probe`)."""
    from mtvbench.media.probe import check_videos

    for name, check in check_videos(videos, cache).items():
        if check.problem is not None:
            col.add("error", videos[name], check.problem, video=name)


def _scored_problems(root: Path, dialogues: list[Dialogue], col: _Collector) -> None:
    """Dialogues without any scored turn, per task and in the whole dataset: an error each."""
    for task in TASKS:
        of_task = [d for d in dialogues if d.task == task]
        if of_task and not any(d.scored_turns for d in of_task):
            col.add("error", mtqa_path(root, task),
                    f"{len(of_task)} dialogue(s) but no scored turn: no model turn has a checklist entry in "
                    f"{checklist_rel(task)} (`mtvbench checklists` writes them)")
    if dialogues and not any(d.scored_turns for d in dialogues):
        col.add("error", mtqa_dir(root), f"{len(dialogues)} dialogue(s) but no scored turn in the whole dataset: "
                "nothing of it would be evaluated")


def load_official(root: str | Path, tasks: tuple[Task, ...] = TASKS, check_videos: bool = True,
                  probe_cache: ProbeCache | None = None, require_scored: bool = False,
                  ) -> tuple[Benchmark | None, list[Problem]]:
    """Load a dataset; return (benchmark or None when there are errors, all problems).

    With ``check_videos`` every referenced video must exist and pass
    :func:`mtvbench.media.probe.check_video` (verdicts cached in ``probe_cache``, by default
    the user cache). With ``require_scored`` dialogues without any scored turn (in the dataset
    or a task) are an error (``mtvbench validate``)."""
    root = Path(root).expanduser().resolve()
    col = _Collector(root)
    if not root.is_dir():
        col.add("error", root, "dataset folder does not exist")
        return None, col.problems
    if not mtqa_dir(root).is_dir():
        col.add("error", mtqa_dir(root), f"folder missing (expected the released layout: {FOLDERS_TEXT})")
        return None, col.problems
    known = {t.official_stem for t in TASKS}
    for f in sorted(mtqa_dir(root).glob("*.json")):
        if task_of_mtqa(f.name) is None:
            col.add("error", f, f"unknown task file; expected one of {sorted(known)}")
    for f in sorted(checklist_dir(root).glob("*.json")):
        if task_of_checklist(f.name) is None:
            col.add("error", f, f"unknown checklist file; expected {CHECKLIST_PATTERN}")

    links = _add_links(col, root)
    dialogues: list[Dialogue] = []
    videos: dict[str, Path] = {}
    missing_videos: set[str] = set()
    seen_ids: set[str] = set()
    in_records: tuple[str, str] | None = None  # the first mark of a dialogue record: (reason, file)
    for task in tasks:
        path = mtqa_path(root, task)
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
            if not video.strip():
                col.add("error", path, "video name is empty or blank", video=video)
                continue
            if not _safe_video_name(video):
                col.add("error", path, "video name would escape the data root", video=video)
                continue
            if not isinstance(entries, list):
                col.add("error", path, "value must be a list of dialogues", video=video)
                continue
            if check_videos and video not in videos and video not in missing_videos:
                vp, odd = locate_video(root, video)
                if vp is None:
                    missing_videos.add(video)
                    if odd is not None and ({odd, *odd.parents} & links):
                        pass  # a link, or reached through one: reported as a link already
                    elif odd is not None:
                        col.add("error", odd, "is not a regular file (a FIFO, device or socket), not a video file",
                                video=video)
                    else:
                        col.add("error", path, f"video file not found under videos/ (tried {video} and "
                                f"{video}{{{','.join(VIDEO_SUFFIXES)}}})", video=video)
                else:
                    videos[video] = vp
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    col.add("error", path, f"dialogue #{i} is not an object", video=video)
                    continue
                if in_records is None and (why := record_mark(entry)) is not None:
                    in_records = (why, col.rel(path))
                event, why = _event_key(entry.get("event_index"))
                if event is None:
                    col.add("error", path, f"dialogue #{i}: {why}", video=video, field="event_index")
                rounds = _parse_rounds(entry.get("mtqa"), path, video, event, task, col)  # its problems too
                if rounds is None or event is None:
                    continue
                per_round = checklists.get((video, event), {})
                for k, ck in per_round.items():
                    rnd = next((r for r in rounds if r.index == k), None)
                    if rnd is None:
                        col.add("error", checklist_path(root, task),
                                f"checklist for round {k}, which does not exist (dialogue has {len(rounds)} rounds)",
                                video=video, event=event, field="round index")
                        continue
                    used_checklists.add((video, event, k))
                    if not rnd.model_turn:
                        col.add("warning", checklist_path(root, task),
                                f"checklist for round {k}, which is not a model turn (Ability={rnd.ability!r}): "
                                "not judged under --protocol paper; --protocol authors judges it against the "
                                "placeholder answer, as the authors' eval.py does", video=video, event=event,
                                field="round index")
                    rnd.checklist = ck.items
                    rnd.checklist_raw = ck.raw
                    rnd.checklist_index_text = ck.index_text
                    if ck.by_number is not None:
                        rnd.checklist_by_number = NumberedEntry(checklist=ck.by_number.items,
                                                                checklist_raw=ck.by_number.raw)
                d = Dialogue(task=task, video=video, event=event, rounds=rounds)
                if d.id in seen_ids:
                    col.add("error", path, "duplicate dialogue id (same video and event_index twice)",
                            video=video, event=event, field="event_index")
                    continue
                seen_ids.add(d.id)
                dialogues.append(d)
        for (video, event), per_round in checklists.items():
            if f"{task.value}/{video}/{event}" not in seen_ids and per_round:
                col.add("error", checklist_path(root, task),
                        f"checklist for a dialogue that does not exist in {MTQA_DIR}/", video=video, event=event)
    if not dialogues and not any(p.level == "error" for p in col.problems):
        col.add("error", mtqa_dir(root), "no dialogues found")
    if require_scored:
        _scored_problems(root, dialogues, col)
    if (mark := mark_of(root, in_records)) is not None:
        col.add("warning", root / mark.found_in, mark.line)
    if check_videos:
        _check_video_files(videos, probe_cache or ProbeCache(), col)
    errors = any(p.level == "error" for p in col.problems)
    return (None if errors else Benchmark(root=root, dialogues=dialogues, videos=videos, not_a_benchmark=mark)
            ), col.problems


def load_benchmark(root: str | Path, check_videos: bool = True, probe_cache: ProbeCache | None = None,
                   tasks: tuple[Task, ...] = TASKS) -> Benchmark:
    """Load a dataset in the released layout (``mtqa/``, ``checklist/``, ``videos/``).

    Args:
        root: the dataset folder.
        check_videos: open every referenced video (results cached by content) and report the broken ones.
        probe_cache: where those checks are cached (default: the user cache).
        tasks: load only these tasks.

    Returns:
        The benchmark: dialogues with their checklists, and the video files.

    Raises:
        DataError: listing every error found (warnings do not raise)."""
    bench, problems = load_official(root, tasks=tasks, check_videos=check_videos, probe_cache=probe_cache)
    if bench is None:
        raise DataError(problems)
    return bench

