"""``build all --executor ray`` on a real two-node Ray cluster: the same dataset as a local build,
every reply committed by the driver to the one call journal, and a rerun asks nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray executor tests need the [ray] extra: pip install 'mtvbench[ray]'")
pytest.importorskip("scenedetect", reason="build split needs the [build] extra")
pytest.importorskip("cv2", reason="build keyframes needs the [build] extra")

from tests.ray.cluster import LocalCluster, cluster_fixture, ray_env  # noqa: E402
from tests.support.build_replies import Scripted  # noqa: E402
from tests.support.openai_server import LoopbackServer, ServerState  # noqa: E402
from tests.support.run_helpers import mtvbench_cmd  # noqa: E402
from tests.support.scene_videos import BLUE, RED, Scene, three_scene_video, write_scenes  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    yield from cluster_fixture()


def _videos(root: Path) -> Path:
    three_scene_video(root / "Sports" / "match.mp4")
    write_scenes(root / "Movie" / "short.mp4", [Scene(40, hue=20, obj=("disc", BLUE)),
                                                Scene(40, hue=120, sat=140, val=(80, 170), obj=("square", RED))])
    return root


def _build(ws: Path, videos: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    config = ws.parent / f"{ws.name}.json"
    config.write_text(json.dumps({"crossscene": {"theme_threshold": None}}))
    args = ["build", "all", "--workspace", ws, "--videos", videos, "--model", "openai:builder", "--model-base-url", url,
            "--detector", "tests.support.detector:make_detector",
            "--config", config, *extra]
    return subprocess.run(mtvbench_cmd(*[str(a) for a in args]), env=ray_env(), capture_output=True, text=True,
                          timeout=600)


def _dataset(ws: Path) -> dict[str, str]:
    out = ws / "dataset"
    return {str(f.relative_to(out)): f.read_text() for sub in ("mtqa", "checklist")
            for f in sorted((out / sub).glob("*"))}


def _journal(ws: Path) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(ws / "calls.sqlite") as c:
        return sorted(c.execute("SELECT video, stage, key, text FROM replies WHERE superseded=0"))


def test_build_all_on_the_cluster_equals_a_local_build(cluster: LocalCluster, tmp_path: Path) -> None:
    videos = _videos(tmp_path / "raw")
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        local = _build(tmp_path / "local", videos, srv.url)
        assert local.returncode == 0, local.stdout + local.stderr
        n_local = len(srv.state.requests)
        ray = _build(tmp_path / "ray", videos, srv.url, "--executor", "ray", "--ray-address", cluster.address)
        assert ray.returncode == 0, ray.stdout + ray.stderr
        n_ray = len(srv.state.requests) - n_local
        again = _build(tmp_path / "ray", videos, srv.url, "--executor", "ray", "--ray-address", cluster.address)
        assert again.returncode == 0, again.stdout + again.stderr
        n_again = len(srv.state.requests) - n_local - n_ray
    dataset = _dataset(tmp_path / "ray")
    assert any(k.startswith("mtqa/") for k in dataset) and any(k.startswith("checklist/") for k in dataset)
    assert dataset == _dataset(tmp_path / "local")
    # every reply was committed once, by the driver, to the one journal; the same requests as locally
    assert n_ray == n_local > 0
    assert _journal(tmp_path / "ray") == _journal(tmp_path / "local")
    assert "on 2 node(s), 4 split/key-frame task(s), 2 detection call(s)" in ray.stderr
    assert n_again == 0  # a rerun asks nothing: every stage is current
    assert (tmp_path / "ray" / "videos").is_dir() and any((tmp_path / "ray" / "videos").rglob("crops/*"))


def test_a_detector_the_nodes_cannot_import_is_one_line_exit_2(cluster: LocalCluster, tmp_path: Path) -> None:
    videos = _videos(tmp_path / "raw")
    driver_only = tmp_path / "driver_only"  # on the driver's path, not on the nodes'
    driver_only.mkdir()
    (driver_only / "driver_only_detector.py").write_text(
        "from tests.support.detector import make_detector\n\n\ndef make():\n    return make_detector()\n")
    env = ray_env()
    env["PYTHONPATH"] = os.pathsep.join([str(driver_only), env["PYTHONPATH"]])
    ws = tmp_path / "ws"
    with LoopbackServer(ServerState(model_reply=Scripted())) as srv:
        args = ["build", "all", "--workspace", ws, "--videos", videos, "--model", "openai:builder", "--model-base-url",
                srv.url, "--detector", "driver_only_detector:make", "--executor", "ray",
                "--ray-address", cluster.address]
        done = subprocess.run(mtvbench_cmd(*[str(a) for a in args]), env=env, capture_output=True, text=True,
                              timeout=600)
        asked = len(srv.state.requests)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "cannot import driver_only_detector" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert asked == 0 and not (ws / "dataset").exists()  # stopped before any stage ran
