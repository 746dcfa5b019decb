"""Every writer of a folder writes beside it and swaps on success (``mtvbench.util.files.FolderSwap``).

The class of problem: a writer that fails part-way (it has nothing to write, it raises in the middle, the disk
fills up) must leave the folder it replaces byte for byte as it was, and leave nothing half-written beside it.
Each writer that makes a folder is driven into each failure: the released-layout writer (every export), the
review export, ``checklists --out``, ``download`` (the Hub layout) and the unpacking of an archive.
"""

from __future__ import annotations

import errno
import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mtvbench.data import archives, hub
from mtvbench.data.hub import HubSpec, Snapshot, prepare, read_record
from mtvbench.data.layout import LayoutWriter
from mtvbench.data.schema import TASKS, ChecklistItem
from mtvbench.errors import MtvbenchError, OutputError
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.util import files
from mtvbench.util.files import FolderSwap, NothingWritten
from tests.support.datasets import make_dataset
from tests.support.hubfake import COMMIT, dataset_files

FAILURES = ("empty", "exception", "disk full")


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (the folder's identity, byte for byte)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def siblings(out: Path) -> list[str]:
    """What a writer of ``out`` may have left beside it (hidden ``.NAME.*`` entries)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


class Boom(RuntimeError):
    """The failure raised in the middle of a write."""


def full_disk_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """Every atomic write after the first ``calls`` ones finds the disk full (fsync raises ENOSPC)."""
    real = os.fsync
    seen = {"n": 0}

    def fsync(fd: int) -> None:
        seen["n"] += 1
        if seen["n"] > calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)


def assert_kept(out: Path, before: dict[str, bytes]) -> None:
    assert tree(out) == before
    assert siblings(out) == []


# ------------------------------------------------------------------------------ the mechanism

def test_folder_swap_replaces_on_success_and_keeps_the_old_folder_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old")
    (out / "keep").mkdir()
    (out / "keep" / "cache.bin").write_bytes(b"cached")
    before = tree(out)
    with pytest.raises(Boom), FolderSwap(out, carry=("keep",)) as stage:
        (stage / "a.txt").write_text("new, half")
        raise Boom
    assert_kept(out, before)
    with FolderSwap(out, carry=("keep",)) as stage:
        assert stage.parent == out.parent and stage != out and not any(stage.iterdir())
        (stage / "b.txt").write_text("new")
    assert tree(out) == {"b.txt": b"new", "keep/cache.bin": b"cached"}  # replaced whole; the carried entry kept
    assert siblings(out) == []


def test_folder_swap_that_fails_at_the_swap_puts_the_old_folder_back(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old")
    (out / ".lock").write_text("")
    before = tree(out)
    real = os.rename

    def rename(src: Any, dst: Any) -> None:
        if Path(src).name.startswith(".out.partial"):  # the stage cannot be moved into place
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real(src, dst)

    monkeypatch.setattr(files.os, "rename", rename)
    with pytest.raises(OutputError, match="cannot move the new folder into place"), \
            FolderSwap(out, carry=(".lock",)) as stage:
        (stage / "a.txt").write_text("new")
    assert_kept(out, before)


def test_folder_swap_removes_the_stages_of_processes_that_are_gone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = tmp_path / f".out.partial-{2**22 + 12345}"  # above the kernel's pid_max default: no such process
    dead.mkdir()
    (dead / "half.json").write_text("{")
    with FolderSwap(out) as stage:
        (stage / "x").write_text("1")
    assert siblings(out) == [] and tree(out) == {"x": b"1"}


def test_a_swap_killed_between_its_renames_gets_its_old_folder_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old = tmp_path / f".out.old-{2**22 + 12345}"  # a process killed after moving out aside
    old.mkdir()
    (old / "a.txt").write_text("the previous export")
    with pytest.raises(Boom), FolderSwap(out):
        raise Boom
    assert tree(out) == {"a.txt": b"the previous export"} and siblings(out) == []


# ------------------------------------------------------------------------------ the released layout

def _layout(n_dialogues: int = 2) -> LayoutWriter:
    w = LayoutWriter()
    items = [ChecklistItem(key=f"Q{i}", question=f"Does the model say {i}?", expected="Yes") for i in range(1, 6)]
    for e in range(n_dialogues):
        w.add(TASKS[e % len(TASKS)], "vid", str(e), [{"User": "q?", "Assistant": "a.", "Ability": "Summary"}],
              {1: items})
    return w


@pytest.mark.parametrize("failure", FAILURES)
def test_layout_export_that_fails_keeps_the_previous_export(failure: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "dataset"
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\x00" * 1000)
    first = _layout(3)
    first.add_video(video, "vid.mp4", "copy")
    first.metadata = {"format": "mtvbench-build-metadata"}
    first.export(out)
    before = tree(out)
    assert len(before) == 2 * len(TASKS) + 2
    again = _layout(0 if failure == "empty" else 2)
    again.add_video(video, "vid.mp4", "copy")
    if failure == "empty":
        with pytest.raises(NothingWritten, match="previous export there is kept"):
            again.export(out)
    elif failure == "exception":
        def place(*a: Any, **k: Any) -> None:
            raise Boom("the video could not be read")
        monkeypatch.setattr("mtvbench.data.layout.place_file", place)
        with pytest.raises(Boom):
            again.export(out)
    else:
        full_disk_after(monkeypatch, 5)  # five task files written, then the disk is full
        with pytest.raises(OutputError, match="no space left"):
            again.export(out)
    assert_kept(out, before)


# ------------------------------------------------------------------------------ review export

@pytest.mark.parametrize("failure", FAILURES)
def test_review_export_that_fails_keeps_the_previous_export(failure: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from mtvbench.review.export import export_review
    from mtvbench.review.source import open_source
    from mtvbench.review.store import ReviewStore

    data = make_dataset(tmp_path / "data")
    source = open_source(data)
    store = ReviewStore(tmp_path / "review.sqlite")
    out = tmp_path / "export"
    export_review(source, store, out, video_mode="copy")
    before = tree(out)
    assert "review.json" in before
    if failure == "empty":
        with pytest.raises(NothingWritten, match="none is accepted yet.*previous export there is kept"):
            export_review(source, store, out, accepted_only=True, video_mode="copy")
    elif failure == "exception":
        def place(*a: Any, **k: Any) -> None:
            raise Boom("the video could not be read")
        monkeypatch.setattr("mtvbench.data.layout.place_file", place)
        with pytest.raises(Boom):
            export_review(source, store, out, video_mode="copy")
    else:
        full_disk_after(monkeypatch, 3)
        with pytest.raises(OutputError, match="no space left"):
            export_review(source, store, out, video_mode="copy")
    assert_kept(out, before)


# ------------------------------------------------------------------------------ checklists --out

GOOD = {"Q1": "Does the model say the square is red?", "A1": "Yes",
        "Q2": "Does the model say the square moves right?", "A2": "Yes",
        "Q3": "Does the model say the circle is blue?", "A3": "Yes",
        "Q4": "Does the model say the circle stays?", "A4": "Yes",
        "Q5": "Does the model say the square is green?", "A5": "No"}


class Writer:
    """A checklist writer in this process: a valid checklist, or ``fail(call)`` raising at a call."""

    needs_frames = False
    name = "writer"

    def __init__(self, fail: Callable[[int], None] | None = None, text: str = json.dumps(GOOD)) -> None:
        self.calls = 0
        self.fail = fail
        self.text = text

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.calls += 1
        if self.fail is not None:
            self.fail(self.calls)
        text = self.text
        return GenerationResult(text=text, raw_text=text)

    async def aclose(self) -> None:
        return None


def _fill(data: Path, out: Path, writer: Writer, **kw: Any) -> Any:
    import asyncio

    from mtvbench.checklist_gen.fill import fill_checklists

    return asyncio.run(fill_checklists(data, writer, out=out, concurrency=1, **kw))


GOOD2 = dict(GOOD, Q1="Does the model say the square is crimson?")


@pytest.mark.parametrize("failure", FAILURES)
def test_checklists_out_that_fails_keeps_the_previous_folder(failure: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The earlier ``--out`` folder stays byte for byte; beside it at most the named resume stage (checklists
    already made cost calls: kept, see the next test), never a half-written copy."""
    data = make_dataset(tmp_path / "data")
    out = tmp_path / "with-checklists"
    first = _fill(data, out, Writer())
    assert first.generated > 0
    before = tree(out)
    error: BaseException | None = None
    if failure == "empty":  # nothing left to generate: the folder is not rewritten
        rep = _fill(data, out, Writer())
        assert rep.generated == 0 and rep.files_written == []
    elif failure == "exception":
        def fail(call: int) -> None:
            if call > 3:  # after the first dialogue's new checklists were written
                raise MtvbenchError("the writer's endpoint is gone")
        with pytest.raises(MtvbenchError, match="endpoint is gone") as e:
            _fill(data, out, Writer(fail, text=json.dumps(GOOD2)), overwrite=True)
        error = e.value
    else:
        full_disk_after(monkeypatch, 1)  # the first checklist file of the new folder is written, then no space
        with pytest.raises(OutputError, match="no space left") as e:
            _fill(data, out, Writer(text=json.dumps(GOOD2)), overwrite=True)
        error = e.value
    assert tree(out) == before
    left = siblings(out)
    assert left in ([], [".with-checklists.partial"])
    if left:
        assert error is not None and str(out.parent / left[0]) in str(error)
        stage = out.parent / left[0]
        assert all(json.loads(p.read_text()) is not None for p in (stage / "checklist").glob("*.json"))


def test_checklists_out_stopped_after_generating_keeps_them_beside_and_continues(tmp_path: Path) -> None:
    """Generated checklists cost calls: a run stopped after some keeps them in ``.DIR.partial`` (named in the
    error), the earlier folder stays as it was, and the same command continues from them and swaps."""
    data = make_dataset(tmp_path / "data")
    out = tmp_path / "with-checklists"
    first = _fill(data, out, Writer(text="no checklist here"))  # every turn fails the rules: exit 3, none made
    assert first.generated == 0 and len(first.failed) == 6
    before = tree(out)

    def fail(call: int) -> None:
        if call > 3:  # the first dialogue's three checklists are made and written, then the endpoint goes
            raise MtvbenchError("the writer's endpoint is gone")

    with pytest.raises(MtvbenchError) as e:
        _fill(data, out, Writer(fail))
    assert tree(out) == before
    assert siblings(out) == [".with-checklists.partial"] and ".with-checklists.partial" in str(e.value)
    writer = Writer()
    rep = _fill(data, out, writer)
    assert siblings(out) == [] and rep.out == str(out)
    assert writer.calls == 3 and rep.generated == 3  # only the second dialogue is asked: nothing paid twice
    ts = json.loads((out / "checklist" / "topic_shifting_CheckList.json").read_text())["vid0"]["4"]
    assert sorted(e["round index"] for e in ts) == [1, 2, 3, 4, 5]


# ------------------------------------------------------------------------------ download (Hub layout)

def _snapshot(folder: Path, files_: dict[str, bytes], commit: str = COMMIT) -> Snapshot:
    for rel, blob in files_.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(blob)
    return Snapshot(spec=HubSpec.parse("hf:NJU-LINK/MT-Video-Bench"), path=folder, commit=commit)


@pytest.mark.parametrize("failure", FAILURES)
def test_download_that_fails_keeps_the_previous_dataset(failure: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    released = dataset_files(make_dataset(tmp_path / "released"))
    target = tmp_path / "data"
    prepare(_snapshot(tmp_path / "snap1", released), target)
    before = tree(target)
    assert read_record(target) is not None and read_record(target).complete  # type: ignore[union-attr]
    newer = "f" * 40
    if failure == "empty":  # a snapshot without task files
        snap = _snapshot(tmp_path / "snap2", {"README.md": b"nothing here"}, newer)
        with pytest.raises(MtvbenchError, match="no task files"):
            prepare(snap, target, force=True)
    elif failure == "exception":
        snap = _snapshot(tmp_path / "snap2", released, newer)

        def place(src: Path, dst: Path) -> str:
            raise Boom("copy stopped")
        monkeypatch.setattr(hub, "_place_video", place)
        with pytest.raises(Boom):
            prepare(snap, target, force=True)
    else:
        snap = _snapshot(tmp_path / "snap2", released, newer)
        full_disk_after(monkeypatch, 0)
        with pytest.raises(OutputError, match="no space left"):
            prepare(snap, target, force=True)
    before.pop(".lock", None)
    after = tree(target)
    after.pop(".lock", None)
    assert after == before and siblings(target) == []


def test_download_of_a_new_commit_replaces_the_dataset_whole_and_keeps_unpacked_archives(tmp_path: Path) -> None:
    released = dataset_files(make_dataset(tmp_path / "released"))
    videos = {k: v for k, v in released.items() if k.startswith("videos/")}
    rest = {k: v for k, v in released.items() if not k.startswith("videos/")}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in videos.items():
            z.writestr(k, v)
    target = tmp_path / "data"
    prepare(_snapshot(tmp_path / "snap1", {**rest, "videos.zip": buf.getvalue()}), target)
    unpacked = sorted(p.name for p in (target / ".unpacked").iterdir())
    newer = "f" * 40
    prepared = prepare(_snapshot(tmp_path / "snap2", {**rest, "videos.zip": buf.getvalue()}, newer), target)
    assert prepared.record.commit == newer and read_record(target).commit == newer  # type: ignore[union-attr]
    assert sorted(p.name for p in (target / ".unpacked").iterdir()) == unpacked
    assert siblings(target) == []


# ------------------------------------------------------------------------------ unpacking an archive

def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, blob in members.items():
            z.writestr(name, blob)
    return buf.getvalue()


@pytest.mark.parametrize("failure", FAILURES)
def test_unpack_that_fails_keeps_the_previous_folder(failure: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    arc = tmp_path / "videos.zip"
    arc.write_bytes(_zip_bytes({"a.mp4": b"a" * 100, "b.mp4": b"b" * 100}))
    dest = tmp_path / "unpacked"
    archives.unpack(arc, dest)
    before = tree(dest)
    if failure == "empty":  # a damaged archive: nothing can be read from it
        arc.write_bytes(b"PK\x03\x04 not a zip")
        with pytest.raises(MtvbenchError, match="damaged or incomplete"):
            archives.unpack(arc, dest)
    else:
        arc.write_bytes(_zip_bytes({"a.mp4": b"A" * 100, "b.mp4": b"B" * 100}))
        real = archives._copy_member

        def copy(m: Any, out: Path, archive: Path) -> int:
            if m.name == "b.mp4":
                if failure == "exception":
                    raise Boom("stopped")
                raise OSError(errno.ENOSPC, "No space left on device", str(out))
            return real(m, out, archive)

        monkeypatch.setattr(archives, "_copy_member", copy)
        with pytest.raises(Boom if failure == "exception" else OutputError):
            archives.unpack(arc, dest)
    assert_kept(dest, before)


def test_a_second_export_links_the_copies_of_the_first_instead_of_copying_again(tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\x01" * 4096)
    for _ in range(2):
        w = _layout(2)
        w.add_video(video, "vid.mp4", "copy")
        if _ == 0:
            w.export(out)
            first = (out / "videos" / "vid.mp4").stat().st_ino
        else:
            w.export(out)
    placed = out / "videos" / "vid.mp4"
    assert placed.stat().st_ino == first != video.stat().st_ino  # the first export's copy, not a new one
    assert placed.read_bytes() == video.read_bytes() and siblings(out) == []


def test_an_export_never_replaces_a_folder_that_holds_other_files(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(OutputError, match="not part of an export"):
        _layout(1).export(out)
    assert tree(out) == {"notes.txt": b"my notes"} and siblings(out) == []
