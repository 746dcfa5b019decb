"""The build workspace: one folder per video, one JSON artifact per stage, atomic writes.

Layout::

    WS/
      manifest.json                 videos registered with --videos (name, path, category)
      videos/<name>/<stage>.json    one pydantic artifact per stage (see records.py)
      videos/<name>/keyframes/      kept key frames (JPEG)
      videos/<name>/crops/          detected object crops (JPEG)
      review_queue.json             human verification queue (export.py)
      dataset/                      default export target (released layout)

A stage is *done* for a video when its artifact exists with ``complete=True``; re-running
skips it (``force`` redoes it). Artifacts are written to a temporary file and renamed, so
a killed run never leaves a half-written JSON behind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from mtvbench.checklists.dataset import atomic_write_json
from mtvbench.construct.records import Manifest, VideoRecord
from mtvbench.data.official import VIDEO_SUFFIXES
from mtvbench.errors import MtvbenchError

M = TypeVar("M", bound=BaseModel)


class WorkspaceError(MtvbenchError):
    pass


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
        if not re.fullmatch(r"[\w.\-]+", name):
            raise WorkspaceError(f"{p}: video names may only use letters, digits, '_', '-' and '.'")
        if name in out:
            raise WorkspaceError(f"two videos are named {name!r}: {out[name].path} and {p}")
        out[name] = VideoRecord(name=name, path=str(p.resolve()), category=category)
    if not out:
        raise WorkspaceError(f"{videos_dir}: no video files ({', '.join(VIDEO_SUFFIXES)})")
    return list(out.values())


class Workspace:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ manifest
    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    def manifest(self) -> Manifest:
        if not self.manifest_path.exists():
            return Manifest()
        return Manifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))

    def register(self, videos_dir: str | Path) -> list[VideoRecord]:
        """Add the videos of ``videos_dir`` (kept: videos registered earlier from elsewhere)."""
        found = discover_videos(Path(videos_dir))
        man = self.manifest()
        by_name = {v.name: v for v in man.videos}
        for v in found:
            by_name[v.name] = v
        man.videos = sorted(by_name.values(), key=lambda v: v.name)
        atomic_write_json(self.manifest_path, man.model_dump(mode="json"))
        return man.videos

    def videos(self, names: list[str] | None = None) -> list[VideoRecord]:
        vids = self.manifest().videos
        if not vids:
            raise WorkspaceError(f"{self.root}: no videos registered; pass --videos DIR")
        if names:
            known = {v.name for v in vids}
            missing = [n for n in names if n not in known]
            if missing:
                raise WorkspaceError(f"unknown video(s): {', '.join(missing)}")
            vids = [v for v in vids if v.name in names]
        return vids

    # ------------------------------------------------------------ artifacts
    def video_dir(self, video: str) -> Path:
        d = self.root / "videos" / video
        d.mkdir(parents=True, exist_ok=True)
        return d

    def path(self, video: str, stage: str) -> Path:
        return self.video_dir(video) / f"{stage}.json"

    def load(self, video: str, stage: str, model: type[M]) -> M | None:
        p = self.path(video, stage)
        if not p.exists():
            return None
        try:
            return model.model_validate_json(p.read_text(encoding="utf-8"))
        except (ValidationError, json.JSONDecodeError, OSError):
            return None  # unreadable: the stage is redone

    def require(self, video: str, stage: str, model: type[M]) -> M:
        got = self.load(video, stage, model)
        if got is None:
            raise WorkspaceError(f"{video}: stage '{stage}' has not been run (run `mtvbench build {stage}` first)")
        return got

    def save(self, video: str, stage: str, artifact: BaseModel) -> Path:
        p = self.path(video, stage)
        atomic_write_json(p, artifact.model_dump(mode="json"))
        return p

    def done(self, video: str, stage: str, model: type[BaseModel]) -> bool:
        got = self.load(video, stage, model)
        return bool(got is not None and getattr(got, "complete", True))
