"""``run --executor ray`` under faults: replicas and raylets killed at random moments (issue 21).

    python benchmarks/ray_faults.py                              # 10 replica kills, 5 raylet kills
    python benchmarks/ray_faults.py --replica-kills 3 --raylet-kills 2 --seed 7

Starts the tests' two-raylet cluster on this machine (tests/ray/cluster.py) and the tests' loopback
OpenAI-compatible server (a new one per run: every model call takes ``--slow-s``), runs the bundled sample once with the
local executor (the baseline), then for each trial runs it with ``--executor ray --ray-address`` and
SIGKILLs, once a random number of answers (0 to ``--latest``) is stored, either one ``ray::Replica``
or the second node's raylet (the node is started again after the trial). Each trial ends as:

- **finished**: exit 0, scores complete;
- **failed loudly**: exit 3, scores INCOMPLETE, an error that says what to do; the same command is then
  run again (the resume) and must finish;
- **other**: any other exit, or no exit within ``--hang-s`` after the kill (a hang: the run is killed).

``kill to exit`` is the seconds from the kill to the run's exit. ``resume = local`` counts the trials whose
final answers (after the resume, if one was needed) equal the baseline's. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.ray.cluster import LocalCluster, ray_env  # noqa: E402
from tests.support.openai_server import Faults, LoopbackServer, ServerState  # noqa: E402
from tests.support.run_helpers import stored_ok  # noqa: E402

from mtvbench.data.sample import materialize  # noqa: E402


@dataclass
class Trial:
    kind: str
    at: int
    outcome: str
    kill_to_exit: float | None
    resume_equal: bool
    error: str = ""


def server(slow_s: float) -> LoopbackServer:
    """The loopback server of one run: every model call's first attempt takes ``slow_s`` seconds."""
    srv = LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=slow_s)))
    srv.httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # a killed replica's broken pipes
    return srv


def command(data: Path, url: str, tmp: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mtvbench", "run", "--data", str(data), "--model", "openai:test-model",
            "--judge", "openai:test-judge", "--model-base-url", url, "--judge-base-url", url, "--frames", "4",
            "--judge-runs", "1", "--cache-dir", str(tmp / "cache"), "--out", str(out), "--quiet", *extra]


def answers(run: Path) -> dict[str, str]:
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return {x["turn_id"]: x["answer"] for x in lines}


def status(run: Path) -> str | None:
    try:
        return str(json.loads((run / "scores.json").read_text())["status"])
    except (OSError, ValueError, KeyError):
        return None


def victim(cluster: LocalCluster, kind: str) -> int | None:
    if kind == "replica":
        pids = cluster.replica_pids()
        return random.choice(pids) if pids else None
    return cluster.second_raylet()


def trial(cluster: LocalCluster, kind: str, at: int, args: list[str], run: Path, hang_s: float
          ) -> tuple[str, float | None, str]:
    """One run with one kill: its outcome, the seconds from the kill to the exit, its error text."""
    proc = subprocess.Popen(args, env=ray_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killed = None
    try:
        while proc.poll() is None and killed is None:
            time.sleep(0.05)
            pid = victim(cluster, kind) if stored_ok(run) >= at else None
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed = time.monotonic()
        try:
            _, err = proc.communicate(timeout=hang_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate()
            return "other (no exit: a hang)", None, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    seconds = None if killed is None else time.monotonic() - killed
    if killed is None:
        return "other (ended before the kill)", None, err
    if proc.returncode == 0 and status(run) == "complete":
        return "finished", seconds, err
    if proc.returncode == 3 and status(run) == "INCOMPLETE" and "error:" in err:
        return "failed loudly", seconds, err
    return f"other (exit {proc.returncode})", seconds, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replica-kills", type=int, default=10)
    ap.add_argument("--raylet-kills", type=int, default=5)
    ap.add_argument("--latest", type=int, default=33, help="kill once 0..LATEST answers are stored (of 39)")
    ap.add_argument("--slow-s", type=float, default=0.2, help="seconds each model call takes")
    ap.add_argument("--stall-s", type=float, default=30, help="ray.stall_s of the runs")
    ap.add_argument("--hang-s", type=float, default=300, help="a run without an exit this long after the kill hung")
    ap.add_argument("--seed", type=int, default=21)
    a = ap.parse_args()
    random.seed(a.seed)
    tmp = Path(tempfile.mkdtemp(prefix="ray-faults-"))
    data = materialize(tmp / "sample")
    cfg = tmp / "ray.yaml"
    cfg.write_text(f"ray:\n  stall_s: {a.stall_s}\n")
    trials: list[Trial] = []
    with LocalCluster() as cluster:
        with server(a.slow_s) as srv:
            base = subprocess.run(command(data, srv.url, tmp, tmp / "local"), env=ray_env(), capture_output=True,
                                  text=True)
        assert base.returncode == 0, base.stderr
        baseline = answers(tmp / "local")
        plan = ["replica"] * a.replica_kills + ["raylet"] * a.raylet_kills
        for i, kind in enumerate(plan):
            run, at = tmp / f"ray-{i}", random.randint(0, a.latest)
            with server(a.slow_s) as srv:  # a new server: its first answer to each request is the slow one
                args = command(data, srv.url, tmp, run, "--concurrency", "2", "--executor", "ray",
                               "--ray-address", cluster.address, "--config", str(cfg))
                outcome, seconds, err = trial(cluster, kind, at, args, run, a.hang_s)
                if kind == "raylet":
                    cluster.add_node()
                if outcome == "failed loudly":
                    again = subprocess.run(args, env=ray_env(), capture_output=True, text=True, timeout=600)
                    if again.returncode != 0:
                        outcome = f"failed loudly, resume exit {again.returncode}"
            equal = status(run) == "complete" and answers(run) == baseline
            last = [x for x in err.splitlines() if x.startswith("error:")]
            trials.append(Trial(kind, at, outcome, seconds, equal, last[0][:160] if last else ""))
            print(f"{kind} kill at {at} stored: {outcome}, kill to exit "
                  f"{'-' if seconds is None else f'{seconds:.1f} s'}, resume = local: {equal}"
                  + (f" ({trials[-1].error})" if trials[-1].error else ""), flush=True)
    print()
    print("| kill | trials | finished | failed loudly (exit 3) | other / hang | resume = local | "
          "kill to exit s (median, max) |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("replica", "raylet"):
        ts = [t for t in trials if t.kind == kind]
        if not ts:
            continue
        secs = [t.kill_to_exit for t in ts if t.kill_to_exit is not None]
        span = f"{statistics.median(secs):.1f}, {max(secs):.1f}" if secs else "-"
        print(f"| {kind} (SIGKILL) | {len(ts)} | {sum(t.outcome == 'finished' for t in ts)} | "
              f"{sum(t.outcome == 'failed loudly' for t in ts)} | "
              f"{sum(t.outcome not in ('finished', 'failed loudly') for t in ts)} | "
              f"{sum(t.resume_equal for t in ts)} | {span} |")


if __name__ == "__main__":
    main()
