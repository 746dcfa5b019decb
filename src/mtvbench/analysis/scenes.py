"""``mtvbench scenes``: scene counts per dialogue, estimated with PySceneDetect and cached for the
report's breakdown by scene count (paper Figure 4a/4b).

A dialogue's count covers the time ranges its questions name (:func:`~.metadata.dialogue_ranges`),
or the whole video when they name none; counts are cached per video file and range
(:class:`~.metadata.SceneCache`), so ``report`` reads them without decoding again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from mtvbench.analysis.breakdowns import SCENE_BINS, scene_bin
from mtvbench.analysis.metadata import SceneCache, SceneSettings, dialogue_ranges
from mtvbench.analysis.stats import load_dialogues
from mtvbench.extras import require_scene_detection
from mtvbench.render.console import dataset_path, say
from mtvbench.util.files import atomic_write_text


def scene_counts(path: Path, cache: SceneCache) -> dict[str, dict[str, Any]]:
    """Dialogue id -> ``{"scenes": n, "ranges": [...]}`` (``scenes`` None with ``error`` when the
    video is missing) for the dataset or run directory at ``path``."""
    dialogues, videos, _ = load_dialogues(path)
    res: dict[str, dict[str, Any]] = {}
    for d in dialogues:
        v = videos.get(d.video)
        if v is None or not Path(v).exists():
            res[d.id] = {"scenes": None, "ranges": None, "error": "video not found"}
            continue
        rng = dialogue_ranges(d)
        res[d.id] = {"scenes": cache.get(Path(v), rng), "ranges": rng}
    return res


def command(
    path: Annotated[Path, typer.Argument(help="dataset root (released layout), hf:ORG/NAME, or a run directory")],
    scene_cache: Annotated[Path | None, typer.Option(help="scene-count cache folder (default: the user cache)")
                           ] = None,
    threshold: Annotated[float, typer.Option(help="ContentDetector threshold")] = 27.0,
    min_scene_len: Annotated[int, typer.Option(help="shortest scene, frames")] = 15,
    out: Annotated[Path | None, typer.Option(help="also write per-dialogue counts (JSON) here")] = None,
) -> None:
    """Estimate scene counts per dialogue (PySceneDetect) and cache them for `report`.

    Counts cover the time ranges the dialogue's questions name, or the whole video when none."""
    require_scene_detection()
    res = scene_counts(dataset_path(path), SceneCache(scene_cache, SceneSettings(threshold=threshold,
                                                                               min_scene_len=min_scene_len)))
    counts = {b: 0 for b in SCENE_BINS}
    for r in res.values():
        b = scene_bin(r["scenes"])
        if b:
            counts[b] += 1
    missing = sum(1 for r in res.values() if r["scenes"] is None)
    say("scene-count distribution (dialogues): " + ", ".join(f"{k}: {v}" for k, v in counts.items())
        + (f"; {missing} without a video" if missing else ""))
    if out:
        atomic_write_text(out, json.dumps(res, indent=1))
