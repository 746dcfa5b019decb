"""``run --executor ray`` keeps the cache-aware order (the one order of :mod:`mtvbench.dispatch`): against a
server that caches a frame prefix once a request with it was answered, each video's frames miss once."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray executor tests need the [ray] extra: pip install 'mtvbench[ray]'")
if not sys.platform.startswith("linux"):  # pragma: no cover
    pytest.skip("the test cluster is found and stopped through /proc (Linux)", allow_module_level=True)

from mtvbench.data.sample import materialize  # noqa: E402
from tests.ray.cluster import LocalCluster, cluster_fixture, ray_env  # noqa: E402
from tests.support.openai_server import LoopbackServer, ServerState, frame_prefix  # noqa: E402
from tests.support.run_helpers import model_requests, mtvbench_cmd  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    yield from cluster_fixture()


def test_the_ray_dispatcher_sends_each_videos_first_turn_alone(cluster: LocalCluster, tmp_path: Path) -> None:
    sample = materialize(tmp_path / "sample")

    def slow_answer(text: str, n: int) -> str:  # 0.3 s: turns sent together would all miss
        time.sleep(0.3)
        return f"Answer to: {text.rsplit('Current question: ', 1)[-1]} [frames={n}]"

    state = ServerState(prefix_cache=True, model_reply=slow_answer)
    with LoopbackServer(state) as srv:
        args = ["run", "--data", sample, "--model", "openai:test-model", "--judge", "openai:test-judge",
                "--model-base-url", srv.url, "--judge-base-url", srv.url, "--frames", 4, "--judge-runs", 1,
                "--cache-dir", tmp_path / "cache", "--quiet", "--context", "golden", "--concurrency", 16,
                "--executor", "ray", "--ray-address", cluster.address, "--out", tmp_path / "run"]
        done = subprocess.run(mtvbench_cmd(*[str(a) for a in args]), env=ray_env(), capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr
    model = model_requests(state)
    videos = {frame_prefix(r["body"]) for r in model}
    misses = sum(1 for judge, cached in state.cached if not judge and cached == 0)
    assert len(model) > 2 * len(videos) and misses == len(videos)
