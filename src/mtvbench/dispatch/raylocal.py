"""The Ray instance a run or build starts on this machine when it joins no cluster (``--executor ray``
without ``--ray-address``).

The rules:

- **No key in it.** Its processes get the driver's environment without every variable that holds a
  key (:func:`instance_env`: named like one, ``*KEY*``/``*TOKEN*``/``*SECRET*``, or holding a key a
  backend read) and without ``RAY_ADDRESS``. The judge runs in the driver; the model's key travels to
  the replicas in memory (:mod:`mtvbench.dispatch.ray`).
- **Nothing left behind.** A *keeper* process (``python -m mtvbench.dispatch.raylocal``, started by
  the driver in a session of its own) starts the instance with ``ray start --head`` and adopts every
  process of it (a Linux child subreaper: a daemon whose parent dies becomes the keeper's child). The
  keeper reads a pipe from the driver; when the driver ends, in any way (SIGKILL included), the pipe
  closes and the keeper ends every process below it, by id (SIGTERM, then SIGKILL), and removes the
  instance's folder.
- **Its own ports, no dashboard.** The head's (GCS) port is a free one unless ``ray.local.port`` sets
  it, so two runs on one machine never meet; every other port can be set (``ray.local``); Ray's
  dashboard runs only with ``ray.local.dashboard``.
- **Token authentication as ``ray.init()`` has it.** Unless ``RAY_AUTH_MODE`` says otherwise, the
  instance requires Ray's access token (``~/.ray/auth_token``, made by Ray when missing), as the
  instance ``ray.init()`` starts does.
- **A deadline.** The instance is up within ``ray.local.start_timeout_s`` or the run stops with one
  error, before anything is written; SIGINT and SIGTERM end the wait at any time.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mtvbench.errors import MtvbenchError
from mtvbench.util.secrets import secret_variables

if TYPE_CHECKING:
    from mtvbench.config import LocalRaySettings

#: how long the keeper waits for the instance's processes to end after SIGTERM, then after SIGKILL
STOP_WAIT_S = (5.0, 3.0)
#: ``prctl`` option that makes a process the reaper of its orphaned descendants (Linux >= 3.4)
PR_SET_CHILD_SUBREAPER = 36


class LocalRayError(MtvbenchError):
    """The Ray instance for the run could not be started."""


def instance_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the instance's processes: ``environ`` without the variables that hold a key
    (Ray's own ``RAY_*`` settings stay) and without ``RAY_ADDRESS``."""
    drop = {k for k in secret_variables(environ) if not k.startswith("RAY_")} | {"RAY_ADDRESS"}
    return {k: v for k, v in environ.items() if k not in drop}


def free_port() -> int:
    """A TCP port that is free on this machine now."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


#: ``ray start`` flag of each port setting
_PORT_FLAGS = {"dashboard_port": "--dashboard-port", "node_manager_port": "--node-manager-port",
               "object_manager_port": "--object-manager-port", "min_worker_port": "--min-worker-port",
               "max_worker_port": "--max-worker-port", "client_port": "--ray-client-server-port",
               "dashboard_agent_port": "--dashboard-agent-listen-port", "metrics_port": "--metrics-export-port"}


def start_args(settings: LocalRaySettings, temp_dir: Path) -> list[str]:
    """The arguments of ``ray start`` for the instance."""
    args = ["--head", f"--port={settings.port or free_port()}", f"--temp-dir={temp_dir}", "--disable-usage-stats",
            f"--include-dashboard={'true' if settings.dashboard else 'false'}"]
    for field, flag in _PORT_FLAGS.items():
        value = getattr(settings, field)
        if value is not None:
            args.append(f"{flag}={value}")
    return args


def token_auth_default() -> None:
    """Token authentication for the instance, as ``ray.init()`` turns it on for the instance it starts
    (``RAY_AUTH_MODE=token`` in this process, the token made when missing), unless ``RAY_AUTH_MODE``
    is set."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication import authentication_token_setup as auth
    except ImportError:  # a Ray without token authentication
        return
    import logging

    log = logging.getLogger(auth.__name__)
    level = log.level
    log.setLevel(logging.ERROR)  # its notice that token authentication is on
    try:
        auth.enable_token_auth_by_default()
        auth.ensure_token_if_auth_enabled(None, create_token_if_missing=True)
    finally:
        log.setLevel(level)


