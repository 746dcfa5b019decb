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

import csv
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mtvbench.data.schema import Dialogue
from mtvbench.errors import InputError, MissingExtraError, MtvbenchError

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

def _num(v: Any, cast: Callable[[Any], Any]) -> Any:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    return cast(float(v)) if cast is int else cast(v)


def _row(raw: dict[str, Any], where: str) -> MetaRow:
    low = {str(k).strip().lower().replace(" ", "_"): v for k, v in raw.items()}
    video = low.get("video") or low.get("video_name") or low.get("video_id")
    if not video:
        raise MetadataError(f"{where}: no 'video' field")
    event = low.get("event", low.get("event_index"))
    try:
        duration = _num(low.get("duration_s", low.get("duration")), float)
        if duration is None and low.get("duration_min") not in (None, ""):
            duration = 60.0 * float(low["duration_min"])
        scenes = _num(low.get("scenes", low.get("scene_count")), int)
    except (TypeError, ValueError) as e:
        raise MetadataError(f"{where}: bad number ({e})") from e
    cat = low.get("category")
    return MetaRow(video=str(video).strip(), event=None if event in (None, "") else str(event).strip(),
                   category=None if cat in (None, "") else str(cat).strip(), scenes=scenes, duration_s=duration)


def load_metadata_file(path: Path) -> list[MetaRow]:
    """CSV with a header, a JSON list of objects, or a JSON mapping ``video -> {...}`` /
    ``video -> {event -> {...}}``."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: metadata file not found")
    text = path.read_text(encoding="utf-8")
    rows: list[MetaRow] = []
    if path.suffix.lower() == ".csv":
        for i, rec in enumerate(csv.DictReader(text.splitlines()), 2):
            rows.append(_row(rec, f"{path}:{i}"))
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise MetadataError(f"{path}: not JSON ({e})") from e
    if isinstance(data, list):
        return [_row(rec, f"{path}[{i}]") for i, rec in enumerate(data)]
    if isinstance(data, dict) and data.get("format") == "mtvbench-build-metadata":
        return _rows_from_build_metadata(data, path)
    if not isinstance(data, dict):
        raise MetadataError(f"{path}: expected a list or a mapping")
    for video, val in data.items():
        if not isinstance(val, dict):
            raise MetadataError(f"{path}: {video}: expected an object")
        events = val.get("events")
        base = {k: v for k, v in val.items() if k != "events"}
        rows.append(_row({"video": video, **base}, f"{path}:{video}"))
        for ev, rec in (events or {}).items():
            rows.append(_row({"video": video, "event": ev, **rec}, f"{path}:{video}:{ev}"))
    return rows


def _rows_from_build_metadata(data: dict[str, Any], path: Path) -> list[MetaRow]:
    """``metadata.json`` written by ``mtvbench build export``: category and duration per video;
    per dialogue, the scene count is the number of the video's shot clips that overlap the
    time ranges the dialogue was generated from."""
    rows: list[MetaRow] = []
    videos = data.get("videos") or {}
    for video, v in videos.items():
        rows.append(_row({"video": video, "category": v.get("category"), "duration_s": v.get("duration_s")},
                         f"{path}:{video}"))
    for did, d in (data.get("dialogues") or {}).items():
        clips = (videos.get(d.get("video")) or {}).get("clips") or []
        ranges = d.get("ranges") or []
        n = sum(1 for c0, c1 in clips if any(c0 < r1 and r0 < c1 for r0, r1 in ranges))
        rows.append(_row({"video": d.get("video"), "event": d.get("event"), "scenes": n or None},
                         f"{path}:{did}"))
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
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


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
            return {str(k): int(v) for k, v in json.loads(f.read_text(encoding="utf-8")).items()}
        except (ValueError, OSError):
            log.warning("%s: unreadable scene cache, recomputing", f)
            return {}

    def _save(self, video: Path, data: dict[str, int]) -> None:
        from mtvbench.run.outputs import atomic_write

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
