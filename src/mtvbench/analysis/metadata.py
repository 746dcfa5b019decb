"""Per-dialogue metadata the released JSON lacks: video category, duration, scene count.

Sources, in order of precedence:

1. an optional metadata file (CSV or JSON) keyed by video and, optionally, event; a row
   without an event applies to every dialogue of that video. Columns/keys: ``video``,
   ``event`` (optional), ``category``, ``scenes``, ``duration_s`` (or ``duration_min``);
2. durations probed from the videos (:func:`mtvbench.media.frames.probe`);
3. scene counts estimated with PySceneDetect (``ContentDetector``) over the time ranges the
   dialogue's questions name ("from 00:01:37 to 00:03:34"; the whole video when none),
   cached on disk per video file (``mtvbench scenes`` fills the cache).

The scene count of a dialogue is the number of detected scenes in the union of its time
ranges (overlapping ranges merged; one count per merged range, summed).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mtvbench.data.schema import Dialogue
from mtvbench.errors import MissingExtraError, MtvbenchError
from mtvbench.ledger.keys import digest
from mtvbench.util.jsonio import load_json_file
from mtvbench.util.rowfiles import csv_records, record_keys
from mtvbench.util.strict import STRICT

log = logging.getLogger(__name__)


class MetadataError(MtvbenchError, ValueError):
    pass


class DialogueMeta(BaseModel):
    dialogue_id: str
    video: str
    event: str
    category: str | None = None
    scenes: int | None = None
    duration_s: float | None = None
    #: where the scene count came from: "file", "estimated", or None
    scenes_source: str | None = None


class MetaRow(BaseModel):
    video: str
    event: str | None = None
    category: str | None = None
    scenes: int | None = None
    duration_s: float | None = None


# ------------------------------------------------------------------------------ file

def _num(v: Any, cast: type[int] | type[float], what: str, where: str) -> Any:
    """A finite number >= 0 (``scenes``: an integer), from JSON or a CSV cell; blank is None."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool):
        raise MetadataError(f"{where}: field '{what}': must be a number, got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise MetadataError(f"{where}: field '{what}': must be a number, got {v!r}") from None
    if not math.isfinite(x) or x < 0:
        raise MetadataError(f"{where}: field '{what}': must be a finite number >= 0, got {v!r}")
    if cast is int:
        if not x.is_integer():
            raise MetadataError(f"{where}: field '{what}': must be a whole number, got {v!r}")
        return int(x)
    return x


def _text(v: Any) -> str | None:
    return None if v is None or (isinstance(v, str) and not v.strip()) else str(v).strip()


def _row(raw: Any, where: str) -> MetaRow:
    low = record_keys(raw, where, MetadataError, spaces_to_underscores=True)
    video = _text(low.get("video") or low.get("video_name") or low.get("video_id"))
    if video is None:
        raise MetadataError(f"{where}: no 'video' field (or it is blank)")
    event = low.get("event", low.get("event_index"))
    if isinstance(event, (bool, float, list, dict)):
        raise MetadataError(f"{where}: field 'event': must be an integer or a string, got {event!r}")
    duration = _num(low.get("duration_s", low.get("duration")), float, "duration_s", where)
    minutes = _num(low.get("duration_min"), float, "duration_min", where)
    if duration is None and minutes is not None:
        duration = 60.0 * minutes
    scenes = _num(low.get("scenes", low.get("scene_count")), int, "scenes", where)
    return MetaRow(video=video, event=_text(event), category=_text(low.get("category")), scenes=scenes,
                   duration_s=duration)


def _no_duplicates(rows: list[tuple[str, MetaRow]], path: Path) -> list[MetaRow]:
    """Rows keyed by (video, event) at most once (a later row would silently win)."""
    seen: dict[tuple[str, str | None], str] = {}
    for where, r in rows:
        key = (r.video, r.event)
        if key in seen:
            what = f"video {r.video!r}" + (f" event {r.event!r}" if r.event is not None else "")
            raise MetadataError(f"{where}: a second row for {what} (first at {seen[key].removeprefix(f'{path}: ')})")
        seen[key] = where
    return [r for _, r in rows]


def load_metadata_file(path: Path) -> list[MetaRow]:
    """CSV with a header, a JSON list of objects, or a JSON mapping ``video -> {...}`` /
    ``video -> {event -> {...}}``. Read strictly: a regular UTF-8 file, strict JSON, numbers
    finite and >= 0 (``scenes`` whole), each (video, event) once; errors name the row."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _no_duplicates([(where, _row(rec, where))
                               for where, rec in csv_records(path, "metadata file", MetadataError)], path)
    data = load_json_file(path, "metadata file")
    if isinstance(data, list):
        return _no_duplicates([(f"{path}: record {i + 1}", _row(rec, f"{path}: record {i + 1}"))
                               for i, rec in enumerate(data)], path)
    if isinstance(data, dict) and data.get("format") == "mtvbench-build-metadata":
        return _rows_from_build_metadata(data, path)
    if not isinstance(data, dict):
        raise MetadataError(f"{path}: expected a list or a mapping")
    rows: list[MetaRow] = []
    for video, val in data.items():
        if not isinstance(val, dict):
            raise MetadataError(f"{path}: {video!r}: expected an object")
        events = val.get("events") or {}
        if not isinstance(events, dict):
            raise MetadataError(f"{path}: {video!r}: 'events' must be an object keyed by event")
        base = {k: v for k, v in val.items() if k != "events"}
        rows.append(_row({"video": video, **base}, f"{path}: {video!r}"))
        for ev, rec in events.items():
            where = f"{path}: {video!r} event {ev!r}"
            if not isinstance(rec, dict):
                raise MetadataError(f"{where}: expected an object")
            rows.append(_row({**rec, "video": video, "event": ev}, where))
    return rows


def _rows_from_build_metadata(data: dict[str, Any], path: Path) -> list[MetaRow]:
    """``metadata.json`` written by ``mtvbench build export``: category and duration per video;
    per dialogue, the scene count is the number of the video's shot clips that overlap the
    time ranges the dialogue was generated from."""
    from pydantic import ValidationError

    from mtvbench.data.buildmeta import BuildMetadata

    try:
        meta = BuildMetadata.model_validate(data)
    except ValidationError as e:
        lines = [f"{path}: field '{'.'.join(str(x) for x in err['loc'])}': {err['msg']}"
                 for err in e.errors(include_url=False)[:10]]
        raise MetadataError("\n".join(lines)) from None
    rows: list[MetaRow] = []
    for video, v in meta.videos.items():
        rows.append(_row({"video": video, "category": v.category, "duration_s": v.duration_s}, f"{path}: {video!r}"))
    for did, d in meta.dialogues.items():
        clips = meta.videos[d.video].clips if d.video in meta.videos else []
        n = sum(1 for c0, c1 in clips if any(c0 < r1 and r0 < c1 for r0, r1 in d.ranges))
        rows.append(_row({"video": d.video, "event": d.event, "scenes": n or None}, f"{path}: {did!r}"))
    return rows


# ------------------------------------------------------------------------------ time ranges

_T = r"(\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?)"
_RANGE = re.compile(_T + r"\s*(?:to|and|until|till|-|–|—|~)\s*" + _T, re.IGNORECASE)


def parse_timestamp(s: str) -> float:
    parts = [float(p) for p in s.split(":")]
    secs = 0.0
    for p in parts:
        secs = secs * 60 + p
    return secs


def parse_time_ranges(text: str) -> list[tuple[float, float]]:
    """Every ``HH:MM:SS to HH:MM:SS`` (or ``MM:SS``; also 'and', '-', '~') range in ``text``."""
    out = []
    for a, b in _RANGE.findall(text):
        s, e = parse_timestamp(a), parse_timestamp(b)
        if e < s:
            s, e = e, s
        if e > s:
            out.append((s, e))
    return out


def merge_ranges(ranges: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for s, e in sorted(ranges):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def dialogue_ranges(d: Dialogue) -> list[tuple[float, float]] | None:
    """Merged time ranges named in the dialogue's questions; ``None`` = the whole video."""
    found = [r for rd in d.rounds for r in parse_time_ranges(rd.user)]
    return merge_ranges(found) if found else None


# ------------------------------------------------------------------------------ scenes

class SceneSettings(BaseModel):
    model_config = STRICT

    threshold: float = 27.0
    min_scene_len: int = 15

    def key(self) -> str:
        return f"content-t{self.threshold:g}-m{self.min_scene_len}"


def default_scene_cache() -> Path:
    from mtvbench.util.paths import cache_dir

    return cache_dir("scenes")


def _fingerprint(video: Path) -> str:
    st = video.stat()
    raw = f"{video.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return digest(raw, length=16)


def _range_key(r: tuple[float, float] | None, settings: SceneSettings) -> str:
    span = "all" if r is None else f"{r[0]:.3f}-{r[1]:.3f}"
    return f"{settings.key()}|{span}"


def detect_scene_count(video: Path, span: tuple[float, float] | None, settings: SceneSettings) -> int:
    """Scenes PySceneDetect finds in ``span`` (seconds) of ``video`` (at least 1)."""
    try:
        from scenedetect import ContentDetector, detect
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingExtraError("scene estimation (PySceneDetect)", "build", "scenedetect") from e
    kwargs: dict[str, Any] = {"show_progress": False, "start_in_scene": True}
    if span is not None:
        kwargs["start_time"] = span[0]
        kwargs["end_time"] = span[1]
    scenes = detect(str(video), ContentDetector(threshold=settings.threshold,
                                                min_scene_len=settings.min_scene_len), **kwargs)
    return max(1, len(scenes))


class SceneCache:
    """Scene counts per (video file, time range, detector settings), one JSON file per video."""

    def __init__(self, root: Path | None = None, settings: SceneSettings | None = None):
        self.root = Path(root) if root is not None else default_scene_cache()
        self.settings = settings or SceneSettings()

    def _file(self, video: Path) -> Path:
        return self.root / f"{video.stem}-{_fingerprint(video)}.json"

    def _load(self, video: Path) -> dict[str, int]:
        f = self._file(video)
        if not f.exists():
            return {}
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                                     for v in data.values()):
                raise ValueError("not a mapping of scene counts >= 1")
            return {str(k): v for k, v in data.items()}
        except (ValueError, OSError, RecursionError) as e:
            log.warning("%s: unreadable scene cache (%s), recomputing", f, e)
            return {}

    def _save(self, video: Path, data: dict[str, int]) -> None:
        from mtvbench.util.files import atomic_write_text as atomic_write

        atomic_write(self._file(video), json.dumps(data, indent=1, sort_keys=True))

    def get(self, video: Path, ranges: Sequence[tuple[float, float]] | None, compute: bool = True) -> int | None:
        """Scene count over ``ranges`` (``None`` = whole video); ``None`` when not cached and
        ``compute`` is false."""
        video = Path(video)
        data = self._load(video)
        spans: list[tuple[float, float] | None] = list(ranges) if ranges else [None]
        total, changed = 0, False
        for span in spans:
            k = _range_key(span, self.settings)
            if k not in data:
                if not compute:
                    return None
                data[k] = detect_scene_count(video, span, self.settings)
                changed = True
            total += data[k]
        if changed:
            self._save(video, data)
        return total


