"""The pixel figures of "What the Qwen and InternVL rows receive" over several kinds of content (issue 27, 4).

    python benchmarks/authors_pixels.py --script-python /venv-with-decord/bin/python --scripts-dir DIR

``DIR`` holds the authors' ``eval/infer_qwen25vl.py`` (not part of mtvbench); ``--script-python`` is an
interpreter with its frame dependencies (decord 0.6.0, opencv-python-headless, numpy). The child
(``benchmarks/authors_pixels_script.py``) calls that file's ``encode_video`` unchanged (``torch``, which it
imports but does not use for the frames, is a stub there).

Videos, made here (libx264 as the bundled sample, 12 fps, 150 frames), four kinds at three sizes each:
``pattern`` (the sample's shapes_parade scene), ``noise`` (a slowly moving gradient under per-frame Gaussian
noise, sigma 12: camera-like), ``text`` (lines of small text scrolling over a white page), ``portrait`` (the
sample's rocket scene turned upright). Landscape sizes 480x270, 1280x720, 1920x1080; portrait 270x480,
720x1280, 1080x1920. Per video, the mean absolute difference (0-255, every pixel and channel of every frame):

- ``mp4``: the script's MP4 against mtvbench's (:func:`mtvbench.media.authors_frames.write_script_mp4`);
- ``served``: the JPEG images a served model gets under ``qwen-script`` (JPEG 90) against the script's MP4;
- ``internvl``: the 448x448 JPEG tiles a served model gets under ``internvl-script`` against the exact tiles
  (pixel for pixel the script's: ``docs/authors-frames.md``).

It prints one row per video and the range per kind; ``--json`` writes the numbers.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from authors_frames import _write, decode_all, mad  # noqa: E402

import mtvbench.media.authors_frames as af  # noqa: E402
from mtvbench.data.sample import SAMPLE_VIDEOS, render_frame  # noqa: E402
from mtvbench.media.frames import FrameSettings  # noqa: E402

N_FRAMES = 150
LANDSCAPE = ((480, 270), (1280, 720), (1920, 1080))
KINDS = ("pattern", "noise", "text", "portrait")


def _frames(kind: str, size: tuple[int, int]) -> Any:
    from PIL import Image, ImageDraw

    w, h = size
    rng = np.random.default_rng(27)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for i in range(N_FRAMES):
        if kind == "pattern":
            spec = SAMPLE_VIDEOS["shapes_parade"]
            im = Image.fromarray(render_frame(spec, i % spec.n_frames))
            yield np.asarray(im.resize(size, Image.Resampling.BICUBIC))
        elif kind == "portrait":
            spec = SAMPLE_VIDEOS["rocket_countdown"]
            im = Image.fromarray(render_frame(spec, i % spec.n_frames)).transpose(Image.Transpose.ROTATE_90)
            yield np.asarray(im.resize(size, Image.Resampling.BICUBIC))
        elif kind == "noise":
            t = i / N_FRAMES
            base = np.stack([128 + 90 * np.sin(xx / w * 6 + t * 4), 128 + 90 * np.cos(yy / h * 5 - t * 3),
                             128 + 60 * np.sin((xx + yy) / (w + h) * 8 + t * 2)], axis=-1)
            yield np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
        else:
            im = Image.new("RGB", size, (255, 255, 255))
            d = ImageDraw.Draw(im)
            for line in range(0, h // 14 + 2):
                y = line * 14 - (i * 3) % 14
                d.text((8, y), f"line {line + i // 5:04d}: the quick brown fox jumps over the lazy dog {i}",
                       fill=(20, 20, 20))
            yield np.asarray(im)


def make_videos(folder: Path) -> dict[str, tuple[str, Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for kind in KINDS:
        for w, h in LANDSCAPE:
            size = (h, w) if kind == "portrait" else (w, h)
            name = f"{kind}_{size[0]}x{size[1]}"
            path = folder / f"{name}.mp4"
            if not path.is_file():
                _write(path, _frames(kind, size), size)
            out[name] = (kind, path)
    return out


def _jpegs(images: list[bytes]) -> np.ndarray:
    from PIL import Image

    return np.stack([np.asarray(Image.open(io.BytesIO(j)).convert("RGB")) for j in images])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/tmp/mtvb-authors-pixels"), help="work folder")
    ap.add_argument("--script-python", required=True, help="interpreter with decord, opencv and numpy")
    ap.add_argument("--scripts-dir", type=Path, required=True, help="folder holding the authors' infer_qwen25vl.py")
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()
    videos = make_videos(args.data / "videos")
    script_dir = args.data / "script"
    subprocess.run([args.script_python, str(ROOT / "benchmarks" / "authors_pixels_script.py"), str(args.scripts_dir),
                    str(script_dir), *[str(p) for _, p in videos.values()]], check=True)
    rows: dict[str, dict[str, Any]] = {}
    for name, (kind, path) in videos.items():
        ours = af.write_script_mp4(path, args.data / "ours" / f"{name}_mtvbench.mp4")
        theirs = decode_all(script_dir / f"{name}_processed.mp4")
        served = af.script_frames(path, FrameSettings(rule="qwen-script", num_frames=128, max_side=720))
        tiles = af.script_frames(path, FrameSettings(rule="internvl-script", num_frames=128, max_side=None,
                                                     size=(448, 448)))
        exact = np.stack(af.internvl_script_frames(path, 128, 448).frames)
        rows[name] = {"kind": kind, "clip": list(ours.resized_size), "mp4": mad(theirs, decode_all(ours.path)),
                      "served": mad(_jpegs(served.jpegs), theirs), "internvl": mad(_jpegs(tiles.jpegs), exact)}
        r = rows[name]
        print(f"{name}: clip {r['clip'][0]}x{r['clip'][1]}  mp4 {r['mp4']}  served {r['served']}  "
              f"internvl {r['internvl']}", flush=True)
    print("\nranges per kind (mean absolute difference, 0-255):")
    for kind in KINDS:
        for col in ("mp4", "served", "internvl"):
            vals = [r[col] for r in rows.values() if r["kind"] == kind and r[col] is not None]
            print(f"  {kind:9s} {col:8s} {min(vals):.2f}-{max(vals):.2f}" if vals else f"  {kind} {col}: -")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
