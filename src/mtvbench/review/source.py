"""What is under review: a build workspace's queue or a dataset in the released layout.

- **Build workspace** (``WS/review_queue.json``, written by ``mtvbench build export``): one
  item per generated dialogue, id ``<video>/<unit>/<task>``, with its unit's time ranges;
  videos are the ones registered in ``WS/manifest.json``.
- **Dataset** (``mtqa/``, ``checklist/``, ``videos/``): one item per dialogue, id
  ``<task>/<video>/<event>``, so that a team can re-verify a released benchmark; time ranges
  and kind come from its ``metadata.json`` when it has one (a dataset made by ``mtvbench build``).
- **Run directory** (``config.yaml``, ``benchmark.json``): not verified but *rated*
  (``work = "rate"``): raters answer the checklists of a sample of its answers
  (:mod:`mtvbench.review.run_source`).

Either way the decisions live in ``PATH/review.sqlite`` (or ``--store FILE`` for a dataset
folder that must stay untouched).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mtvbench.data.schema import Dialogue, NotABenchmark
from mtvbench.errors import InputError
from mtvbench.registry import Registry
from mtvbench.review.decisions import ReviewItem, ReviewQueue, content_hash
from mtvbench.review.store import STORE_NAME, ReviewStore
from mtvbench.util.files import VideoMode
from mtvbench.util.jsonio import load_json_file

QUEUE_NAME = "review_queue.json"


def validation_message(path: Path, e: ValidationError) -> str:
    """One line for a record of ``path`` that fails validation: the first bad field and how many more there are."""
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
        if it.annotations or it.adjudication is not None or it.referrals:
            raise InputError(f"{path}: item {it.id!r} carries review decisions: a review queue holds the items "
                             f"only, their decisions are in {STORE_NAME}")
        it.content_hash = content_hash(it.rounds, it.checklists)
    return q


def _stat(p: Path) -> tuple[str, int, int]:
    try:
        st = p.stat()
    except OSError:
        return (str(p), -1, -1)
    return (str(p), st.st_mtime_ns, st.st_size)


class ReviewSource:
    """A folder under review; :meth:`load` reads its items, :meth:`videos` maps names to files.

    A kind of source is a subclass registered in :data:`SOURCES`: ``detect`` says whether a
    folder is of that kind, ``files`` lists what its items come from, ``load`` reads them and
    ``write_export`` writes the reviewed dataset (the released layout, the decisions applied)."""

    kind: str = ""
    #: the kind in words, for the message about a folder of no known kind
    describe: str = ""
    #: what people do with its items: verify them ("review": annotators and seniors) or rate a model's
    #: answers ("rate": raters; :data:`mtvbench.review.decisions.WORK_JOBS`)
    work: str = "review"

    def __init__(self, root: Path):
        self.root = root
        self._videos: dict[str, Path] = {}
        #: why what is reviewed is not a real benchmark (built with a scripted model, the bundled sample, a run
        #: on such data), as of the last :meth:`load`; the app shows it on every page's session
        self.not_a_benchmark: NotABenchmark | None = None

    @classmethod
    def detect(cls, root: Path) -> bool:
        """Whether the folder ``root`` is a source of this kind."""
        raise NotImplementedError

    @classmethod
    def near_miss(cls, root: Path) -> InputError | None:
        """The error for a folder that is almost of this kind (what is missing and how to make it)."""
        return None

    @property
    def default_store(self) -> Path:
        """Where the review store of this source lives unless ``--store`` says otherwise."""
        return self.root / STORE_NAME

    def files(self) -> list[Path]:
        """The files the items are read from (their sizes and times make :meth:`fingerprint`)."""
        raise NotImplementedError

    def prepare(self, store: ReviewStore) -> None:
        """What the source needs from the store before its first :meth:`load` (a run directory's sample)."""

    def fingerprint(self) -> tuple[tuple[str, int, int], ...]:
        """Changes when the files the items come from change (the app then reloads them)."""
        return tuple(_stat(p) for p in self.files())

    def load(self) -> list[ReviewItem]:
        """Read the items under review (and note the videos they may show, :meth:`videos`)."""
        raise NotImplementedError

    def videos(self) -> dict[str, Path]:
        """Video name -> file, as of the last :meth:`load` (only these files are ever served)."""
        return dict(self._videos)

    def write_export(self, out: Path, items: list[ReviewItem], store: ReviewStore, accepted_only: bool,
                     video_mode: VideoMode) -> tuple[list[ReviewItem], int]:
        """Write the reviewed dataset to ``out``; returns the items (with their decisions) and the
        number of videos written."""
        raise NotImplementedError


def dataset_item(d: Dialogue, meta: object | None = None) -> ReviewItem:
    """The review item of a dialogue of a released-layout dataset."""
    rounds: list[dict[str, str | None]] = [{"User": r.user, "Assistant": r.assistant, "Ability": r.ability}
                                           for r in d.rounds]
    checklists = {r.index: list(r.checklist) for r in d.rounds if r.checklist}
    return ReviewItem(id=d.id, task=d.task, video=d.video, event=d.event, rounds=rounds, checklists=checklists,
                      unit=getattr(meta, "unit", ""), kind=getattr(meta, "kind", None),
                      ranges=list(getattr(meta, "ranges", [])), content_hash=content_hash(rounds, checklists))


def _as_source(obj: object) -> type[ReviewSource]:
    if isinstance(obj, type) and issubclass(obj, ReviewSource):
        return obj
    raise TypeError(f"expected a subclass of mtvbench.review.source.ReviewSource, got {obj!r}")


#: the kinds of folder the review app opens, tried in this order; the build workspace is the
#: construction package's (named, not imported: review never imports construct)
SOURCES: Registry[type[ReviewSource]] = Registry("review source", coerce=_as_source)
SOURCES.add("workspace", "mtvbench.construct.review_source:WorkspaceSource")
SOURCES.add("dataset", "mtvbench.review.dataset_source:DatasetSource")
SOURCES.add("run", "mtvbench.review.run_source:RunSource")


def open_source(path: Path | str) -> ReviewSource:
    """The review source at ``path``: a build workspace, a released-layout dataset or a run directory."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{root}: not a folder (expected a build workspace, a dataset in the released layout or "
                         "a run directory)")
    root = root.resolve()
    kinds = [SOURCES.get(name) for name in SOURCES.names()]
    for kind in kinds:
        if kind.detect(root):
            return kind(root)
    for kind in kinds:
        if (error := kind.near_miss(root)) is not None:
            raise error
    raise InputError(f"{root}: neither " + " nor ".join(k.describe for k in kinds))
