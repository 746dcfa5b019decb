"""``--executor ray`` under faults (issue 21): joining an address where nothing answers, the Ray instance a
run starts for itself (no key in any of its processes, no dashboard, its ports, gone with a killed driver),
and, on a real two-raylet cluster, the local run's exit codes and messages, and killed replicas and nodes
that end in a finished run or a loud, resumable one (never a hang).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray", reason="the Ray executor tests need the [ray] extra: pip install 'mtvbench[ray]'")
if not sys.platform.startswith("linux"):  # pragma: no cover
    pytest.skip("the Ray processes are found through /proc (Linux)", allow_module_level=True)

from mtvbench.data.sample import materialize  # noqa: E402
from mtvbench.dispatch.raylocal import descendants  # noqa: E402
from tests.ray.cluster import LocalCluster, _running, cluster_fixture, free_port, ray_env  # noqa: E402
from tests.support.openai_server import Faults, LoopbackServer, ServerState  # noqa: E402
from tests.support.run_helpers import mtvbench_cmd, stored_ok  # noqa: E402

MODEL_KEY_ENV, MODEL_KEY = "MTVBENCH_FAULTS_MODEL_KEY", "sk-faults-model-0123456789abcdef"
JUDGE_KEY_ENV, JUDGE_KEY = "MTVBENCH_FAULTS_JUDGE_KEY", "sk-faults-judge-0123456789abcdef"
OPENAI_KEY = "sk-faults-openai-0123456789abcdef"
#: a hang shows as this many seconds without an exit (the issue's bound: 60 s from a kill to the exit)
EXIT_BOUND_S = 120


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize(tmp_path_factory.mktemp("sample") / "sample")


def _config(path: Path, ray: dict) -> Path:
    path.write_text(yaml.safe_dump({"ray": ray}))
    return path


def _args(sample: Path, url: str, tmp: Path, out: Path, *extra: object) -> list[str]:
    return [str(a) for a in ("run", "--data", sample, "--model", "openai:test-model", "--judge", "openai:test-judge",
                             "--model-base-url", url, "--judge-base-url", url, "--frames", 4, "--judge-runs", 1,
                             "--cache-dir", tmp / "cache", "--out", out, "--quiet", *extra)]


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mtvbench_cmd(*args), env=env or ray_env(), capture_output=True, text=True, timeout=600)


def _errors(stderr: str) -> list[str]:
    """The error message and its hint: the lines from the first ``error:`` on."""
    lines = [x for x in stderr.splitlines() if x.strip()]
    first = next((i for i, x in enumerate(lines) if x.startswith("error:")), len(lines))
    return lines[first:]


def _answers(run: Path) -> dict[str, str]:
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return {x["turn_id"]: x["answer"] for x in lines}


def _status(run: Path) -> str:
    return json.loads((run / "scores.json").read_text())["status"]


# ------------------------------------------------------------------------------ joining
@pytest.mark.parametrize("listening", [False, True], ids=["nothing-listening", "not-a-ray-cluster"])
def test_an_address_where_no_cluster_answers_is_exit_2_within_the_deadline(sample: Path, tmp_path: Path,
                                                                           listening: bool) -> None:
    cfg = _config(tmp_path / "ray.yaml", {"connect_timeout_s": 3})
    with LoopbackServer() as srv:
        address = srv.url.split("//")[1].split("/")[0] if listening else f"127.0.0.1:{free_port()}"
        out = tmp_path / "run"
        done = _run(_args(sample, srv.url, tmp_path, out, "--executor", "ray", "--ray-address", address,
                          "--config", cfg))
    assert done.returncode == 2, done.stderr
    errors = _errors(done.stderr)
    assert errors[0].startswith(f"error: cannot join the Ray cluster at {address}:"), done.stderr
    assert "within 3 s (ray.connect_timeout_s" in errors[0]
    assert "Traceback" not in done.stderr and not out.exists()


def _default_signals() -> None:
    """SIGINT as a terminal delivers it (a shell's background job would inherit it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_wait_for_a_cluster(sample: Path, tmp_path: Path, sig: signal.Signals) -> None:
    cfg = _config(tmp_path / "ray.yaml", {"connect_timeout_s": 600})
    out = tmp_path / "run"
    args = _args(sample, "http://127.0.0.1:9/v1", tmp_path, out, "--executor", "ray", "--ray-address",
                 f"127.0.0.1:{free_port()}", "--config", cfg)
    proc = subprocess.Popen(mtvbench_cmd(*args), env=ray_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_default_signals)
    try:
        time.sleep(8)  # the CLI is up and waiting for the cluster
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)  # not the 600 s of its deadline
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err  # SIGTERM ends it as SIGINT does
    assert "Traceback" not in err and not out.exists()


