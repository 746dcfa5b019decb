"""``run --executor ray`` on a real two-node Ray cluster (two raylets on 127.0.0.1, CPU only).

The bundled sample is evaluated with an API model on the loopback server and with the tiny local
``hf:`` model, once by the local executor and once on the cluster: the stored answers and the
scores are equal. A replica killed in the middle of a run is replaced, the run completes, and no
turn that was stored is asked again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray", reason="the Ray executor tests need the [ray] extra: pip install 'mtvbench[ray]'")
if not sys.platform.startswith("linux"):  # pragma: no cover
    pytest.skip("the test cluster is found and stopped through /proc (Linux)", allow_module_level=True)

from mtvbench.data.sample import materialize  # noqa: E402
from tests.ray.cluster import LocalCluster, cluster_fixture, ray_env  # noqa: E402
from tests.support.extras import require  # noqa: E402
from tests.support.openai_server import Faults, LoopbackServer, ServerState, always  # noqa: E402
from tests.support.run_helpers import mtvbench_cmd, stored_ok  # noqa: E402

KEY_ENV = "MTVBENCH_RAY_TEST_KEY"
KEY = "sk-raytest-0123456789abcdef"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    yield from cluster_fixture()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize(tmp_path_factory.mktemp("sample") / "sample")


def _run(*args: object, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mtvbench_cmd(*[str(a) for a in args]), env=env or ray_env(), capture_output=True,
                          text=True, timeout=timeout)


def _answers(run: Path) -> dict[str, str]:
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return {x["turn_id"]: x["answer"] for x in lines}


def _scores(run: Path) -> dict:
    s = json.loads((run / "scores.json").read_text())
    return {k: s[k] for k in ("status", "overall", "tasks", "counts")}


def _model_calls_per_turn(run: Path) -> Counter[str]:
    with sqlite3.connect(run / "store.sqlite") as c:
        return Counter(t for (t,) in c.execute("SELECT turn_id FROM calls WHERE role='model'"))


def _api_args(sample: Path, url: str, cache: Path) -> list[object]:
    return ["run", "--data", sample, "--model", "openai:test-model", "--judge", "openai:test-judge",
            "--model-base-url", url, "--judge-base-url", url, "--frames", 4, "--judge-runs", 1,
            "--cache-dir", cache, "--quiet"]


def test_api_model_on_two_nodes_equals_local_and_key_stays_in_memory(cluster: LocalCluster, sample: Path,
                                                                      tmp_path: Path) -> None:
    env = ray_env(**{KEY_ENV: KEY})  # the driver's environment only: the cluster was started without it
    with LoopbackServer() as srv:
        args = [*_api_args(sample, srv.url, tmp_path / "cache"), "--context", "self", "--model-api-key-env", KEY_ENV]
        local = _run(*args, "--out", tmp_path / "local", env=env)
        assert local.returncode == 0, local.stderr
        n_local = len(srv.state.requests)
        ray = _run(*args, "--out", tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address, env=env)
        assert ray.returncode == 0, ray.stderr
        requests = srv.state.requests[n_local:]
        auth = srv.state.auth_headers[n_local:]
    assert "2 model replica(s) of openai:test-model on 2 node(s)" in ray.stderr
    # self context: every round asked in order with the replica's own answers, same prompts, same scores
    assert _answers(tmp_path / "ray") == _answers(tmp_path / "local")
    assert _scores(tmp_path / "ray") == _scores(tmp_path / "local")
    assert _scores(tmp_path / "ray")["status"] == "complete"
    calls = _model_calls_per_turn(tmp_path / "ray")
    assert len(calls) == 72 and set(calls.values()) == {1}
    # the model's key reached the replicas (named for the model's URL), in memory only
    model_auth = [a for r, a in zip(requests, auth) if not r["judge"]]
    assert len(model_auth) == 72 and set(model_auth) == {f"Bearer {KEY}"}
    for root in (cluster.root, tmp_path / "ray"):
        for f in root.rglob("*"):
            if f.is_file() and not f.is_socket():
                assert KEY.encode() not in f.read_bytes(), f


def _frames_per_turn(run: Path) -> dict[str, list[int]]:
    lines = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    return {x["turn_id"]: x["inputs"]["frame_indices"] for x in lines}


def test_clip_sampling_on_the_cluster_sends_each_turn_the_frames_the_local_run_sends(cluster: LocalCluster,
                                                                                     sample: Path,
                                                                                     tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        args = [*_api_args(sample, srv.url, tmp_path / "cache"), "--frames", 16, "--context", "self",
                "--sampling", "clip", "--frame-timestamps", "on"]
        local = _run(*args, "--out", tmp_path / "local")
        assert local.returncode == 0, local.stderr
        n_local = len(srv.state.requests)
        ray = _run(*args, "--out", tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address,
                   "--cache-dir", tmp_path / "ray-cache")  # a cache of its own: the cluster decodes the union
        assert ray.returncode == 0, ray.stderr
        requests = srv.state.requests[n_local:]
    frames = _frames_per_turn(tmp_path / "ray")
    assert frames == _frames_per_turn(tmp_path / "local") and len(frames) == 72
    assert all(len(f) == 16 for f in frames.values())
    assert len({tuple(f) for f in frames.values()}) > 4  # the turns' own frames, not one set per video
    # what each turn's request carried (its frames and their time labels) is what the local run sent
    sent = [r["body"]["messages"][-1]["content"] for r in requests if not r["judge"]]
    local_sent = [r["body"]["messages"][-1]["content"] for r in srv.state.requests[:n_local] if not r["judge"]]
    key = lambda c: json.dumps(c, sort_keys=True)  # noqa: E731
    assert sorted(map(key, sent)) == sorted(map(key, local_sent))
    assert _answers(tmp_path / "ray") == _answers(tmp_path / "local")
    assert _scores(tmp_path / "ray") == _scores(tmp_path / "local")


def test_tiny_hf_model_on_two_replicas_equals_local(cluster: LocalCluster, sample: Path, tmp_path: Path) -> None:
    require("hf", "torch", "transformers")
    from mtvbench.models.tiny import build_tiny_llava

    model = build_tiny_llava(tmp_path / "llava")  # on storage both nodes see, as a checkpoint must be
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"model_settings": {"max_tokens": 4, "extra": {"batch_size": 4}}}))
    args = ["run", "--data", sample, "--model", f"hf:{model}", "--judge", "offline", "--frames", 3,
            "--judge-runs", 1, "--cache-dir", tmp_path / "cache", "--config", cfg, "--quiet"]
    local = _run(*args, "--out", tmp_path / "local")
    assert local.returncode == 0, local.stderr
    ray = _run(*args, "--out", tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address)
    assert ray.returncode == 0, ray.stderr
    assert f"2 model replica(s) of hf:{model} on 2 node(s)" in ray.stderr
    answers = _answers(tmp_path / "ray")
    assert len(answers) == 39 and answers == _answers(tmp_path / "local")  # greedy: the same model, same answers
    assert _scores(tmp_path / "ray") == _scores(tmp_path / "local")


def _stored_prompts(run: Path) -> dict[str, str]:
    with sqlite3.connect(run / "store.sqlite", timeout=5) as c:
        return dict(c.execute("SELECT turn_id, prompt FROM responses"))


def test_killed_replica_is_replaced_and_nothing_stored_is_asked_again(cluster: LocalCluster, sample: Path,
                                                                      tmp_path: Path) -> None:
    run = tmp_path / "ray"
    state = ServerState(faults=Faults(slow_every=1, slow_s=0.3))  # every call takes a while: the kill lands mid-run
    with LoopbackServer(state) as srv:
        args = [*_api_args(sample, srv.url, tmp_path / "cache"), "--concurrency", 2, "--out", run,
                "--executor", "ray", "--ray-address", cluster.address]
        proc = subprocess.Popen(mtvbench_cmd(*[str(a) for a in args]), env=ray_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            end = time.monotonic() + 120
            while stored_ok(run) < 3 and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            victims = cluster.replica_pids()
            assert proc.poll() is None and victims, "the run ended before a replica could be killed"
            os.kill(victims[0], signal.SIGKILL)
            before = _stored_prompts(run)
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        requests = [r for r in state.requests if not r["judge"]]
    assert proc.returncode == 0, err
    assert "its model replica was lost" in err
    s = _scores(run)
    assert s["status"] == "complete" and s["counts"]["missing_responses"] == 0
    # every turn stored once; nothing stored before the kill was asked again
    calls = _model_calls_per_turn(run)
    assert len(calls) == 39 and set(calls.values()) == {1}
    asked = Counter(r["text"] for r in requests)
    assert before and all(asked[p] == 1 for p in before.values())
    # only the calls in flight on the dead replica (at most its share of --concurrency 2) were asked twice
    assert sum(asked.values()) - len(asked) <= 1


def test_a_failing_endpoint_opens_the_breaker_across_replicas(cluster: LocalCluster, sample: Path,
                                                              tmp_path: Path) -> None:
    state = ServerState(faults=Faults(plan=always("server_error")))  # every model call fails (the judge never runs)
    with LoopbackServer(state) as srv:
        ray = _run(*_api_args(sample, srv.url, tmp_path / "cache"), "--out", tmp_path / "ray", "--concurrency", 2,
                   "--model-option", "max_retries=0", "--model-option", "breaker_threshold=4",
                   "--executor", "ray", "--ray-address", cluster.address)
        sent = [r for r in state.requests if not r["judge"]]
    assert ray.returncode == 3, ray.stderr
    assert "circuit breaker" in ray.stderr and "Traceback" not in ray.stderr
    # the run stopped asking long before the 39 turns: 4 failures in a row, plus the calls already in flight
    assert 4 <= len(sent) <= 4 + 2
    s = json.loads((tmp_path / "ray" / "scores.json").read_text())
    assert s["status"] == "INCOMPLETE"


def test_a_replica_that_cannot_start_is_one_error_and_leaves_no_run_directory(cluster: LocalCluster, sample: Path,
                                                                             tmp_path: Path) -> None:
    require("hf", "torch", "transformers")
    missing = tmp_path / "no-such-checkpoint"
    out = tmp_path / "run"
    ray = _run("run", "--data", sample, "--model", f"hf:{missing}", "--judge", "offline", "--out", out, "--quiet",
               "--executor", "ray", "--ray-address", cluster.address)
    assert ray.returncode == 2, ray.stderr
    assert f"a model replica of hf:{missing} could not start on the cluster" in ray.stderr
    assert "Traceback" not in ray.stderr and not out.exists()
