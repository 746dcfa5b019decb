"""The bundled sample benchmark: a tiny MT-Video-Bench in the official released layout.

The dialogues and checklists ship as package data (``mtqa/*.json``, ``checklist/*.json``);
the videos are synthetic and generated deterministically by :mod:`.videos`. Call
:func:`materialize` to write the whole dataset to a folder::

    root = materialize(Path("~/.cache/mtvbench/sample").expanduser())
    # root/mtqa/<stem>.json, root/checklist/<stem>_CheckList.json, root/videos/<name>.mp4

**Not a real benchmark.** Every dialogue record of the sample carries the mark of data that is not a
benchmark (``"mtvbench_not_a_benchmark"``: :data:`NOT_A_BENCHMARK`, the key of
:data:`mtvbench.data.layout.NOT_A_BENCHMARK_KEY`, which the authors' eval.py ignores), so ``validate`` warns
and every run, score file, table and report made from it says its numbers are not MT-Video-Bench numbers.

Videos are encoded only when missing or when their spec changed: next to each video sits
``videos/.spec-<name>.sha`` with the spec's fingerprint. JSON files are rewritten only when
their content differs, so a second call touches nothing. See ``README.md`` in this folder
for what each video shows.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from mtvbench.data.layout import checklist_rel, mtqa_rel, videos_dir
from mtvbench.data.sample.videos import ALL_SPECS, Element, Scene, VideoSpec, render_frame, write_video
from mtvbench.data.schema import TASKS

__all__ = [
    "NOT_A_BENCHMARK",
    "SAMPLE_VIDEOS",
    "STEMS",
    "Element",
    "Scene",
    "VideoSpec",
    "materialize",
    "package_json",
    "render_frame",
    "write_video",
]

#: why the sample is not a real benchmark: written into each of its dialogue records (see the module doc)
NOT_A_BENCHMARK = ("the bundled synthetic sample (mtvbench.data.sample): cartoon videos drawn by code and "
                   "hand-written dialogues that exercise the tools; its numbers say nothing about the paper's")

#: video name -> its spec (scenes with times, elements), in a fixed order.
SAMPLE_VIDEOS: dict[str, VideoSpec] = {s.name: s for s in ALL_SPECS}

#: The six official file stems, in the paper's task order.
STEMS: tuple[str, ...] = tuple(t.official_stem for t in TASKS)


def package_json() -> dict[str, bytes]:
    """Relative path (``mtqa/x.json``, ``checklist/x_CheckList.json``) -> bundled bytes."""
    base = resources.files(__name__)
    out: dict[str, bytes] = {}
    for task in TASKS:
        for rel in (mtqa_rel(task), checklist_rel(task)):
            out[rel] = base.joinpath(rel).read_bytes()
    return out


def _write_if_changed(path: Path, data: bytes, force: bool) -> bool:
    if not force and path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return True


def spec_file(dest: Path, name: str) -> Path:
    return videos_dir(dest) / f".spec-{name}.sha"


def video_is_current(dest: Path, spec: VideoSpec) -> bool:
    mp4 = videos_dir(dest) / f"{spec.name}.mp4"
    sha = spec_file(dest, spec.name)
    return mp4.is_file() and sha.is_file() and sha.read_text().strip() == spec.fingerprint()


def materialize(dest: Path, force: bool = False) -> Path:
    """Write the sample dataset (mtqa/, checklist/, videos/) into ``dest``; return ``dest``.

    ``force`` rewrites every file and re-encodes every video.
    """
    dest = Path(dest)
    for rel, data in package_json().items():
        _write_if_changed(dest / rel, data, force)
    videos_dir(dest).mkdir(parents=True, exist_ok=True)
    for spec in SAMPLE_VIDEOS.values():
        if force or not video_is_current(dest, spec):
            write_video(spec, videos_dir(dest) / f"{spec.name}.mp4")
            _write_if_changed(spec_file(dest, spec.name), (spec.fingerprint() + "\n").encode(), force=True)
    return dest