# ------------------------------------------------------------------------------ the instance a run starts
def _ray_processes(driver: int) -> dict[int, str]:
    """Every process below the driver (the keeper, Ray's daemons, its workers): pid -> command line."""
    out = {}
    for p in descendants(driver):
        try:
            out[p] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return out


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # ended meanwhile
        return b""


def test_the_instance_a_run_starts_holds_no_key_has_no_dashboard_its_ports_and_dies_with_the_driver(
        sample: Path, tmp_path: Path) -> None:
    gcs_port, agent_port = free_port(), free_port()
    cfg = _config(tmp_path / "ray.yaml", {"local": {"port": gcs_port, "dashboard_agent_port": agent_port}})
    env = ray_env(**{MODEL_KEY_ENV: MODEL_KEY, JUDGE_KEY_ENV: JUDGE_KEY, "OPENAI_API_KEY": OPENAI_KEY})
    run = tmp_path / "run"
    with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=0.5))) as srv:
        args = _args(sample, srv.url, tmp_path, run, "--executor", "ray", "--config", cfg, "--concurrency", 2,
                     "--model-api-key-env", MODEL_KEY_ENV, "--judge-api-key-env", JUDGE_KEY_ENV)
        proc = subprocess.Popen(mtvbench_cmd(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            end = time.monotonic() + 300
            while stored_ok(run) < 2 and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.2)
            assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
            procs = _ray_processes(proc.pid)
            environs = {p: _environ(p) for p in procs}
            os.kill(proc.pid, signal.SIGKILL)  # the driver dies without a word
            proc.communicate()
            end = time.monotonic() + 60
            while any(_running(p) for p in procs) and time.monotonic() < end:
                time.sleep(0.5)
            left = {p: procs[p] for p in procs if _running(p)}
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        model_auth = {a for r, a in zip(srv.state.requests, srv.state.auth_headers) if not r["judge"]}
    replicas = [p for p, cmd in procs.items() if cmd.startswith("ray::Replica")]
    assert replicas and any("gcs_server" in cmd for cmd in procs.values()), procs
    assert model_auth == {f"Bearer {MODEL_KEY}"}  # the replicas had the model's key, in memory
    for p, environ in environs.items():  # ... and no process of the instance has any key in its environment
        for key in (MODEL_KEY, JUDGE_KEY, OPENAI_KEY):
            assert key.encode() not in environ, (key, procs[p])
    dashboards = [cmd for cmd in procs.values() if "dashboard/dashboard.py" in cmd]  # Ray's head process for it
    assert all("--disable-frontend" in cmd for cmd in dashboards), dashboards  # ... without its web server
    assert any(f"--gcs_server_port={gcs_port}" in cmd for cmd in procs.values()), procs  # the ports asked for
    assert any(f"={agent_port}" in cmd for cmd in procs.values()), procs
    assert not left, left  # nothing of it outlives its driver


def test_sigterm_mid_run_closes_the_run_and_ends_the_instance_it_started(sample: Path, tmp_path: Path) -> None:
    """SIGTERM takes SIGINT's path on the Ray executor too: the replicas closed, the instance the run started
    ended (every process below the driver gone), the score files written, exit 143."""
    run = tmp_path / "run"
    with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=0.5))) as srv:
        args = _args(sample, srv.url, tmp_path, run, "--executor", "ray", "--concurrency", 2)
        proc = subprocess.Popen(mtvbench_cmd(*args), env=ray_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            end = time.monotonic() + 300
            while stored_ok(run) < 2 and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.2)
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            procs = _ray_processes(proc.pid)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=EXIT_BOUND_S)
            end = time.monotonic() + 60
            while any(_running(p) for p in procs) and time.monotonic() < end:
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, err[-3000:]
    assert "terminated: everything finished so far is stored" in err and "Traceback" not in err
    assert any(cmd.startswith("ray::Replica") for cmd in procs.values()), procs
    assert not [procs[p] for p in procs if _running(p)]  # nothing of the instance outlives the run
    assert _status(run) == "INCOMPLETE"  # the score files are written, as at the run's end


# ------------------------------------------------------------------------------ on a two-raylet cluster
@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    yield from cluster_fixture()


