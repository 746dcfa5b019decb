"""Benchmark exact uniform frame sampling: our sampler vs a naive full decode vs decord.

    python benchmarks/frames.py                       # 10-minute 1080p30 H.264 (generated once)
    python benchmarks/frames.py --minutes 3 --height 720 --repeat 2

The video is generated in a child process with PyAV/libx264 (preset veryfast, crf 23,
B-frames, keyint 250, a scene change, hence a key frame, every 6 s; about 5 Mbit/s at
1080p) into ``--dir`` and reused. Each approach runs in its own child process, after
waiting for the CPUs to go quiet: ``seconds`` is timed inside the child, ``CPU s`` is the
child's user+sys time (``os.wait4``) and ``peak RSS`` the child's ``VmHWM``.

``ours`` is the whole :func:`sample_frames` call (decode + resize to 720 + JPEG);
``naive`` decodes every frame (FFmpeg threads) and resizes/encodes the targets the same
way; ``decord`` is ``VideoReader`` + ``get_batch`` only (full-size RGB, no resize or
JPEG), which favours decord.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mtvbench.media.frames import (  # noqa: E402
    FrameSettings,
    _Encoder,
    probe,
    sample_frames,
    uniform_indices,
)

APPROACHES = ("ours", "naive", "decord")


# ---------------------------------------------------------------------------- video


def _texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Smooth random blobs plus fine grain (uint8); about 4 Mbit/s at 1080p30 with crf 23."""
    small = rng.integers(0, 256, (h // 16 + 2, w // 16 + 2)).astype(np.float32)
    big = np.repeat(np.repeat(small, 16, axis=0), 16, axis=1)[:h, :w]
    for axis in (0, 1):  # box blur -> smooth blobs
        big = (big + np.roll(big, 8, axis) + np.roll(big, -8, axis)) / 3
    big += rng.integers(-7, 8, (h, w), dtype=np.int8)
    return np.clip(big, 0, 255).astype(np.uint8)


def generate(path: Path, minutes: float, height: int, fps: int = 30, crf: int = 23) -> None:
    """Panning textures with moving boxes and a scene change every 6 s; libx264 veryfast."""
    import av

    width = (height * 16 // 9) // 2 * 2
    n = int(minutes * 60 * fps)
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".part.mp4")
    t0 = time.perf_counter()
    with av.open(str(tmp), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": str(crf)}
        scene_len = 6 * fps
        for i in range(n):
            if i % scene_len == 0:
                tex_y = _texture(rng, height * 2, width * 2)
                tex_u = _texture(rng, height, width)
                tex_v = _texture(rng, height, width)
                vx, vy = rng.integers(-6, 7, 2)
            k = i % scene_len
            oy, ox = (height // 2 + vy * k) % height, (width // 2 + vx * k) % width
            y = tex_y[oy : oy + height, ox : ox + width].copy()
            for b in range(4):  # moving boxes
                bx = int((width - 200) * (0.5 + 0.5 * np.sin(i / (37 + 11 * b) + b)))
                by = int((height - 120) * (0.5 + 0.5 * np.cos(i / (53 + 7 * b) + 2 * b)))
                y[by : by + 120, bx : bx + 200] = 40 + 50 * b
            y[: height // 40, : (i % 300) * width // 300] = 235  # progress bar
            cy, cx = oy // 2, ox // 2
            u = tex_u[cy : cy + height // 2, cx : cx + width // 2]
            v = tex_v[cy : cy + height // 2, cx : cx + width // 2]
            frame = av.VideoFrame.from_ndarray(np.concatenate([y.ravel(), u.ravel(), v.ravel()]).reshape(-1, width),
                                               format="yuv420p")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            for packet in stream.encode(frame):
                out.mux(packet)
            if i and i % (fps * 60) == 0:
                print(f"  generated {i / fps / 60:.0f} min ({time.perf_counter() - t0:.0f} s)", flush=True)
        for packet in stream.encode(None):
            out.mux(packet)
    tmp.replace(path)


# ---------------------------------------------------------------------------- children


def run_ours(path: Path, num: int) -> dict:
    t = time.perf_counter()
    vf = sample_frames(path, FrameSettings(num_frames=num))
    return {"seconds": time.perf_counter() - t, "frames": len(vf), "indices": vf.indices,
            "jpeg_bytes": sum(map(len, vf.jpegs))}


def run_naive(path: Path, num: int) -> dict:
    import av

    t = time.perf_counter()
    total = probe(path).total_frames
    wanted = set(uniform_indices(total, num))
    kept: list[bytes] = []
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        s.thread_type = "AUTO"
        enc = _Encoder(FrameSettings(num_frames=num), s.codec_context.width, s.codec_context.height, None)
        for i, frame in enumerate(c.decode(s)):
            if i in wanted:
                kept.append(enc(frame))
    return {"seconds": time.perf_counter() - t, "frames": len(kept), "indices": sorted(wanted)}


def run_decord(path: Path, num: int) -> dict:
    try:
        import decord
    except ImportError:
        return {"skipped": "decord not installed"}
    t = time.perf_counter()
    vr = decord.VideoReader(str(path), ctx=decord.cpu(0))
    idx = uniform_indices(len(vr), num)
    arr = vr.get_batch(idx).asnumpy()
    return {"seconds": time.perf_counter() - t, "frames": int(arr.shape[0]), "indices": idx,
            "shape": list(arr.shape)}


def _vm_hwm_mb() -> float | None:
    """Peak RSS of this process image (``VmHWM``; unlike ru_maxrss it excludes the pre-exec parent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def child(approach: str, path: Path, num: int) -> None:
    fn = {"ours": run_ours, "naive": run_naive, "decord": run_decord}[approach]
    res = fn(path, num)
    res["vm_hwm_mb"] = _vm_hwm_mb()
    print("RESULT " + json.dumps(res), flush=True)


def _cpu_busy(seconds: float = 2.0) -> float:
    """Fraction of all CPUs busy over ``seconds`` (from /proc/stat; 0 where unavailable)."""
    def snap() -> tuple[int, int]:
        vals = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(vals), vals[3] + vals[4]  # total, idle + iowait

    try:
        t0, i0 = snap()
        time.sleep(seconds)
        t1, i1 = snap()
    except OSError:
        return 0.0
    return 1 - (i1 - i0) / max(t1 - t0, 1)


def wait_idle(max_wait_s: float, busy_below: float = 0.1) -> float:
    """Wait (at most ``max_wait_s``) until other processes leave the CPUs alone; the last busy fraction."""
    deadline = time.monotonic() + max_wait_s
    busy = _cpu_busy()
    while busy >= busy_below and time.monotonic() < deadline:
        busy = _cpu_busy()
    return busy


def measure(approach: str, path: Path, num: int) -> dict:
    """Run one approach in a child; wall time and peak RSS of that child only."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", approach, "--video", str(path), "--num", str(num)],
        stdout=subprocess.PIPE, text=True,
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    res = {"approach": approach, "rc": proc.returncode, "process_s": wall, "ru_maxrss_mb": usage.ru_maxrss / 1024,
           "cpu_s": usage.ru_utime + usage.ru_stime}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res.update(json.loads(line[7:]))
    res["peak_rss_mb"] = res.get("vm_hwm_mb") or res["ru_maxrss_mb"]
    return res


# ---------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--num", type=int, default=128)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "mtvbench-bench")
    ap.add_argument("--video", type=Path, help="benchmark this file instead of generating one")
    ap.add_argument("--repeat", type=int, default=1, help="runs per approach; the fastest is reported")
    ap.add_argument("--only", nargs="*", choices=APPROACHES, default=list(APPROACHES))
    ap.add_argument("--wait-idle", type=float, default=600.0,
                    help="before each run wait up to this many seconds for other processes to go quiet")
    ap.add_argument("--generate-only", action="store_true", help="only make the video")
    ap.add_argument("--child", choices=APPROACHES, help=argparse.SUPPRESS)
    ap.add_argument("--generate-to", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        child(args.child, args.video, args.num)
        return
    if args.generate_to:
        generate(args.generate_to, args.minutes, args.height, args.fps)
        return

    path = args.video
    if path is None:
        args.dir.mkdir(parents=True, exist_ok=True)
        path = args.dir / f"bench_{args.minutes:g}min_{args.height}p_{args.fps}fps.mp4"
        if not path.exists():
            print(f"generating {path} ...", flush=True)
            t = time.perf_counter()
            # in a child, so that this process stays small (its RSS would leak into the children's)
            subprocess.run([sys.executable, __file__, "--generate-to", str(path), "--minutes", str(args.minutes),
                            "--height", str(args.height), "--fps", str(args.fps)], check=True)
            print(f"generated in {time.perf_counter() - t:.0f} s", flush=True)
    if args.generate_only:
        return
    info = probe(path)
    size_mb = path.stat().st_size / 2**20
    print(f"video: {path} ({size_mb:.0f} MiB, {info.width}x{info.height} {info.codec}, "
          f"{info.total_frames} frames, {info.duration_s:.0f} s, "
          f"{8 * size_mb * 2**20 / 1e6 / max(info.duration_s, 1e-9):.1f} Mbit/s)")
    print(f"cpus: {os.cpu_count()}, sampling {args.num} frames")
    with open(path, "rb") as f:  # warm the page cache so every approach reads from memory
        while f.read(1 << 24):
            pass

    results: dict[str, dict] = {}
    for approach in args.only:
        runs = []
        for _ in range(args.repeat):
            busy = wait_idle(args.wait_idle)
            runs.append(measure(approach, path, args.num) | {"busy_before": busy})
        ok = [r for r in runs if "seconds" in r]
        results[approach] = min(ok, key=lambda r: r["seconds"]) if ok else runs[0]

    ours = results.get("ours", {})
    print()
    head = f"{'approach':<8} {'seconds':>8} {'process s':>10} {'CPU s':>7} {'peak RSS MB':>12} {'vs ours':>8}"
    print(head + f" {'CPU vs ours':>11}  note")
    for name, r in results.items():
        if "seconds" not in r:
            why = r.get("skipped") or f"failed rc={r['rc']}"
            print(f"{name:<8} {'-':>8} {'-':>10} {'-':>7} {'-':>12} {'-':>8} {'-':>11}  {why}")
            continue
        ratio = r["seconds"] / ours["seconds"] if ours.get("seconds") else float("nan")
        cpu_ratio = r["cpu_s"] / ours["cpu_s"] if ours.get("cpu_s") else float("nan")
        note = f"CPUs {100 * r['busy_before']:.0f}% busy before"
        if name != "ours" and ours.get("indices") and r.get("indices") != ours["indices"]:
            note += "; indices differ (frame count differs)"
        print(f"{name:<8} {r['seconds']:8.2f} {r['process_s']:10.2f} {r['cpu_s']:7.1f} {r['peak_rss_mb']:12.0f} "
              f"{ratio:7.2f}x {cpu_ratio:10.2f}x  {note}")


if __name__ == "__main__":
    main()
