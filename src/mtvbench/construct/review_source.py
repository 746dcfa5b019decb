"""A build workspace as a source of the review app (``mtvbench review serve WS``, ``review export WS``).

The review package finds this class by name through its registry of source kinds
(:data:`mtvbench.review.source.SOURCES`), so it never imports the construction package.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtvbench.construct.export import export_dataset
from mtvbench.construct.review_queue import load_queue
from mtvbench.construct.workspace import Workspace
from mtvbench.errors import InputError
from mtvbench.review.decisions import ReviewItem
from mtvbench.review.source import QUEUE_NAME, ReviewSource, VideoMode, read_queue_file
from mtvbench.review.store import ReviewStore


class WorkspaceSource(ReviewSource):
    """A build workspace under review: the items of its queue, the videos of its manifest."""

    kind = "workspace"
    describe = f"a build workspace ({QUEUE_NAME})"

    @classmethod
    def detect(cls, root: Path) -> bool:
        return (root / QUEUE_NAME).is_file()

    @classmethod
    def near_miss(cls, root: Path) -> InputError | None:
        if (root / "manifest.json").is_file():
            return InputError(f"{root}: build workspace without a review queue",
                              hint=f"run `mtvbench build export -w {root}` first; it writes {QUEUE_NAME}")
        return None

    def files(self) -> list[Path]:
        return [self.root / QUEUE_NAME, self.root / "manifest.json"]

    def load(self) -> list[ReviewItem]:
        q = read_queue_file(self.root / QUEUE_NAME)
        try:
            manifest = Workspace(self.root).manifest()
        except (ValidationError, ValueError) as e:
            raise InputError(f"{self.root / 'manifest.json'}: not a workspace manifest ({e})") from None
        self._videos = {v.name: Path(v.path) for v in manifest.videos}
        return list(q.items.values())

    def write_export(self, out: Path, items: list[ReviewItem], store: ReviewStore, accepted_only: bool,
                     video_mode: VideoMode) -> tuple[list[ReviewItem], int]:
        """The build export of every current video with the decisions applied (rejected ones left out)."""
        ws = Workspace(self.root)
        rep = export_dataset(ws, ws.videos(), out, accepted_only=accepted_only, drop_rejected=True,
                             video_mode=video_mode)
        return list(load_queue(ws).items.values()), len(rep.videos)
