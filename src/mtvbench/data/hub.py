"""Get MT-Video-Bench from the Hugging Face Hub and lay it out as ``mtqa/ checklist/ videos/``.

``mtvbench download`` and every ``--data hf:ORG/NAME[@REVISION]`` go through
:func:`prepare_from_hub`:

1. **Fetch.** ``huggingface_hub.snapshot_download(repo_type="dataset")`` into the Hub's own
   cache (``$HF_HUB_CACHE``, by default ``~/.cache/huggingface/hub``). It is resumable by
   itself (a stopped download continues where it stopped) and works offline from that cache
   (``HF_HUB_OFFLINE=1``, or ``offline=True``). The token is the Hub library's own:
   ``HF_TOKEN`` or the token saved by ``hf auth login``; mtvbench never reads, prints or stores
   it. When online, the file list is read first and the download is refused when it cannot
   fit in the free space of the Hub cache.
2. **Discover.** The released files are found wherever the snapshot keeps them (at the top or
   in sub-folders): the six ``<task>.json`` files, the ``<task>_CheckList.json`` files, loose
   video files, and zip/tar archives, which are unpacked safely
   (:mod:`mtvbench.data.archives`) into ``TARGET/.unpacked/``.
3. **Lay out.** ``TARGET/mtqa``, ``TARGET/checklist`` (copies of the JSON files) and
   ``TARGET/videos`` (hard links to the cached or unpacked video files, so no second copy is
   made; copies where a hard link is impossible, e.g. another file system). Symbolic links
   are not used: the loader refuses any link under a data root. A link in the snapshot is
   followed only inside the dataset's folder of the Hub cache (its ``blobs/``): one pointing
   elsewhere refuses the whole snapshot before anything is written (:func:`check_links`).
   ``TARGET/mtvbench-dataset.json`` records the source, the commit and how the videos were
   placed. The new layout and its record are written beside ``TARGET`` and swapped in whole
   (:class:`mtvbench.util.files.FolderSwap`; the lock and the unpacked archives are carried over): a
   preparation that fails (a full disk, a stopped copy) leaves the earlier dataset there as it was, and a
   new folder's record says ``complete`` only after the swap, so a stopped preparation is redone next time.

``TARGET`` is ``--to DIR`` or, by default (and for ``--data hf:...``), the mtvbench cache:
``$MTVBENCH_CACHE/datasets/ORG--NAME/COMMIT`` (``~/.cache/mtvbench/...``). A prepared commit is
reused as is.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from mtvbench.data.archives import archive_kind, is_macos_metadata, is_split_part, unpack
from mtvbench.data.layout import (
    CHECKLIST_DIR,
    FOLDERS,
    MTQA_DIR,
    checklist_dir,
    mtqa_dir,
    mtqa_name,
    task_of_checklist,
    task_of_mtqa,
    videos_dir,
)
from mtvbench.data.official import VIDEO_SUFFIXES
from mtvbench.data.schema import TASKS
from mtvbench.errors import InputError, MtvbenchError, OutputError
from mtvbench.ledger.lock import file_lock
from mtvbench.util.files import FolderSwap, atomic_write_text, describe_os_error, ensure_dir
from mtvbench.util.paths import cache_dir

HF_PREFIX = "hf:"
DEFAULT_REPO = "NJU-LINK/MT-Video-Bench"
RECORD_FILE = "mtvbench-dataset.json"
#: folders and files of a prepared target that are ours (anything else means "not ours")
_OURS = {RECORD_FILE, ".lock", ".unpacked", *FOLDERS}
#: what a prepared target keeps from one preparation to the next (moved into the new folder at the swap)
_CARRIED = (".lock", ".unpacked")
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_REVISION = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
_MAX_DEPTH = 4  # discovery looks this many folders deep (released folders sit at the top or one down)

Note = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class HubSpec(BaseModel):
    """``hf:ORG/NAME`` or ``hf:ORG/NAME@REVISION`` (branch, tag or commit)."""

    repo_id: str
    revision: str | None = None

    @classmethod
    def parse(cls, text: str) -> HubSpec:
        body = text[len(HF_PREFIX):] if text.startswith(HF_PREFIX) else text
        repo, _, rev = body.strip().partition("@")
        if not _REPO_ID.match(repo) or ".." in repo or "--" in repo:
            raise InputError(f"{text!r}: a Hub dataset is hf:ORG/NAME or hf:ORG/NAME@REVISION, "
                             f"e.g. {HF_PREFIX}{DEFAULT_REPO}")
        if rev and (not _REVISION.match(rev) or ".." in rev):
            raise InputError(f"{text!r}: revision {rev!r} is not a branch, tag or commit name")
        return cls(repo_id=repo, revision=rev or None)

    @property
    def text(self) -> str:
        return f"{HF_PREFIX}{self.repo_id}" + (f"@{self.revision}" if self.revision else "")

    @property
    def page(self) -> str:
        return f"https://huggingface.co/datasets/{self.repo_id}"


def is_hub_spec(value: object) -> bool:
    return isinstance(value, (str, os.PathLike)) and os.fspath(value).startswith(HF_PREFIX)


# ----------------------------------------------------------------------------------- fetch

class Snapshot(BaseModel):
    spec: HubSpec
    path: Path
    commit: str

    @property
    def storage(self) -> Path:
        """The dataset's folder in the Hub cache (``datasets--ORG--NAME``: ``blobs/``, ``snapshots/``);
        a link in the snapshot is followed only when it points inside it (a folder given as a
        snapshot: inside that folder)."""
        return self.path.parent.parent if self.path.parent.name == "snapshots" else self.path


def _first_lines(text: str, n: int = 3, cap: int = 600) -> str:
    from mtvbench.util.secrets import redact_secrets

    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (redact_secrets(" ".join(lines[:n])) or "")[:cap]


def _token_state() -> str:
    """Whether the Hub library has a token (never the token itself)."""
    try:
        from huggingface_hub import get_token

        has = get_token() is not None
    except Exception:  # noqa: BLE001 - only for the wording of a hint
        has = False
    return ("a token is set (HF_TOKEN or `hf auth login`), but its account has not been granted access"
            if has else "no token is set")


def _access_hint(spec: HubSpec) -> str:
    return (f"hint: open {spec.page}, log in and accept the dataset's terms (the authors grant access), then set "
            "HF_TOKEN to a read token of that account or run `hf auth login`; " + _token_state())


def hub_error(e: BaseException, spec: HubSpec, offline: bool) -> MtvbenchError:
    """One message for a failed Hub call: the server's own words, the URL, what to do."""
    from huggingface_hub import errors as hf_errors

    msg = _first_lines(str(e))
    if isinstance(e, hf_errors.GatedRepoError):
        return InputError(f"{spec.text}: access refused, the dataset is gated ({spec.page}): {msg}",
                          hint=_access_hint(spec))
    if isinstance(e, hf_errors.RevisionNotFoundError):
        return InputError(f"{spec.text}: revision {spec.revision!r} not found on the Hub ({spec.page}): {msg}")
    if isinstance(e, hf_errors.RepositoryNotFoundError):
        return InputError(f"{spec.text}: dataset not found or not accessible ({spec.page}): {msg}",
                          hint=_access_hint(spec))
    if isinstance(e, hf_errors.LocalEntryNotFoundError):
        from huggingface_hub import constants

        why = ("offline (HF_HUB_OFFLINE=1 or --offline)" if offline or constants.HF_HUB_OFFLINE
               else "the Hub could not be reached")
        return InputError(f"{spec.text}: not (completely) in the local Hugging Face cache {constants.HF_HUB_CACHE} "
                          f"and {why}: {msg}",
                          hint="hint: run `mtvbench download` once with network access (it resumes where it "
                               "stopped), or point HF_HUB_CACHE at the cache that holds it")
    if isinstance(e, hf_errors.HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        url = getattr(getattr(getattr(e, "response", None), "request", None), "url", None) or spec.page
        if status in (401, 403):
            return InputError(f"{spec.text}: access refused ({status}) by {url}: {msg}", hint=_access_hint(spec))
        return MtvbenchError(f"{spec.text}: the Hub answered {status} for {url}: {msg}",
                             hint="hint: try again later; a stopped download resumes where it stopped")
    if isinstance(e, OSError):
        where = getattr(e, "filename", None) or "the Hugging Face cache"
        return OutputError(describe_os_error(where, e, f"downloading {spec.text} failed"))
    return MtvbenchError(f"{spec.text}: download failed: {type(e).__name__}: {msg}")


def _check_space(spec: HubSpec, api: Any, revision: str | None, cache: Path, timeout: float) -> str | None:
    """Read the file list (sizes, commit); refuse when the files not yet cached cannot fit.
    Returns the commit, so the download fetches exactly the listed files."""
    from huggingface_hub.file_download import repo_folder_name

    info = api.dataset_info(spec.repo_id, revision=revision, files_metadata=True, timeout=timeout)
    commit = info.sha
    snap = cache / repo_folder_name(repo_id=spec.repo_id, repo_type="dataset") / "snapshots" / str(commit)
    missing = sum((s.size or 0) for s in (info.siblings or []) if not (snap / s.rfilename).exists())
    probe = cache
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if missing > free:
        raise OutputError(f"{spec.text}: {missing / 1e9:.1f} GB still to download, {free / 1e9:.1f} GB free in "
                          f"the Hugging Face cache {cache}",
                          hint="hint: free some space, or set HF_HUB_CACHE to a bigger disk")
    return commit


def fetch_snapshot(spec: HubSpec, *, offline: bool = False, endpoint: str | None = None,
                   hf_cache: Path | None = None, timeout: float = 30.0) -> Snapshot:
    """The dataset's files in the Hub cache (downloaded, resumed, or read offline)."""
    from huggingface_hub import HfApi, constants, snapshot_download

    cache = Path(hf_cache or constants.HF_HUB_CACHE).expanduser()
    offline = offline or bool(constants.HF_HUB_OFFLINE)
    revision = spec.revision
    try:
        if not offline:
            try:
                revision = _check_space(spec, HfApi(endpoint=endpoint, library_name="mtvbench"), revision, cache,
                                        timeout) or revision
            except MtvbenchError:
                raise
            except Exception:  # noqa: BLE001 - snapshot_download reports (or falls back to the cache)
                pass
        path = snapshot_download(spec.repo_id, repo_type="dataset", revision=revision, cache_dir=str(cache),
                                 local_files_only=offline, endpoint=endpoint, etag_timeout=timeout,
                                 library_name="mtvbench")
    except MtvbenchError:
        raise
    except Exception as e:  # noqa: BLE001 - every Hub failure becomes one message
        raise hub_error(e, spec, offline) from e
    p = Path(path)
    return Snapshot(spec=spec, path=p, commit=p.name)


# ----------------------------------------------------------------------------------- discover

class Found(BaseModel):
    """Where the released files are in a snapshot (and in what was unpacked from it)."""

    mtqa: dict[str, Path] = {}  # file name in the layout -> file
    checklist: dict[str, Path] = {}  # file name -> file
    videos: dict[str, Path] = {}  # file name -> file
    archives: list[Path] = []
    notes: list[str] = []


def _walk(root: Path) -> list[Path]:
    """The files under ``root`` (links to folders are not entered)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__MACOSX")
        if len(rel.parts) >= _MAX_DEPTH:
            dirnames[:] = []
        out += [Path(dirpath) / f for f in sorted(filenames) if not f.startswith(".")]
    return out


def _leaves(link: Path, inside: Path) -> bool:
    """Whether the link ``link`` points outside ``inside`` (or nowhere: a loop)."""
    try:
        return not link.resolve(strict=True).is_relative_to(inside)
    except (OSError, RuntimeError):
        return True


def check_links(snapshot: Snapshot) -> None:
    """Refuse a snapshot holding a link that points outside the dataset's folder of the Hub cache
    (a released file is never read through such a link, nor hard-linked into ``videos/``)."""
    inside = snapshot.storage.resolve()
    bad = [f for f in _walk(snapshot.path) if f.is_symlink() and _leaves(f, inside)]
    if bad:
        shown = "; ".join(f"{f.relative_to(snapshot.path)} -> {os.readlink(f)}" for f in bad[:3])
        raise InputError(f"{snapshot.spec.text}: {len(bad)} file(s) of the download {snapshot.path} are links "
                         f"pointing outside its Hugging Face cache folder {snapshot.storage} ({shown}"
                         f"{'; ...' if len(bad) > 3 else ''}); they are not followed and nothing was laid out",
                         hint="hint: download again into a fresh cache (HF_HUB_CACHE), or lay the dataset out by "
                              "hand and pass the folder to --data")


def _same_content(a: Path, b: Path) -> bool:
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _pick_group(kind: str, groups: dict[Path, dict[str, Path]], notes: list[str]) -> dict[str, Path]:
    """One folder of ``kind`` files; several folders are fine when they hold the same files."""
    if not groups:
        return {}
    folders = sorted(groups, key=lambda p: (p.name.lower() != kind.lower(), -len(groups[p]), len(p.parts), str(p)))
    first = groups[folders[0]]
    for other in folders[1:]:
        g = groups[other]
        if set(g) != set(first) or not all(_same_content(first[k], g[k]) for k in first):
            raise InputError(f"the download holds two different sets of {kind} files: {folders[0]} and {other}; "
                             "lay the dataset out by hand and pass the folder to --data")
        notes.append(f"{other} repeats the {kind} files of {folders[0]}; using the latter")
    return first


def discover(roots: list[Path]) -> Found:
    """Find the task files, checklists, videos and archives under ``roots`` (see module doc)."""
    mtqa: dict[Path, dict[str, Path]] = {}
    checklists: dict[Path, dict[str, Path]] = {}
    found = Found()
    split_parts: list[Path] = []
    for root in roots:
        for f in _walk(root):
            name = f.name
            if is_macos_metadata(str(f.relative_to(root))):
                continue
            low = name.lower()
            if task_of_checklist(name) is not None:
                checklists.setdefault(f.parent, {})[name] = f
            elif low.endswith(".json") and (task := task_of_mtqa(f"{f.stem}.json")) is not None:
                mtqa.setdefault(f.parent, {})[mtqa_name(task)] = f
            elif low.endswith(VIDEO_SUFFIXES):
                prev = found.videos.get(name)
                if prev is None:
                    found.videos[name] = f
                elif prev.stat().st_size != f.stat().st_size:
                    raise InputError(f"two different videos named {name}: {prev} and {f}; lay the dataset out by "
                                     "hand and pass the folder to --data")
            elif is_split_part(f):
                split_parts.append(f)
            elif archive_kind(f) is not None:
                found.archives.append(f)
    if split_parts:
        shown = ", ".join(p.name for p in split_parts[:4])
        raise InputError(f"the download holds pieces of a split archive ({shown}); join them first "
                         "(e.g. `cat videos.zip.* > videos.zip`), then pass the folder to --data")
    found.mtqa = _pick_group(MTQA_DIR, mtqa, found.notes)
    found.checklist = _pick_group(CHECKLIST_DIR, checklists, found.notes)
    return found


# ----------------------------------------------------------------------------------- lay out

class DatasetRecord(BaseModel):
    """``mtvbench-dataset.json`` of a prepared folder."""

    format: Literal["mtvbench-dataset"] = "mtvbench-dataset"
    source: str
    repo_id: str
    revision: str | None
    commit: str
    snapshot: str
    complete: bool = False
    videos: int = 0
    #: how videos/ was filled: hard links to the cached files, copies, or both
    video_files: Literal["hard links", "copies", "hard links and copies", "none"] = "none"
    archives: list[str] = []
    prepared_at: str = ""
    mtvbench_version: str = ""


class PreparedDataset(BaseModel):
    root: Path
    record: DatasetRecord
    reused: bool = False
    notes: list[str] = []


def read_record(target: Path) -> DatasetRecord | None:
    f = Path(target) / RECORD_FILE
    try:
        return DatasetRecord.model_validate_json(f.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def _write_record(target: Path, rec: DatasetRecord) -> None:
    atomic_write_text(target / RECORD_FILE, rec.model_dump_json(indent=1) + "\n")


def default_target(spec: HubSpec, commit: str) -> Path:
    return cache_dir("datasets") / spec.repo_id.replace("/", "--") / commit


def _place_video(src: Path, dst: Path) -> str:
    """Hard link ``dst`` to the file behind ``src``; copy when that is impossible."""
    real = src.resolve()
    try:
        os.link(real, dst)
        return "hard links"
    except OSError:
        shutil.copyfile(real, dst)
        return "copies"


def _lay_out(found: Found, folder: Path) -> tuple[int, str]:
    """``mtqa/``, ``checklist/`` and ``videos/`` of ``found`` in the new folder ``folder`` (a
    :class:`~mtvbench.util.files.FolderSwap` stage)."""
    for sub in FOLDERS:
        (folder / sub).mkdir(parents=True)
    for name, f in found.mtqa.items():
        shutil.copyfile(f, mtqa_dir(folder) / name)
    for name, f in found.checklist.items():
        shutil.copyfile(f, checklist_dir(folder) / name)
    modes = {_place_video(f, videos_dir(folder) / name) for name, f in found.videos.items()}
    mode = ("hard links and copies" if len(modes) == 2 else next(iter(modes))) if modes else "none"
    return len(found.videos), mode


def _archive_key(archive: Path, snapshot: Path) -> str:
    rel = str(archive.relative_to(snapshot)) if archive.is_relative_to(snapshot) else archive.name
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", rel)
    return f"{safe}-{archive.stat().st_size}"


def _wanted(name: str) -> bool:
    return name.lower().endswith((".json", *VIDEO_SUFFIXES))


def _check_target(target: Path, spec: HubSpec) -> DatasetRecord | None:
    """The record of ``target``; an error when ``target`` holds something else."""
    if target.exists() and not target.is_dir():
        raise OutputError(f"{target}: exists and is not a folder")
    rec = read_record(target)
    if rec is None and target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if p.name not in _OURS)
        if foreign:
            raise OutputError(f"{target}: folder is not empty ({', '.join(foreign[:3])}"
                              f"{', ...' if len(foreign) > 3 else ''}) and was not made by `mtvbench download`; "
                              "choose an empty or new folder with --to")
    if rec is not None and rec.repo_id != spec.repo_id:
        raise OutputError(f"{target}: holds {rec.source}, not {spec.text}; choose another folder with --to")
    return rec


def _no_task_files(snapshot: Snapshot) -> InputError:
    top = sorted(p.name for p in snapshot.path.iterdir() if not p.name.startswith("."))
    return InputError(
        f"{snapshot.spec.text} (commit {snapshot.commit[:12]}): no task files (<task>.json: "
        f"{', '.join(sorted(t.official_stem for t in TASKS))}) in the download {snapshot.path} (it holds: "
        f"{', '.join(top[:8]) or 'nothing'}{', ...' if len(top) > 8 else ''})",
        hint=f"hint: check the dataset page {snapshot.spec.page} for how the full data is distributed; "
             "once you have the files, pass their folder to --data")


def _unpack_all(found: Found, snapshot: Snapshot, target: Path, note: Note, notes: list[str]) -> Found:
    """Unpack the snapshot's archives into ``target/.unpacked`` (each once) and discover again."""
    unpacked_root = target / ".unpacked"
    keys = []
    for a in found.archives:
        key = _archive_key(a, snapshot.path)
        keys.append(key)
        dest = unpacked_root / key
        if dest.is_dir():
            notes.append(f"{a.name}: already unpacked")
            continue
        note(f"unpacking {a.name} into {dest}")
        r = unpack(a, dest, keep=_wanted)
        if r.skipped_links:
            notes.append(f"{a.name}: {len(r.skipped_links)} link(s) or special file(s) not unpacked")
    if unpacked_root.is_dir():
        for stale in unpacked_root.iterdir():
            if stale.name not in keys:  # from an earlier commit, or a stopped unpack (.partial)
                shutil.rmtree(stale, ignore_errors=True)
    again = discover([snapshot.path, *(unpacked_root / k for k in keys)])
    notes += again.notes
    nested = [a.name for a in again.archives if not a.is_relative_to(snapshot.path)]
    if nested:
        notes.append(f"archives inside archives were not unpacked: {', '.join(nested[:4])}")
    again.archives = list(found.archives)
    return again


def prepare(snapshot: Snapshot, target: Path, *, note: Note = _quiet, force: bool = False) -> PreparedDataset:
    """Lay ``snapshot`` out in ``target`` (see module doc); a complete folder of the same commit is reused.

    Nothing is written when the target holds something else or the snapshot has nothing to lay
    out; archives already unpacked are kept when a later step fails (the next call resumes)."""
    from mtvbench._version import __version__

    target = Path(target).expanduser().absolute()
    created = not target.exists()
    _check_target(target, snapshot.spec)
    check_links(snapshot)
    found = discover([snapshot.path])
    if not found.mtqa and not found.archives:
        raise _no_task_files(snapshot)
    try:
        ensure_dir(target)
        with file_lock(target / ".lock", on_wait=lambda: note(f"waiting for another mtvbench process preparing "
                                                              f"{target}")):
            rec = _check_target(target, snapshot.spec)
            if rec is not None and rec.complete and rec.commit == snapshot.commit and not force \
                    and all((target / s).is_dir() for s in FOLDERS):
                return PreparedDataset(root=target, record=rec, reused=True)
            new = DatasetRecord(source=snapshot.spec.text, repo_id=snapshot.spec.repo_id,
                                revision=snapshot.spec.revision, commit=snapshot.commit, snapshot=str(snapshot.path),
                                mtvbench_version=__version__)
            if rec is None or not rec.complete:
                _write_record(target, new)  # claims the folder; a complete earlier one stays until the swap
            notes = list(found.notes)
            if found.archives:
                found = _unpack_all(found, snapshot, target, note, notes)
            if not found.mtqa:
                raise _no_task_files(snapshot)
            if not found.videos:
                notes.append("no video files found (loose or in archives); `validate` lists the missing ones")
            with FolderSwap(target, carry=_CARRIED) as stage:  # the earlier dataset stays until all is laid out
                n, mode = _lay_out(found, stage)
                new = new.model_copy(update={
                    "complete": True, "videos": n, "video_files": mode, "archives": [a.name for a in found.archives],
                    "prepared_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
                _write_record(stage, new)
            return PreparedDataset(root=target, record=new, notes=notes)
    except BaseException as e:
        if created and target.is_dir() and not (target / ".unpacked").exists():
            shutil.rmtree(target, ignore_errors=True)  # nothing worth keeping was made
        if isinstance(e, OSError) and not isinstance(e, MtvbenchError):
            raise OutputError(describe_os_error(getattr(e, "filename", None) or target, e,
                                                "preparing the dataset failed")) from e
        raise


def prepare_from_hub(spec: HubSpec, target: Path | None = None, *, offline: bool = False, endpoint: str | None = None,
                     hf_cache: Path | None = None, note: Note = _quiet, force: bool = False) -> PreparedDataset:
    """Fetch (or read from the cache) and lay out a Hub dataset; ``target`` defaults to the mtvbench cache."""
    snap = fetch_snapshot(spec, offline=offline, endpoint=endpoint, hf_cache=hf_cache)
    return prepare(snap, target or default_target(spec, snap.commit), note=note, force=force)


def resolve_dataset(value: str | os.PathLike[str], *, note: Note = _quiet, offline: bool = False) -> Path:
    """Turn a dataset argument into a folder (every command does it here): ``hf:ORG/NAME[@REV]`` is fetched (or read
    from the cache) and laid out (see :func:`prepare_from_hub`); anything else is a path as given."""
    if not is_hub_spec(value):
        return Path(value)
    spec = HubSpec.parse(os.fspath(value))
    prepared = prepare_from_hub(spec, offline=offline, note=note)
    rec = prepared.record
    note(f"{spec.text} (commit {rec.commit[:12]}) is {prepared.root}")
    return prepared.root


__all__ = ["DEFAULT_REPO", "HF_PREFIX", "RECORD_FILE", "DatasetRecord", "Found", "HubSpec", "PreparedDataset",
           "Snapshot", "check_links", "default_target", "discover", "fetch_snapshot", "hub_error", "is_hub_spec",
           "prepare", "prepare_from_hub", "read_record", "resolve_dataset"]
