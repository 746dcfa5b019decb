"""Child of ``benchmarks/authors_frames.py``: run the authors' own frame code on videos and record it.

The authors' scripts are not part of mtvbench: put ``eval/infer_qwen25vl.py`` and
``eval/infer_internvl.py`` of NJU-LINK/MT-Video-Bench in a folder of your own and run this in a venv
with their dependencies (decord 0.6.0, opencv-python-headless, numpy, torch, torchvision, Pillow)::

    python benchmarks/authors_frames_script.py SCRIPTS_DIR OUT_DIR VIDEO...

It imports ``encode_video`` (``max_pixels=720, max_frames=128``) and ``load_video``
(``input_size=448, num_segments=128, max_num=1``) from those files, unchanged; decord's
``VideoReader`` is wrapped to record the indices asked for. It imports no mtvbench.

Writes into OUT_DIR:
  <name>_processed.mp4        the script's MP4 (encode_video, max_pixels=720, max_frames=128)
  <name>_decord.npz           the RGB frames encode_video got from decord (before the mp4v encode)
  <name>_internvl448.npz      InternVL load_video(input_size=448, num_segments=128, max_num=1) pixel values,
                              de-normalised back to uint8 RGB (N, H, W, 3)
  authors-run.json            per video: frame count decord saw, indices, sizes, versions
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np


def _load(name: str, path: Path) -> types.ModuleType:
    try:  # the scripts import tqdm for progress bars only
        import tqdm  # noqa: F401
    except ImportError:
        stub = types.ModuleType("tqdm")
        stub.__spec__ = importlib.machinery.ModuleSpec("tqdm", None)
        stub.tqdm = lambda x, **k: x  # type: ignore[attr-defined]
        sys.modules["tqdm"] = stub
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


calls: dict[str, list[Any]] = {}


def install(scripts: Path) -> tuple[types.ModuleType, types.ModuleType, Any]:
    """Load both scripts and point their ``VideoReader`` at a recording subclass of decord's."""
    import decord

    qwen = _load("authors_qwen", scripts / "infer_qwen25vl.py")
    internvl = _load("authors_internvl", scripts / "infer_internvl.py")

    class RecordingReader(decord.VideoReader):
        """decord.VideoReader that records its length, its fps and the frame indices asked for."""

        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            calls.setdefault("len", []).append(len(self))
            calls.setdefault("fps", []).append(float(self.get_avg_fps()))

        def get_batch(self, indices: Any) -> Any:
            calls.setdefault("batch", []).append([int(i) for i in indices])
            out = super().get_batch(indices)
            calls.setdefault("decord_frames", []).append(out.asnumpy())
            return out

        def __getitem__(self, idx: Any) -> Any:
            calls.setdefault("item", []).append(int(idx))
            return super().__getitem__(idx)

    qwen.VideoReader = RecordingReader
    internvl.VideoReader = RecordingReader
    return qwen, internvl, decord


def main(scripts: Path, out: Path, videos: list[Path]) -> None:
    qwen, internvl, decord = install(scripts)
    mean = np.array(internvl.IMAGENET_MEAN).reshape(1, 3, 1, 1)
    std = np.array(internvl.IMAGENET_STD).reshape(1, 3, 1, 1)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, dict] = {}
    for video in videos:
        name = video.stem
        calls.clear()
        mp4 = qwen.encode_video(str(video), max_pixels=720, max_frames=128, temp_dir=str(out))
        frames = calls["decord_frames"][0]
        np.savez_compressed(out / f"{name}_decord.npz", frames=frames)
        entry = {
            "script_mp4": Path(mp4).name,
            "qwen_decord_len": calls["len"][0],
            "qwen_indices": calls["batch"][0],
            "qwen_frame_size": [int(frames.shape[2]), int(frames.shape[1])],
        }
        calls.clear()
        pix, patches = internvl.load_video(str(video), input_size=448, max_num=1, num_segments=128)
        rgb = np.clip(np.rint((pix.float().numpy() * std + mean) * 255.0), 0, 255).astype(np.uint8)
        np.savez_compressed(out / f"{name}_internvl448.npz", frames=rgb.transpose(0, 2, 3, 1))
        entry.update({
            "internvl_decord_len": calls["len"][0],
            "internvl_fps": calls["fps"][0],
            "internvl_indices": calls["item"],
            "internvl_tiles_per_frame": sorted(set(int(p) for p in patches)),
            "internvl_pixel_values_shape": list(pix.shape),
        })
        report[name] = entry
        print(name, entry["qwen_decord_len"], entry["qwen_frame_size"], len(entry["internvl_indices"]), flush=True)
    import cv2
    import PIL
    import torch
    import torchvision

    meta = {"decord": decord.__version__, "opencv": cv2.__version__, "numpy": np.__version__, "pillow": PIL.__version__,
            "torch": torch.__version__, "torchvision": torchvision.__version__, "python": sys.version.split()[0]}
    (out / "authors-run.json").write_text(json.dumps({"versions": meta, "videos": report}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