# ------------------------------------------------------------------------------ resolve

def probe_durations(videos: dict[str, Path]) -> dict[str, float | None]:
    from mtvbench.media.frames import VideoError, probe

    out: dict[str, float | None] = {}
    for name, path in videos.items():
        try:
            out[name] = probe(Path(path), exact=False).duration_s if Path(path).exists() else None
        except VideoError as e:
            log.warning("%s", e)
            out[name] = None
    return out


def resolve_metadata(dialogues: Sequence[Dialogue], videos: dict[str, Path], *, metadata_file: Path | None = None,
                     scene_cache: SceneCache | None = None, estimate_scenes: bool = False,
                     durations: dict[str, float | None] | None = None) -> dict[str, DialogueMeta]:
    """Metadata per dialogue id. Scene counts come from the file, else from ``scene_cache``
    (computed now only when ``estimate_scenes``)."""
    rows = load_metadata_file(metadata_file) if metadata_file else []
    by_video = {r.video: r for r in rows if r.event is None}
    by_event = {(r.video, r.event): r for r in rows if r.event is not None}
    if durations is None:
        durations = probe_durations({v: p for v, p in videos.items() if v in {d.video for d in dialogues}})
    out: dict[str, DialogueMeta] = {}
    for d in dialogues:
        ev = by_event.get((d.video, str(d.event)))
        vid = by_video.get(d.video)
        m = DialogueMeta(dialogue_id=d.id, video=d.video, event=str(d.event))
        for src in (vid, ev):  # event rows override video rows
            if src is None:
                continue
            m.category = src.category or m.category
            m.duration_s = src.duration_s if src.duration_s is not None else m.duration_s
            if src.scenes is not None:
                m.scenes, m.scenes_source = src.scenes, "file"
        if m.duration_s is None:
            m.duration_s = durations.get(d.video)
        if m.scenes is None and scene_cache is not None and d.video in videos and Path(videos[d.video]).exists():
            n = scene_cache.get(Path(videos[d.video]), dialogue_ranges(d), compute=estimate_scenes)
            if n is not None:
                m.scenes, m.scenes_source = n, "estimated"
        out[d.id] = m
    return out
