"""The Ray executor on a two-node Ray cluster on this machine: 1 vs 2 model replicas of the tiny
``hf:`` model (speedup), and the executor's overhead against the local runner on an API run.

    python benchmarks/ray_scaling.py                      # needs ray and the torch test group
    python benchmarks/ray_scaling.py --skip-hf --dialogues 1000

Both parts start the same cluster as the tests (tests/ray/cluster.py: a head and a second
node, two raylets on 127.0.0.1, ``--cpus`` CPUs each) and run ``mtvbench run`` in a child
process; ``seconds`` is that process's wall time (start to exit: Ray's start-up and the
replicas' model loading included), ``answers span`` the time from the first to the last answer
stored (the model's throughput without start-up), ``calls span`` the time from the first to the
last call the loopback server answered (API part).

1. **hf scaling**: a synthetic dataset (throughput.py's generator) evaluated with the tiny
   randomly initialised LLaVA of tests/support/tiny_hf.py (``--max-tokens`` new tokens, greedy,
   judge ``offline``), by the local executor and by ``--executor ray`` with 1 and with 2
   replicas (each replica one CPU and one torch thread). Speedup = 1 replica / 2 replicas.
2. **API overhead**: the same dataset against throughput.py's fixed-latency asyncio loopback
   server (model and judge; ``--judge-runs 3``), local executor vs ``--executor ray`` with 2
   replicas (the judge stays in the driver in both). Overhead = ray / local.

Every run writes the same answers; the script checks that the scores are equal.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "benchmarks")]

from tests.ray.cluster import LocalCluster, ray_env  # noqa: E402
from throughput import LoopbackServer, Meter, make_dataset  # noqa: E402


def run(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mtvbench", "run", *args, "--quiet"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"run failed:\n{done.stderr[-3000:]}")
    return seconds


def answer_span(out: Path) -> float:
    """Seconds from the first to the last answer stored: the model's throughput, without start-up."""
    with sqlite3.connect(out / "store.sqlite") as c:
        first, last = c.execute("SELECT MIN(created), MAX(created) FROM responses").fetchone()
    return float(last - first)


def scores(out: Path) -> Any:
    s = json.loads((out / "scores.json").read_text())
    return s["overall"], s["tasks"]


def hf_part(a: argparse.Namespace, data: Path, cluster: LocalCluster) -> list[tuple[str, float, float]]:
    from tests.support.tiny_hf import build_tiny_llava

    model = a.dir / "tiny-llava"
    if not (model / "config.json").exists():
        build_tiny_llava(model)
    settings = {"model_settings": {"max_tokens": a.max_tokens, "extra": {"batch_size": a.batch_size}}}
    ray = ["--executor", "ray", "--ray-address", cluster.address]
    rows, seen = [], set()
    for label, replicas, extra in (("local executor (1 torch thread)", None, []), ("ray, 1 replica", 1, ray),
                                   ("ray, 2 replicas", 2, ray)):
        cfg = a.dir / f"hf-{replicas or 0}.yaml"
        cfg.write_text(json.dumps({**settings, **({"ray": {"replicas": replicas}} if replicas else {})}))
        out = a.dir / f"hf-run-{replicas or 0}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        args = ["--data", str(data), "--model", f"hf:{model}", "--judge", "offline", "--frames", str(a.frames),
                "--judge-runs", "1", "--config", str(cfg), "--cache-dir", str(a.dir / "hf-cache"), "--out", str(out),
                *extra]
        rows.append((label, run(args, ray_env(OMP_NUM_THREADS="1")), answer_span(out)))
        seen.add(json.dumps(scores(out)))
    assert len(seen) == 1, "the runs' scores differ"
    return rows


def api_part(a: argparse.Namespace, data: Path, cluster: LocalCluster) -> list[tuple[str, float, float]]:
    rows, seen = [], set()
    for label, extra in (("local executor", []),
                         ("ray, 2 replicas", ["--executor", "ray", "--ray-address", cluster.address])):
        meter = Meter()
        srv = LoopbackServer(a.latency, meter)
        out = a.dir / f"api-{label.split(',')[0].replace(' ', '')}"
        subprocess.run(["rm", "-rf", str(out), str(a.dir / "api-cache")], check=True)
        args = ["--data", str(data), "--model", "openai:bench", "--judge", "openai:judge", "--model-base-url",
                srv.url, "--judge-base-url", srv.url, "--frames", str(a.frames), "--judge-runs", "3",
                "--concurrency", str(a.concurrency), "--cache-dir", str(a.dir / "api-cache"), "--out", str(out),
                *extra]
        seconds = run(args, ray_env())
        srv.close()
        rows.append((label, seconds, meter.end - (meter.first or meter.end)))
        seen.add(json.dumps(scores(out)))
    assert len(seen) == 1, "the runs' scores differ"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/mtvbench-ray-scaling"))
    ap.add_argument("--videos", type=int, default=8)
    ap.add_argument("--dialogues", type=int, default=256)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.25)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of each of the two Ray nodes")
    ap.add_argument("--skip-hf", action="store_true")
    a = ap.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    data = make_dataset(a.dir / "data", a.videos, a.dialogues, 60)
    print(f"{a.dialogues} dialogues (one scored turn each), {a.videos} videos, {a.frames} frames per call; "
          f"two Ray nodes of {a.cpus} CPUs on this machine ({os.cpu_count()} CPUs)")
    with LocalCluster(cpus=a.cpus) as cluster:
        if not a.skip_hf:
            rows = hf_part(a, data, cluster)
            print(f"\nhf: tiny LLaVA, {a.max_tokens} new tokens, batch {a.batch_size}, judge offline")
            print("executor | seconds | answers span s")
            for label, s, span in rows:
                print(f"{label} | {s:.1f} | {span:.1f}")
            (_, s_local, sp_local), (_, s1, sp1), (_, s2, sp2) = rows
            print(f"speedup 2 vs 1 replica: answers span {sp1 / sp2:.2f}x, wall time {s1 / s2:.2f}x; "
                  f"ray 2 replicas / local: answers span {sp2 / sp_local:.2f}, wall time {s2 / s_local:.2f}")
        api = api_part(a, data, cluster)
        print(f"\nAPI: loopback server, latency {a.latency}s, concurrency {a.concurrency}, 3 judge runs")
        print("executor | seconds | calls span s")
        for label, s, span in api:
            print(f"{label} | {s:.1f} | {span:.1f}")
        (_, s_local, span_local), (_, s_ray, span_ray) = api
        print(f"overhead ray / local: wall time {s_ray / s_local:.2f}, calls span {span_ray / span_local:.2f}")


if __name__ == "__main__":
    main()
