"""The build workspace: one folder per video, one JSON artifact per stage, the call journal.

Layout::

    WS/
      manifest.json                 videos registered with --videos (name, path, category)
      calls.sqlite                  every model reply, committed as it arrives (journal.py)
      videos/<name>/<stage>.json    one pydantic artifact per stage (see artifacts.py)
      videos/<name>/keyframes/      kept key frames (JPEG)
      videos/<name>/crops/          detected object crops (JPEG)
      review_queue.json             human verification queue (export.py)
      dataset/                      default export target (released layout)
      .lock                         locked by the build process using the workspace

Every file is written whole or not at all (:mod:`mtvbench.util.files`). Video names are
folder names: they are checked when registered and when the manifest is read, and a
video's folder must resolve inside ``WS/videos`` (no ``..``, no symlink out).

**Is an artifact usable?** :meth:`Workspace.inspect` reads one: ``missing``, ``corrupt``
(not JSON, or not the stage's schema; named with the reason), ``edited`` (its content no
longer matches the digest the stage recorded: changed by hand), ``unversioned`` (written
before fingerprints existed) or ``ok``. :meth:`Workspace.current` adds what later stages
need: the artifact is complete, and every upstream artifact it was made from is itself
current and still has the content digest recorded in it (the video file too). An edit, a
corruption or a redo of any earlier stage therefore makes every later artifact stale.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ValidationError

from mtvbench.construct.artifacts import (
    Artifact,
    ArtifactMeta,
    Manifest,
    VideoRecord,
    content_digest,
    video_name_problem,
)
from mtvbench.construct.stages import STAGES
from mtvbench.data.official import VIDEO_SUFFIXES
from mtvbench.errors import InputError, MtvbenchError
from mtvbench.ledger.lock import DirLock
from mtvbench.media.cache import fingerprint
from mtvbench.media.frames import VideoError
from mtvbench.util.files import atomic_write_json, ensure_dir
from mtvbench.util.jsonio import load_json_file

M = TypeVar("M", bound=BaseModel)


class WorkspaceError(MtvbenchError):
    """A build workspace that cannot be used as asked (no videos, an unknown video, an unsafe folder, a bad
    manifest)."""


def discover_videos(videos_dir: Path) -> list[VideoRecord]:
    """Every video file under ``videos_dir``; a sub-folder name is taken as the category.

    Video names are file stems and must be unique across sub-folders.
    """
    videos_dir = Path(videos_dir)
    if not videos_dir.is_dir():
        raise WorkspaceError(f"{videos_dir}: not a folder of videos")
    out: dict[str, VideoRecord] = {}
    for p in sorted(videos_dir.rglob("*")):
        if not p.is_file() or p.suffix.lower() not in VIDEO_SUFFIXES:
            continue
        rel = p.relative_to(videos_dir)
        category = rel.parts[0] if len(rel.parts) > 1 else "uncategorized"
        name = p.stem
        problem = video_name_problem(name)
        if problem:
            raise WorkspaceError(f"{p}: {problem}")
        if name in out:
            raise WorkspaceError(f"two videos are named {name!r}: {out[name].path} and {p}")
        out[name] = VideoRecord(name=name, path=str(p.resolve()), category=category)
    if not out:
        raise WorkspaceError(f"{videos_dir}: no video files ({', '.join(VIDEO_SUFFIXES)})")
    return list(out.values())


Kind = Literal["ok", "missing", "corrupt", "edited", "unversioned", "incomplete", "stale"]


@dataclass
class Inspection:
    """One artifact as found on disk; ``problem`` says what is wrong (None when ``kind`` is ok).

    ``incomplete`` and ``stale`` (from :meth:`Workspace.current`) come with the artifact."""

    stage: str
    kind: Kind
    artifact: Artifact | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the artifact was found and is sound."""
        return self.kind == "ok"

    @property
    def meta(self) -> ArtifactMeta:
        """What the artifact was made from (only for an artifact that was read)."""
        assert self.artifact is not None and self.artifact.meta is not None
        return self.artifact.meta


