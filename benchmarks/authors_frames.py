"""What the authors' inference scripts fed the Qwen and InternVL rows of Table 2, against mtvbench.

    python benchmarks/authors_frames.py                                  # mtvbench's side only
    python benchmarks/authors_frames.py --script-mp4-dir /work/authors-run/out \\
        --hf-python /tmp/tf457/bin/python --hf-python /work/venv/bin/python --json docs/authors-frames.json

Videos: the bundled sample (``mtvbench.data.sample``, 480x270, 360-480 frames) and three made here
from it (``--data``/extra, deterministic): ``shapes_parade_1280x720`` (upscaled, so the script's
resize runs and its 720x405 becomes an odd height), ``rocket_countdown_720x1280`` (portrait, the
first 240 frames) and ``score_match_100f`` (100 frames: fewer than 128).

mtvbench's side, per video: the Qwen script's indices (``linspace`` truncated) against
mtvbench's rounding, the script's MP4 as :func:`mtvbench.media.authors_frames.write_script_mp4`
writes it (size, frames, fps, codec), and the InternVL indices against the rounding (how many
differ, how many repeat). With ``--script-mp4-dir`` (the output of the authors' own
``encode_video``/``load_video`` run by ``benchmarks/authors_frames_script.py`` in a venv of their
dependencies: ``<name>_processed.mp4``, ``<name>_decord.npz``, ``<name>_internvl448.npz``,
``authors-run.json``) it also compares with what the scripts made:
same indices, same size and frame count, and the mean absolute pixel difference (0-255, all
pixels and channels, frames decoded with PyAV) between the script's MP4 and mtvbench's, between
the frames before encoding, and at InternVL's 448x448. Each ``--hf-python`` interpreter (a venv
with some transformers version) runs ``benchmarks/authors_frames_hf.py`` on the clips: frames
sampled, frame size and ``video_grid_thw`` of the Qwen2.5-VL and Qwen3-VL processors, with the
class defaults and with the checkpoint files in ``benchmarks/data/checkpoint_configs``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import mtvbench.media.authors_frames as af  # noqa: E402
import mtvbench.media.frames as fr  # noqa: E402
from mtvbench.data.sample import SAMPLE_VIDEOS, materialize, render_frame  # noqa: E402
from mtvbench.data.sample.videos import ENCODER_OPTIONS  # noqa: E402

CONFIGS = ROOT / "benchmarks" / "data" / "checkpoint_configs"
#: label -> (processor family, folder of checkpoint files or None for the class defaults)
CHECKPOINTS: dict[str, tuple[str, Path | None]] = {
    "Qwen2.5-VL class defaults": ("qwen2_5_vl", None),
    "Qwen2.5-VL-7B-Instruct files": ("qwen2_5_vl", CONFIGS / "qwen2.5-vl-7b-instruct"),
    "Qwen3-VL class defaults": ("qwen3_vl", None),
    "Qwen3-VL-8B-Instruct files": ("qwen3_vl", CONFIGS / "qwen3-vl-8b-instruct"),
}
K = 128


# ---------------------------------------------------------------------------- videos


def _write(path: Path, frames: Any, size: tuple[int, int], fps: int = 12) -> Path:
    """Encode RGB frames like the bundled sample (libx264, its options), atomically."""
    import av

    tmp = path.with_name(f".{path.name}.part.mp4")
    with av.open(str(tmp), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.options = dict(ENCODER_OPTIONS)
        for rgb in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")))
        out.mux(stream.encode(None))
    tmp.replace(path)
    return path


def extra_videos(folder: Path) -> dict[str, Path]:
    """Three videos made from the sample's specs (see module doc); written once."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    specs = {
        "shapes_parade_1280x720": ("shapes_parade", None, (1280, 720), False),
        "rocket_countdown_720x1280": ("rocket_countdown", 240, (720, 1280), True),
        "score_match_100f": ("score_match", 100, (480, 270), False),
    }
    out: dict[str, Path] = {}
    for name, (base, n, size, portrait) in specs.items():
        path = out[name] = folder / f"{name}.mp4"
        if path.is_file():
            continue
        spec = SAMPLE_VIDEOS[base]

        def frames(spec=spec, n=n or spec.n_frames, size=size, portrait=portrait):
            for i in range(n):
                im = Image.fromarray(render_frame(spec, i))
                if portrait:
                    im = im.transpose(Image.Transpose.ROTATE_90)
                if im.size != size:
                    im = im.resize(size, Image.Resampling.BICUBIC)
                yield np.asarray(im)

        _write(path, frames(), size)
    return out