def test_a_key_refused_by_every_call_is_the_local_exit_and_message(cluster: LocalCluster, sample: Path,
                                                                   tmp_path: Path) -> None:
    env = ray_env(**{MODEL_KEY_ENV: MODEL_KEY})
    with LoopbackServer(ServerState(unauthorized=True)) as srv:
        extra = ["--model-api-key-env", MODEL_KEY_ENV, "--concurrency", 2, "--model-option", "max_retries=0"]
        local = _run(_args(sample, srv.url, tmp_path, tmp_path / "local", *extra), env)
        ray = _run(_args(sample, srv.url, tmp_path, tmp_path / "ray", *extra, "--executor", "ray",
                         "--ray-address", cluster.address), env)
    assert local.returncode == 2, local.stderr
    assert ray.returncode == local.returncode, ray.stderr
    assert "check its URL, key and model name" in "\n".join(_errors(local.stderr))
    assert _errors(ray.stderr) == _errors(local.stderr)
    assert MODEL_KEY not in ray.stderr and "Traceback" not in ray.stderr


def _kill_during(cluster: LocalCluster, args: list[str], run: Path, kill_at: list[int], kill: str
                 ) -> tuple[int, str, list[float]]:
    """Run ``args``; each time ``kill_at[i]`` answers are stored, SIGKILL a replica (``kill='replica'``) or the
    second node's raylet; the exit code, stderr and the seconds from the last kill to the exit."""
    proc = subprocess.Popen(mtvbench_cmd(*args), env=ray_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    killed_at = []
    try:
        for at in kill_at:
            victims: list[int] = []
            while proc.poll() is None and not victims:
                time.sleep(0.05)
                if stored_ok(run) >= at:
                    victims = cluster.replica_pids() if kill == "replica" else [cluster.second_raylet()]
            if not victims:
                break
            os.kill(victims[0], signal.SIGKILL)
            killed_at.append(time.monotonic())
        _, err = proc.communicate(timeout=EXIT_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err, killed_at


def _finished_or_resumable(sample: Path, srv: LoopbackServer, tmp_path: Path, run: Path, code: int, err: str,
                           cluster: LocalCluster) -> None:
    """A run that lost workers finished, or failed loudly and its resume (on the cluster) equals a local run."""
    assert code in (0, 3), err
    assert "Traceback" not in err
    if code == 3:
        assert _status(run) == "INCOMPLETE" and _errors(err), err
        again = _run(_args(sample, srv.url, tmp_path, run, "--executor", "ray", "--ray-address", cluster.address))
        assert again.returncode == 0, again.stderr
    local = _run(_args(sample, srv.url, tmp_path, tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    assert _status(run) == "complete" and _answers(run) == _answers(tmp_path / "local")


def test_replicas_killed_at_several_moments_end_in_a_finished_or_resumable_run(cluster: LocalCluster, sample: Path,
                                                                               tmp_path: Path) -> None:
    run = tmp_path / "ray"
    cfg = _config(tmp_path / "ray.yaml", {"stall_s": 30})
    with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=0.2))) as srv:
        args = _args(sample, srv.url, tmp_path, run, "--concurrency", 2, "--executor", "ray", "--ray-address",
                     cluster.address, "--config", cfg)
        code, err, kills = _kill_during(cluster, args, run, [0, 12, 30], "replica")  # at the start, mid-run, late
        assert len(kills) >= 2, err
        _finished_or_resumable(sample, srv, tmp_path, run, code, err, cluster)


def test_a_killed_raylet_ends_in_a_finished_or_resumable_run(cluster: LocalCluster, sample: Path,
                                                             tmp_path: Path) -> None:
    run = tmp_path / "ray"
    cfg = _config(tmp_path / "ray.yaml", {"stall_s": 30})
    try:
        with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=0.2))) as srv:
            args = _args(sample, srv.url, tmp_path, run, "--concurrency", 2, "--executor", "ray", "--ray-address",
                         cluster.address, "--config", cfg)
            code, err, kills = _kill_during(cluster, args, run, [5], "raylet")
            assert kills, err
            _finished_or_resumable(sample, srv, tmp_path, run, code, err, cluster)
    finally:
        cluster.add_node()  # the cluster has its two nodes again for the next test


def test_a_stall_is_reported_with_what_waits_and_ends_the_run_incomplete(cluster: LocalCluster, sample: Path,
                                                                          tmp_path: Path) -> None:
    run = tmp_path / "ray"
    cfg = _config(tmp_path / "ray.yaml", {"stall_s": 4})
    with LoopbackServer(ServerState(faults=Faults(slow_every=1, slow_s=60))) as srv:  # no answer comes back
        done = _run(_args(sample, srv.url, tmp_path, run, "--concurrency", 2, "--model-option", "timeout_s=120",
                          "--executor", "ray", "--ray-address", cluster.address, "--config", cfg))
    assert done.returncode == 3, done.stderr
    assert "nothing came back from the Ray cluster for" in done.stderr, done.stderr
    assert "call(s) in flight" in done.stderr and "(ray.stall_s=4)" in done.stderr
    assert _status(run) == "INCOMPLETE" and "Traceback" not in done.stderr
