"""What is under review: a build workspace's queue or a dataset in the released layout.

- **Build workspace** (``WS/review_queue.json``, written by ``mtvbench build export``): one
  item per generated dialogue, id ``<video>/<unit>/<task>``, with its unit's time ranges;
  videos are the ones registered in ``WS/manifest.json``.
- **Dataset** (``mtqa/``, ``checklist/``, ``videos/``): one item per dialogue, id
  ``<task>/<video>/<event>``, so that a team can re-verify a released benchmark; time ranges
  and kind come from its ``metadata.json`` when it has one (a dataset made by ``mtvbench build``).

Either way the decisions live in ``PATH/review.sqlite`` (or ``--store FILE`` for a dataset
folder that must stay untouched).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from mtvbench.data.official import DataError, load_official
from mtvbench.data.schema import Dialogue
from mtvbench.errors import InputError
from mtvbench.review.model import ReviewItem, ReviewQueue, content_hash
from mtvbench.review.store import STORE_NAME
from mtvbench.util.jsonio import load_json_file

QUEUE_NAME = "review_queue.json"
SourceKind = Literal["workspace", "dataset"]


def validation_message(path: Path, e: ValidationError) -> str:
    first = e.errors()[0]
    loc = ".".join(str(x) for x in first["loc"])
    return f"{path}: field {loc!r}: {first['msg']}" + (f" (and {e.error_count() - 1} more)" if e.error_count() > 1
                                                        else "")


def read_queue_file(path: Path) -> ReviewQueue:
    """A ``review_queue.json`` (strict JSON; every item's content hash recomputed)."""
    try:
        q = ReviewQueue.model_validate(load_json_file(path, "review queue"))
    except ValidationError as e:
        raise InputError(validation_message(path, e)) from None
    for it in q.items.values():
        it.content_hash = content_hash(it.rounds, it.checklists)
    return q


def _stat(p: Path) -> tuple[str, int, int]:
    try:
        st = p.stat()
    except OSError:
        return (str(p), -1, -1)
    return (str(p), st.st_mtime_ns, st.st_size)


class ReviewSource:
    """A folder under review; :meth:`load` reads its items, :meth:`videos` maps names to files."""

    def __init__(self, root: Path, kind: SourceKind):
        self.root = root
        self.kind: SourceKind = kind
        self._videos: dict[str, Path] = {}

    @property
    def default_store(self) -> Path:
        return self.root / STORE_NAME

    def files(self) -> list[Path]:
        if self.kind == "workspace":
            return [self.root / QUEUE_NAME, self.root / "manifest.json"]
        return sorted((self.root / "mtqa").glob("*.json")) + sorted((self.root / "checklist").glob("*.json")) + [
            self.root / "metadata.json"]

    def fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """Changes when the files the items come from change (the app then reloads them)."""
        return tuple(_stat(p) for p in self.files())

    def load(self) -> list[ReviewItem]:
        return self._load_workspace() if self.kind == "workspace" else self._load_dataset()

    def videos(self) -> dict[str, Path]:
        """Video name -> file, as of the last :meth:`load` (only these files are ever served)."""
        return dict(self._videos)

    def _load_workspace(self) -> list[ReviewItem]:
        from mtvbench.construct.workspace import Workspace

        q = read_queue_file(self.root / QUEUE_NAME)
        try:
            manifest = Workspace(self.root).manifest()
        except (ValidationError, ValueError) as e:
            raise InputError(f"{self.root / 'manifest.json'}: not a workspace manifest ({e})") from None
        self._videos = {v.name: Path(v.path) for v in manifest.videos}
        return list(q.items.values())

    def _load_dataset(self) -> list[ReviewItem]:
        bench, problems = load_official(self.root)
        if bench is None:
            raise DataError(problems)
        meta = _metadata(self.root)
        self._videos = dict(bench.videos)
        return [dataset_item(d, meta.get(d.id)) for d in bench.dialogues]


def _metadata(root: Path) -> dict:
    from mtvbench.construct.export import load_metadata

    try:
        m = load_metadata(root)
    except (ValidationError, ValueError) as e:
        raise InputError(f"{root / 'metadata.json'}: not a build metadata file ({e})") from None
    return dict(m.dialogues) if m is not None else {}


def dataset_item(d: Dialogue, meta: object | None = None) -> ReviewItem:
    """The review item of a dialogue of a released-layout dataset."""
    rounds: list[dict[str, str | None]] = [{"User": r.user, "Assistant": r.assistant, "Ability": r.ability}
                                           for r in d.rounds]
    checklists = {r.index: list(r.checklist) for r in d.rounds if r.checklist}
    return ReviewItem(id=d.id, task=d.task, video=d.video, event=d.event, rounds=rounds, checklists=checklists,
                      unit=getattr(meta, "unit", ""), kind=getattr(meta, "kind", None),
                      ranges=list(getattr(meta, "ranges", [])), content_hash=content_hash(rounds, checklists))


def open_source(path: Path | str) -> ReviewSource:
    """The review source at ``path``: a build workspace or a released-layout dataset."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{root}: not a folder (expected a build workspace or a dataset in the released layout)")
    root = root.resolve()
    if (root / QUEUE_NAME).is_file():
        return ReviewSource(root, "workspace")
    if (root / "mtqa").is_dir():
        return ReviewSource(root, "dataset")
    if (root / "manifest.json").is_file():
        raise InputError(f"{root}: build workspace without a review queue",
                         hint=f"run `mtvbench build export -w {root}` first; it writes {QUEUE_NAME}")
    raise InputError(f"{root}: neither a build workspace ({QUEUE_NAME}) nor a dataset in the released layout "
                     "(mtqa/, checklist/, videos/)")
