"""A real Ray cluster on this machine for the tests: a head and a second node (two raylets),
CPU only, small resources, every address on 127.0.0.1, its own temporary folder and ports.

The cluster's processes are found by that folder (every Ray daemon names it on its command
line; workers are children of a raylet) and are ended by their ids when the cluster stops;
nothing else on the machine is touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.run_helpers import SRC

HERE = Path(__file__).resolve().parent
#: the repository: workers import test helpers from it (a build's detector factory)
ROOT = HERE.parents[1]
#: the object store of each node (bytes): small, the test videos are tiny
OBJECT_STORE = 100 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_env(**extra: str) -> dict[str, str]:
    """The environment of the cluster's daemons and of a driver: the mtvbench under test (and the
    tests' helpers), no usage
    statistics, no token authentication (whatever ~/.ray holds: a local ``ray.init()`` writes a token
    there that a cluster started without one would refuse), and the driver's own address on loopback
    (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray's address lookup answer 127.0.0.1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=os.pathsep.join([SRC, str(ROOT), os.environ.get("PYTHONPATH", "")]),
               RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled", **extra)
    return env


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process we can see."""
    out: dict[int, tuple[int, str]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[int(d)] = (ppid, cmd)
    return out


class LocalCluster:
    def __init__(self, cpus: int = 2):
        self.cpus = cpus
        self.root = Path(tempfile.mkdtemp(prefix="mtvray", dir="/tmp"))  # short: Ray's socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"

    def _start(self, *args: str) -> None:
        cmd = [sys.executable, str(HERE / "raystart.py"), "start", "--node-ip-address=127.0.0.1",
               f"--num-cpus={self.cpus}", f"--object-store-memory={OBJECT_STORE}", f"--temp-dir={self.root}",
               "--disable-usage-stats", *args]
        env = ray_env()
        del env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]  # it would refuse a second node; raystart.py keeps loopback
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"ray start failed: {done.stdout[-2000:]}\n{done.stderr[-2000:]}")

    def start(self) -> LocalCluster:
        try:
            self._start("--head", f"--port={self.port}", "--include-dashboard=false")
            self.add_node()
        except BaseException:
            self.stop()
            raise
        return self

    def add_node(self) -> None:
        """Start a second node (again, after :meth:`kill_second_raylet`) and wait until it is up."""
        before = set(self.alive_nodes()) if self.pids() else set()
        self._start(f"--address={self.address}", '--resources={"node2": 1}')
        end = time.monotonic() + 60
        while not set(self.alive_nodes()) - before:
            assert time.monotonic() < end, "the second Ray node did not come up"
            time.sleep(0.5)

    def second_raylet(self) -> int:
        """The pid of the second node's raylet (its resources name ``node2``)."""
        procs = _processes()
        found = [p for p in self.pids() if "/raylet/raylet " in procs[p][1] and "node2,1" in procs[p][1]
                 and _running(p)]
        assert len(found) == 1, f"expected one raylet of the second node, found {found}"
        return found[0]

    def kill_second_raylet(self) -> int:
        """SIGKILL the second node's raylet (its node dies); its pid."""
        pid = self.second_raylet()
        os.kill(pid, signal.SIGKILL)
        return pid

    def query(self, code: str) -> Any:
        """``code`` run in a driver of this cluster (``ray`` imported and connected); prints JSON."""
        script = f"import json, ray\nray.init(address={self.address!r}, logging_level='ERROR')\n{code}"
        done = subprocess.run([sys.executable, "-c", script], env=ray_env(), capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def alive_nodes(self) -> list[str]:
        """The ids of the nodes the cluster counts as alive."""
        return self.query("print(json.dumps([x['NodeID'] for x in ray.nodes() if x['Alive']]))")

    def pids(self) -> list[int]:
        """The cluster's processes: every one naming its folder, and their descendants."""
        procs = _processes()
        mark = str(self.root)
        found = {p for p, (_, cmd) in procs.items() if mark in cmd and p != os.getpid()}
        grew = True
        while grew:
            grew = False
            for p, (pp, _) in procs.items():
                if pp in found and p not in found:
                    found.add(p)
                    grew = True
        return sorted(found)

    def replica_pids(self) -> list[int]:
        """The cluster's model replicas (actor workers titled ``ray::Replica``)."""
        procs = _processes()
        return [p for p in self.pids() if procs.get(p, (0, ""))[1].startswith("ray::Replica")]

    def stop(self) -> None:
        pids = self.pids()
        # Ray's daemons (GCS server, raylets) outlive a SIGTERM by many seconds: a short grace, then SIGKILL
        for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
            for p in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, sig)
            end = time.monotonic() + wait
            while time.monotonic() < end and any(_running(p) for p in pids):
                time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _running(pid: int) -> bool:
    """Alive and not a zombie (a daemon's parent is init, which reaps it in its own time)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def cluster_fixture() -> Iterator[LocalCluster]:
    with LocalCluster() as c:
        yield c