class Workspace:
    """A build workspace at ``root``; creating the object writes nothing (folders appear on first write)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._seen: dict[Path, tuple[tuple[int, int, int], Inspection]] = {}

    # ------------------------------------------------------------ manifest
    @property
    def manifest_path(self) -> Path:
        """The workspace's list of videos, ``WS/manifest.json``."""
        return self.root / "manifest.json"

    def manifest(self) -> Manifest:
        """The registered videos (none when the manifest does not exist yet)."""
        if not self.manifest_path.exists():
            return Manifest()
        data = load_json_file(self.manifest_path, "workspace manifest")
        try:
            return Manifest.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise InputError(f"{self.manifest_path}: {where}: {err['msg']}") from None

    def merged(self, found: list[VideoRecord]) -> list[VideoRecord]:
        """The manifest's videos with ``found`` added (a name found again takes the new path)."""
        by_name = {v.name: v for v in self.manifest().videos}
        for v in found:
            by_name[v.name] = v
        return sorted(by_name.values(), key=lambda v: v.name)

    def register(self, found: list[VideoRecord] | str | Path) -> list[VideoRecord]:
        """Add videos (a folder, or records from :func:`discover_videos`) to the manifest."""
        if not isinstance(found, list):
            found = discover_videos(Path(found))
        videos = self.merged(found)
        atomic_write_json(self.manifest_path, Manifest(videos=videos).model_dump(mode="json"))
        return videos

    def videos(self, names: list[str] | None = None, extra: list[VideoRecord] | None = None) -> list[VideoRecord]:
        """The videos to build: the registered ones and ``extra``, restricted to ``names`` when given (an unknown
        name is an error)."""
        vids = self.merged(extra or [])
        if not vids:
            raise WorkspaceError(f"{self.root}: no videos registered; pass --videos DIR")
        if names:
            known = {v.name for v in vids}
            missing = [n for n in names if n not in known]
            if missing:
                raise WorkspaceError(f"unknown video(s): {', '.join(missing)}")
            vids = [v for v in vids if v.name in names]
        return vids

    # ------------------------------------------------------------ lock
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the workspace for this process; another process holding it is a
        :class:`~mtvbench.errors.BusyError` (exit 4) naming it."""
        ensure_dir(self.root)
        with DirLock(self.root, ".lock", "build", busy="{dir}: another mtvbench build is using this workspace "
                     "({holder})", hint="wait for it to finish (or stop it), then run the command again").acquire():
            yield

    # ------------------------------------------------------------ artifacts
    def video_dir(self, video: str, create: bool = True) -> Path:
        """The folder of ``video``'s artifacts, made when ``create``; a name that is not safe, or a folder that leads
        outside the workspace, is refused."""
        problem = video_name_problem(video)
        if problem:
            raise WorkspaceError(problem)
        base = self.root / "videos"
        d = base / video
        if d.exists() and not d.resolve().is_relative_to(base.resolve()):
            raise WorkspaceError(f"{d}: resolves outside {base} (a symlink?); refusing to use it")
        return ensure_dir(d) if create else d

    def path(self, video: str, stage: str) -> Path:
        """The artifact file of ``stage``."""
        return self.video_dir(video, create=False) / f"{stage}.json"

    def inspect(self, video: str, stage: str) -> Inspection:
        """Read one artifact (see module doc); repeated reads of an unchanged file are free."""
        p = self.path(video, stage)
        try:
            st = p.stat()
        except FileNotFoundError:
            return Inspection(stage, "missing", problem=f"'{stage}' has not been run")
        except OSError as e:
            return Inspection(stage, "corrupt", problem=f"{p}: cannot read ({e.strerror or e})")
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        seen = self._seen.get(p)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        got = self._read(p, stage)
        self._seen[p] = (stamp, got)
        return got

    def _read(self, p: Path, stage: str) -> Inspection:
        kind = STAGES.get(stage).artifact if stage in STAGES else Artifact
        try:
            art = kind.model_validate(load_json_file(p, f"'{stage}' artifact"))
        except InputError as e:
            return Inspection(stage, "corrupt", problem=f"corrupt: {e}")
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "(top level)"
            return Inspection(stage, "corrupt", problem=f"corrupt: {p}: {where}: {err['msg']}")
        if art.meta is None or art.meta.stage != stage:
            return Inspection(stage, "unversioned", art, f"{p} has no fingerprint (not written by a stage)")
        if content_digest(art) != art.meta.digest:
            return Inspection(stage, "edited", art, f"{p} was changed after the stage wrote it")
        return Inspection(stage, "ok", art)

    def load(self, video: str, stage: str, model: type[M]) -> M | None:
        """The artifact when it is intact (not corrupt, edited or unversioned), else None."""
        got = self.inspect(video, stage)
        return got.artifact if got.kind == "ok" else None  # type: ignore[return-value]

    def save(self, video: str, stage: str, artifact: Artifact, meta: ArtifactMeta) -> Path:
        """Write ``artifact`` with ``meta`` (its digest is computed here)."""
        artifact.meta = meta.model_copy(update={"digest": content_digest(artifact)})
        p = self.video_dir(video) / f"{stage}.json"
        atomic_write_json(p, artifact.model_dump(mode="json"))
        return p

    def current(self, v: VideoRecord, stage: str) -> Inspection:
        """``ok`` only when the artifact is intact, complete and made from the current upstream artifacts
        (recursively, down to the video file)."""
        got = self.inspect(v.name, stage)
        if got.kind != "ok":
            return got
        art = got.artifact
        assert art is not None
        if not art.complete:
            n = sum(1 for f in getattr(art, "failures", []) if f.kind == "error")
            return Inspection(stage, "incomplete", art, f"'{stage}' is incomplete ({n} failed call(s))")
        for up, digest in got.meta.upstream.items():
            if up == "video":
                try:
                    changed = fingerprint(Path(v.path)) != digest
                except VideoError as e:
                    return Inspection(stage, "stale", art, str(e))
                if changed:
                    return Inspection(stage, "stale", art, f"the video file {v.path} changed since '{stage}' ran")
                continue
            if up not in STAGES:
                return Inspection(stage, "stale", art, f"'{stage}' names an unknown input {up!r}")
            cur = self.current(v, up)
            if not cur.ok:
                return Inspection(stage, "stale", art, f"'{up}' is not usable: {cur.problem}")
            if cur.meta.digest != digest:
                return Inspection(stage, "stale", art, f"'{stage}' was made from an earlier '{up}'")
        return got
