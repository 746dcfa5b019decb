"""Wall time of the temporal-grounding sweep on the bundled sample, against one run of the paper's setting.

    python benchmarks/grounding_sweep.py                 # 0.05 s per call, 128 frames, sample
    python benchmarks/grounding_sweep.py --latency 0.25 --frames 32

Starts the OpenAI-compatible server of ``benchmarks/throughput.py`` in a separate process (model answers and
the judge's five-key replies after a fixed latency), then, each in a fresh folder with a fresh frame cache:

1. the reference: ``mtvbench run`` with ``--sampling uniform --frame-timestamps off`` (one run);
2. ``mtvbench sweep --sampling uniform,clip --frame-timestamps off,on`` (the four runs of the 2x2 grid, sharing
   one frame cache, and the sweep's report with the paired differences).

Printed: both wall times, the ratio of the sweep to the reference (four runs would be 4.0 if nothing were
shared), and the calls each made. Ratios only: the machine's speed and load cancel out within one invocation.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import ServerProcess  # noqa: E402


def mtvbench(*args: str) -> float:
    """Run the CLI of this checkout in a child process; its wall time in seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "benchmark"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtvbench", *args], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.05, help="seconds per call of the server")
    ap.add_argument("--frames", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from mtvbench.data.sample import materialize

    server = ServerProcess(args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="mtvbench-grounding-sweep-") as tmp:
            work = Path(tmp)
            data = materialize(work / "sample")
            common = ["--data", str(data), "--model", "openai:bench", "--judge", "openai:judge",
                      "--model-base-url", server.url, "--judge-base-url", server.url, "--protocol", "paper",
                      "--frames", str(args.frames), "--concurrency", str(args.concurrency)]
            server.reset()
            single = mtvbench("run", *common, "--out", str(work / "single"), "--cache-dir", str(work / "c1"),
                              "--quiet")
            single_calls = len(server.calls())
            server.reset()
            sweep = mtvbench("sweep", *common, "--out", str(work / "sweep"), "--cache-dir", str(work / "c2"),
                             "--sampling", "uniform,clip", "--frame-timestamps", "off,on")
            sweep_calls = len(server.calls())
    finally:
        server.close()
    print(f"latency {args.latency} s, {args.frames} frames, concurrency {args.concurrency}, load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"one run (uniform, off)          {single:7.1f} s  {single_calls:5d} calls")
    print(f"sweep uniform,clip x off,on     {sweep:7.1f} s  {sweep_calls:5d} calls")
    print(f"sweep / one run                 {sweep / single:7.2f}x  (4 runs; 4.00x if nothing were shared)")


if __name__ == "__main__":
    main()
