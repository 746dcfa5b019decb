"""A dataset in the released layout as a source of the review app: one item per dialogue, id
``<task>/<video>/<event>``, so that a team can re-verify a released benchmark; time ranges and kind
come from its ``metadata.json`` when it has one (a dataset made by ``mtvbench build``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtvbench.data.buildmeta import load_metadata
from mtvbench.data.layout import FOLDERS_TEXT, is_dataset, layout_files, metadata_path
from mtvbench.data.official import DataError, load_official
from mtvbench.errors import InputError
from mtvbench.review.decisions import ReviewItem
from mtvbench.review.export import write_dataset
from mtvbench.review.source import ReviewSource, VideoMode, dataset_item
from mtvbench.review.store import ReviewStore


class DatasetSource(ReviewSource):
    """A dataset in the released layout (``mtqa/``, ``checklist/``, ``videos/``)."""

    kind = "dataset"
    describe = f"a dataset in the released layout ({FOLDERS_TEXT})"

    @classmethod
    def detect(cls, root: Path) -> bool:
        return is_dataset(root)

    def files(self) -> list[Path]:
        return [*layout_files(self.root), metadata_path(self.root)]

    def load(self) -> list[ReviewItem]:
        bench, problems = load_official(self.root)
        if bench is None:
            raise DataError(problems)
        meta = _metadata(self.root)
        self._videos = dict(bench.videos)
        self.not_a_benchmark = bench.not_a_benchmark
        return [dataset_item(d, meta.get(d.id)) for d in bench.dialogues]

    def write_export(self, out: Path, items: list[ReviewItem], store: ReviewStore, accepted_only: bool,
                     video_mode: VideoMode) -> tuple[list[ReviewItem], int]:
        states = store.states({it.id: it.content_hash for it in items})
        for it in items:
            states[it.id].apply_to(it)
        return items, write_dataset(self, items, out, accepted_only, video_mode)


def _metadata(root: Path) -> dict:
    try:
        m = load_metadata(root)
    except (ValidationError, ValueError) as e:
        raise InputError(f"{metadata_path(root)}: not a build metadata file ({e})") from None
    return dict(m.dialogues) if m is not None else {}
