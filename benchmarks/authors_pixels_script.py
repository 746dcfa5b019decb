"""Child of ``benchmarks/authors_pixels.py``: the authors' ``encode_video`` on videos, unchanged.

    python benchmarks/authors_pixels_script.py SCRIPTS_DIR OUT_DIR VIDEO...

Run in a venv with the script's frame dependencies (decord 0.6.0, opencv-python-headless, numpy). It loads
``SCRIPTS_DIR/infer_qwen25vl.py`` (NJU-LINK/MT-Video-Bench ``eval/``, not part of mtvbench) with ``torch`` and
``tqdm`` stubbed where missing (the file imports them; ``encode_video`` uses neither) and writes
``OUT_DIR/<name>_processed.mp4`` (``max_pixels=720, max_frames=128``). It imports no mtvbench.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path


def _stub(name: str) -> None:
    try:
        __import__(name)
    except ImportError:
        mod = types.ModuleType(name)
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
        mod.tqdm = lambda x, **k: x  # type: ignore[attr-defined]
        sys.modules[name] = mod


def main(scripts: Path, out: Path, videos: list[Path]) -> None:
    for name in ("torch", "tqdm"):
        _stub(name)
    spec = importlib.util.spec_from_file_location("authors_qwen", scripts / "infer_qwen25vl.py")
    qwen = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(qwen)  # type: ignore[union-attr]
    out.mkdir(parents=True, exist_ok=True)
    for video in videos:
        if not (out / f"{video.stem}_processed.mp4").is_file():
            qwen.encode_video(str(video), max_pixels=720, max_frames=128, temp_dir=str(out))
        print(video.stem, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