def all_videos(data: Path) -> dict[str, Path]:
    root = materialize(data / "sample")
    vids = {name: root / "videos" / f"{name}.mp4" for name in SAMPLE_VIDEOS}
    vids.update(extra_videos(data / "extra"))
    return vids


# ---------------------------------------------------------------------------- pixels


def decode_all(path: Path) -> np.ndarray:
    """Every frame of a full decode, RGB (N, H, W, 3)."""
    return np.stack([f.to_ndarray(format="rgb24") for f in fr.reference_frames(path)])


def mad(a: np.ndarray, b: np.ndarray) -> float | None:
    """Mean absolute difference (0-255) over all frames, pixels and channels; None if the shapes differ."""
    if a.shape != b.shape:
        return None
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def clip_facts(path: Path) -> dict[str, Any]:
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return {"size": [s.codec_context.width, s.codec_context.height], "codec": s.codec_context.name,
                "codec_tag": s.codec_tag, "fps": float(s.average_rate), "header_frames": int(s.frames),
                "decoded_frames": sum(1 for _ in fr.reference_frames(path)), "bytes": path.stat().st_size}


def differ(a: list[int], b: list[int]) -> int:
    return sum(x != y for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------- per video


def qwen_row(name: str, video: Path, ours_dir: Path, script: dict[str, Any] | None,
             script_dir: Path | None) -> dict[str, Any]:
    n = fr.probe(video).total_frames
    ours = af.write_script_mp4(video, ours_dir / f"{name}_mtvbench.mp4", frames=K)
    row: dict[str, Any] = {
        "frames_in_video": n,
        "indices_mtvbench": ours.indices,
        "linspace_vs_round_differ": differ(af.qwen_script_indices(n, K), fr.uniform_indices(n, K)) if n > K else 0,
        "resized_size": list(ours.resized_size),
        "clip_mtvbench": clip_facts(ours.path),
    }
    if script is None or script_dir is None:
        return row
    mp4 = script_dir / script["script_mp4"]
    row["indices_script"] = script["qwen_indices"]
    row["decord_frames_in_video"] = script["qwen_decord_len"]
    row["indices_identical"] = script["qwen_indices"] == ours.indices
    row["clip_script"] = clip_facts(mp4)
    a, b = decode_all(mp4), decode_all(ours.path)
    row["mad_mp4_script_vs_mtvbench"] = mad(a, b)
    decord = np.load(script_dir / f"{name}_decord.npz")["frames"]
    rule = lambda t: af.qwen_script_indices(t, K)  # noqa: E731
    size = tuple(ours.resized_size)
    mine = np.stack(fr.sample_rgb(video, rule, fr.FrameSettings(size=size, interpolation=af.DECORD_RESIZE)).frames)
    row["mad_frames_decord_vs_mtvbench"] = mad(decord, mine)
    bicubic = np.stack(fr.sample_rgb(video, rule, fr.FrameSettings(size=size)).frames)
    row["mad_frames_decord_vs_swscale_bicubic"] = mad(decord, bicubic)
    w, h = row["clip_script"]["size"]
    row["mad_script_mp4_vs_its_frames"] = mad(a, decord[:, :h, :w])
    row["mad_mtvbench_mp4_vs_its_frames"] = mad(b, mine[:, :h, :w])
    return row


def internvl_row(name: str, video: Path, script: dict[str, Any] | None,
                 script_dir: Path | None) -> dict[str, Any]:
    info = fr.probe(video)
    head = fr.probe(video, exact=False)
    idx = af.internvl_script_indices(info.total_frames, head.avg_fps, K)
    rnd = fr.uniform_indices(info.total_frames, K)
    row: dict[str, Any] = {
        "indices_mtvbench": idx,
        "fps": head.avg_fps,
        "vs_round_differ": differ(idx, rnd) if len(rnd) == K else None,
        "vs_round_note": None if len(rnd) == K else f"round gives {len(rnd)} indices (all frames), the script {K}",
        "repeated_frames": K - len(set(idx)),
        "pixels_per_frame": {"448": 448 * 448, "720": 720 * 720},
    }
    if script is None or script_dir is None:
        return row
    row["indices_script"] = script["internvl_indices"]
    row["indices_identical"] = script["internvl_indices"] == idx
    theirs = np.load(script_dir / f"{name}_internvl448.npz")["frames"]
    mine = np.stack(af.internvl_script_frames(video, K, 448).frames)
    row["mad_448_script_vs_mtvbench"] = mad(theirs, mine)
    rule = af.internvl_rule(head.avg_fps, K)
    swscale = np.stack(fr.sample_rgb(video, rule, fr.FrameSettings(size=(448, 448))).frames)
    row["mad_448_script_vs_swscale_bicubic"] = mad(theirs, swscale)
    return row


def other_build(folder: Path, qwen: dict[str, Any], ours_dir: Path, first: Path | None) -> dict[str, Any]:
    """The script's MP4s made with another OpenCV build: against mtvbench's and against the first build's."""
    run = json.loads((folder / "authors-run.json").read_text())
    out: dict[str, Any] = {"versions": run["versions"], "videos": {}}
    for name, entry in run["videos"].items():
        theirs = decode_all(folder / entry["script_mp4"])
        row = {"indices_identical": entry["qwen_indices"] == qwen[name]["indices_mtvbench"],
               "mad_mp4_vs_mtvbench": mad(theirs, decode_all(ours_dir / f"{name}_mtvbench.mp4"))}
        if first is not None:
            row["mad_mp4_vs_first_build"] = mad(theirs, decode_all(first / entry["script_mp4"]))
        out["videos"][name] = row
    return out


# ---------------------------------------------------------------------------- processors


def run_processors(python: str, clips: dict[str, Path]) -> dict[str, Any]:
    request = {"videos": {k: str(v) for k, v in clips.items()},
               "checkpoints": {label: {"family": fam, "dir": str(d) if d else None}
                               for label, (fam, d) in CHECKPOINTS.items()}}
    proc = subprocess.run([python, str(ROOT / "benchmarks" / "authors_frames_hf.py")], input=json.dumps(request),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------- report


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if isinstance(x, float):
        return f"{x:.2f}"
    if isinstance(x, list):
        return "x".join(map(str, x))
    return str(x)


def print_tables(report: dict[str, Any]) -> None:
    print("\nQwen script (128 frames, linspace truncated, longer side <= 720, mp4v 15 fps)")
    cols = ["video", "n", "lin!=round", "same idx", "clip (ours)", "clip (script)", "MAD mp4", "MAD frames"]
    print(" | ".join(cols))
    for name, r in report["qwen"].items():
        ours, theirs = r["clip_mtvbench"], r.get("clip_script")
        print(" | ".join(_fmt(x) for x in [
            name, r["frames_in_video"], r["linspace_vs_round_differ"], r.get("indices_identical"),
            f"{_fmt(ours['size'])} {ours['decoded_frames']}f {ours['fps']:g}fps {ours['codec']}",
            f"{_fmt(theirs['size'])} {theirs['decoded_frames']}f {theirs['fps']:g}fps {theirs['codec']}" if theirs
            else None,
            r.get("mad_mp4_script_vs_mtvbench"), r.get("mad_frames_decord_vs_mtvbench")]))
    print("\nInternVL script (128 segment middles, 448x448)")
    print(" | ".join(["video", "differ vs round", "repeated", "same idx", "MAD 448"]))
    for name, r in report["internvl"].items():
        print(" | ".join(_fmt(x) for x in [name, r["vs_round_differ"] if r["vs_round_differ"] is not None
                                           else r["vs_round_note"], r["repeated_frames"],
                                           r.get("indices_identical"), r.get("mad_448_script_vs_mtvbench")]))
    for other in report.get("other_builds", []):
        print(f"\nScript MP4s from OpenCV {other['versions']['opencv']}: MAD vs mtvbench's / vs the first build's")
        for name, r in other["videos"].items():
            print(" | ".join(_fmt(x) for x in [name, r["indices_identical"], r["mad_mp4_vs_mtvbench"],
                                               r.get("mad_mp4_vs_first_build")]))
    for run in report.get("processors", []):
        print(f"\nProcessors, transformers {run.get('transformers', '?')} ({run['clips']} clips)")
        if "error" in run:
            print("  error:", run["error"])
            continue
        print(" | ".join(["checkpoint", "video", "distinct", "fed", "frame size", "grid thw", "pixel keys used"]))
        for label, res in run["results"].items():
            for name, v in res["videos"].items():
                print(" | ".join(_fmt(x) for x in [label, name, v["distinct_frames"], v["frames_fed"],
                                                   v["frame_size"], v["video_grid_thw"],
                                                   v["pixel_keys_change_anything"]]))


def to_json(obj: Any, indent: int = 0) -> str:
    """JSON with one key per line and lists of plain values (indices, sizes) on one line."""
    pad = " " * (indent + 1)
    if isinstance(obj, dict) and obj:
        items = [f"{pad}{json.dumps(k)}: {to_json(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and any(isinstance(x, dict | list) for x in obj):
        return "[\n" + ",\n".join(pad + to_json(x, indent + 1) for x in obj) + "\n" + " " * indent + "]"
    return json.dumps(obj)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/tmp/mtvb-authors-frames"), help="work folder (videos, clips)")
    ap.add_argument("--script-mp4-dir", type=Path, action="append", default=[],
                    help="output of the authors' encode_video/load_video (see doc); repeat for other OpenCV "
                         "builds: the first is compared in full, the others by their MP4s only")
    ap.add_argument("--hf-python", action="append", default=[], help="interpreter with transformers (repeatable)")
    ap.add_argument("--videos-only", action="store_true", help="make the videos, print their paths, stop")
    ap.add_argument("--json", type=Path, help="write the raw numbers here")
    args = ap.parse_args()

    videos = all_videos(args.data)
    if args.videos_only:
        print("\n".join(str(v) for v in videos.values()))
        return
    script: dict[str, Any] = {}
    script_dir = args.script_mp4_dir[0] if args.script_mp4_dir else None
    if script_dir:
        script = json.loads((script_dir / "authors-run.json").read_text())
    ours_dir = args.data / "mtvbench"
    ours_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"k": K, "script_versions": script.get("versions"), "qwen": {}, "internvl": {}}
    for name, video in videos.items():
        s = script.get("videos", {}).get(name)
        report["qwen"][name] = qwen_row(name, video, ours_dir, s, script_dir)
        report["internvl"][name] = internvl_row(name, video, s, script_dir)
    report["other_builds"] = [other_build(d, report["qwen"], ours_dir, script_dir) for d in args.script_mp4_dir[1:]]
    report["processors"] = []
    for py in args.hf_python:
        sets = {"mtvbench": {n: ours_dir / f"{n}_mtvbench.mp4" for n in videos}}
        if script_dir:
            sets["script"] = {n: script_dir / script["videos"][n]["script_mp4"] for n in videos}
        for which, clips in sets.items():
            run = run_processors(py, clips)
            run.update({"python": py, "clips": which})
            report["processors"].append(run)
    print_tables(report)
    if args.json:
        args.json.write_text(to_json(report) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
