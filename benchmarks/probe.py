"""Benchmark the video check of `validate`/`run` (mtvbench.media.probe): cold, cached, and
against what a run does with the same videos anyway (sampling 128 frames).

    python benchmarks/probe.py                       # 4 videos x 60 s, 640x360, 25 fps
    python benchmarks/probe.py --videos 8 --seconds 120 --width 1280 --height 720

Videos are synthetic H.264 MP4 (tests/support/videogen.py: a moving bit pattern, GOP 50,
B-frames), written once into a temporary folder. "cold" checks with an empty cache (open,
first frame, tail of the last GOP); "cached" checks again with a fresh cache object over the
same folder (what a second `validate` or the start of `run` pays: the content fingerprint,
3 MiB read per video, plus one small JSON file).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.support.videogen import write_video  # noqa: E402

from mtvbench.media import fingerprint  # noqa: E402
from mtvbench.media.frames import FrameSettings, sample_frames  # noqa: E402
from mtvbench.media.probe import ProbeCache, check_video  # noqa: E402


def _timed(fn, *args) -> tuple[float, object]:  # noqa: ANN001 - a benchmark helper
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=360)
    ap.add_argument("--fps", type=int, default=25)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        n = int(args.seconds * args.fps)
        print(f"writing {args.videos} videos: {n} frames, {args.width}x{args.height}, {args.fps} fps ...")
        paths = [write_video(d / f"v{i}.mp4", n, size=(args.width, args.height), rate=args.fps, gop=50)
                 for i in range(args.videos)]
        mb = sum(p.stat().st_size for p in paths) / len(paths) / 1e6
        cold, warm, sample = [], [], []
        for p in paths:
            t, check = _timed(check_video, p, ProbeCache(d / "cache"))
            assert check.ok, check.problem
            cold.append(t)
            fingerprint._FP_MEMO.clear()  # a new process would not have it
            t, check = _timed(check_video, p, ProbeCache(d / "cache"))
            assert check.cached
            warm.append(t)
            sample.append(_timed(sample_frames, p, FrameSettings(num_frames=128))[0])
        med = statistics.median
        print(f"video size: {mb:.1f} MB on average")
        print(f"check, cold:   {med(cold) * 1000:8.1f} ms per video (median)")
        print(f"check, cached: {med(warm) * 1000:8.1f} ms per video (median)   "
              f"cold/cached = {med(cold) / med(warm):.1f}x")
        print(f"sample 128 frames (what a run decodes anyway): {med(sample) * 1000:8.1f} ms per video; "
              f"cold check is {med(cold) / med(sample):.1%} of it")


if __name__ == "__main__":
    main()