# ------------------------------------------------------------------------------ the driver's side
class LocalRay:
    """The instance of one run: :meth:`start` gives its address, :meth:`stop` ends it (and so does the
    end of this process, whatever ends it)."""

    def __init__(self, settings: LocalRaySettings):
        self.settings = settings
        self.keeper: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def start(self) -> str:
        """Start the instance through its keeper process and return the address to join."""
        token_auth_default()
        # short: Ray's socket paths must fit in 107 bytes
        root = Path(tempfile.mkdtemp(prefix="mtvray-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the keeper's stderr, closed by stop()
        spec = {"start": start_args(self.settings, root), "root": str(root)}
        self.keeper = subprocess.Popen([sys.executable, "-m", __name__, json.dumps(spec)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=self._stderr, env=instance_env(os.environ),
                                       start_new_session=True, close_fds=True)
        try:
            said = self._answer(self.settings.start_timeout_s)
        except BaseException:
            self.stop()
            raise
        if "address" not in said:
            self.stop()
            raise LocalRayError(f"cannot start a Ray instance on this machine: {said.get('error') or 'no answer'}",
                                hint="see `ray start --head` for what Ray needs, or join a cluster with --ray-address")
        return str(said["address"])

    def _answer(self, timeout: float) -> dict[str, Any]:
        """The keeper's one line (JSON), waited for at most ``timeout`` seconds (signals are handled
        between short waits)."""
        assert self.keeper is not None and self.keeper.stdout is not None
        out = self.keeper.stdout
        end = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = end - time.monotonic()
            if left <= 0:
                raise LocalRayError(f"the Ray instance for the run did not come up within {timeout:g} s "
                                    "(ray.local.start_timeout_s)", hint="raise ray.local.start_timeout_s, or join "
                                                                        "a running cluster with --ray-address")
            ready, _, _ = select.select([out], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(out.fileno(), 65536)
                if not chunk:
                    return {"error": f"its keeper ended without an answer{self._keeper_said()}"}
                line += chunk
        return dict(json.loads(line.decode()))

    def _keeper_said(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        tail = [x for x in self._stderr.read().decode(errors="replace").strip().splitlines() if x.strip()]
        return f": {tail[-1].strip()}" if tail else ""

    def stop(self) -> None:
        """End the instance: the keeper ends every process of it (a few seconds at most)."""
        keeper, self.keeper = self.keeper, None
        if keeper is not None:
            with contextlib.suppress(OSError):
                assert keeper.stdin is not None
                keeper.stdin.close()  # the keeper's cue
            try:
                keeper.wait(timeout=sum(STOP_WAIT_S) + 20)
            except subprocess.TimeoutExpired:  # pragma: no cover - the keeper ends its processes in seconds
                keeper.kill()
                keeper.wait()
            if keeper.stdout is not None:
                keeper.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


# ------------------------------------------------------------------------------ the keeper
def _children_map() -> dict[int, list[int]]:
    """Parent pid -> the pids of its living (not zombie) children, from /proc."""
    out: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            out.setdefault(int(fields[1]), []).append(int(d))
    return out


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid``."""
    children, found, todo = _children_map(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def stop_descendants() -> None:
    """End every process below this one, by id: SIGTERM, then SIGKILL for what is left."""
    for sig, wait in zip((signal.SIGTERM, signal.SIGKILL), STOP_WAIT_S):
        end = time.monotonic() + wait
        while time.monotonic() < end:
            left = descendants(os.getpid())
            if not left:
                return
            for p in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, sig)
            time.sleep(0.1)
            _reap()


def _say(obj: dict[str, Any]) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


def _subreaper() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _wait_for_eof() -> None:
    """Until the driver's end of the pipe (stdin) closes; orphans adopted meanwhile are reaped."""
    while True:
        ready, _, _ = select.select([0], [], [], 1.0)
        _reap()
        if ready and not os.read(0, 4096):
            return


def keep(spec: dict[str, Any]) -> int:
    """The keeper: start the instance, say its address (or the error) on stdout, then keep it until the
    driver ends; end every process of it."""
    _subreaper()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    root = Path(spec["root"])
    try:
        cmd = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())", "start",
               *spec["start"]]
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        address = next(iter(sorted(root.glob("ray_current_cluster"))), None)
        if done.returncode != 0 or address is None:
            lines = [x.strip() for x in (done.stderr + done.stdout).splitlines() if x.strip()]
            _say({"error": lines[-1] if lines else f"ray start exited with {done.returncode}"})
            return 1
        _say({"address": address.read_text().strip()})
        _wait_for_eof()
        return 0
    finally:
        stop_descendants()
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["LocalRay", "LocalRayError", "descendants", "free_port", "instance_env", "keep", "start_args",
           "stop_descendants", "token_auth_default"]


if __name__ == "__main__":
    sys.exit(keep(json.loads(sys.argv[1])))

