"""The Ray executor's settings and key routing, and the missing extra: no cluster, no ray needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtvbench.config import ConfigError
from mtvbench.dispatch.ray import RemoteEngine, driver_model, replica_options
from mtvbench.models.settings import BackendOptions
from mtvbench.run.settings import build_config
from tests.support.run_helpers import cli


def test_without_ray_the_executor_is_one_error_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mtvbench.data.sample import materialize

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if it were not installed
    data = materialize(tmp_path / "sample")
    out = tmp_path / "run"
    result = cli("run", "--data", data, "--model", "oracle", "--judge", "offline", "--out", out, "--quiet",
                 "--executor", "ray")
    assert result.exit_code == 2, result.output
    assert "--executor ray needs the optional dependencies of mtvbench[ray]" in result.output
    assert "pip install 'mtvbench[ray]'" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_ray_settings_are_strict(tmp_path: Path) -> None:
    base = {"data": tmp_path, "model": "oracle", "judge": "offline", "out": tmp_path / "r"}
    cfg = build_config({**base, "executor": "ray", "ray_address": "auto", "ray": {"num_gpus": 1, "replicas": 2}})
    assert (cfg.executor, cfg.ray_address, cfg.ray.num_gpus, cfg.ray.replicas) == ("ray", "auto", 1, 2)
    assert "executor" not in cfg.identity() and "ray" not in cfg.identity()  # where it runs never changes a result
    with pytest.raises(ConfigError) as e:
        build_config({**base, "executor": "slurm", "ray": {"num_gpu": 1, "max_retries": -1}})
    msg = str(e.value)
    assert "executor" in msg and "unknown setting 'ray.num_gpu'" in msg and "did you mean 'ray.num_gpus'" in msg
    assert "ray.max_retries" in msg


def test_a_replica_sends_the_key_a_local_run_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    monkeypatch.setenv("MY_SERVER_KEY", "server-key-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    # OpenAI's own URL: OPENAI_API_KEY, by name and value
    opts, env = replica_options("openai:gpt-4o", BackendOptions())
    assert env == {"OPENAI_API_KEY": "sk-openai-0123456789"} and opts.api_key_env == "OPENAI_API_KEY"
    assert opts.base_url == "https://api.openai.com/v1"
    # a custom URL without a variable named for it: no key at all (the placeholder), whatever the node holds
    opts, env = replica_options("openai:m", BackendOptions(base_url="http://127.0.0.1:8000/v1"))
    assert env == {} and opts.api_key_env is None and opts.base_url == "http://127.0.0.1:8000/v1"
    # the variable named for the role: only that one
    opts, env = replica_options("openai:m", BackendOptions(base_url="http://h/v1", api_key_env="MY_SERVER_KEY"))
    assert env == {"MY_SERVER_KEY": "server-key-0123456789"}
    # local engines and baselines carry no key
    assert replica_options("hf:/ckpt", BackendOptions()) == (BackendOptions(), {})


def test_the_driver_never_loads_a_local_engine() -> None:
    model = driver_model("hf:/nowhere/checkpoint", BackendOptions())
    assert isinstance(model, RemoteEngine) and model.name == "hf:/nowhere/checkpoint" and model.needs_frames
    assert driver_model("oracle", BackendOptions()).name == "oracle"


def test_the_local_instance_has_no_dashboard_unless_asked_and_the_ports_set(tmp_path: Path) -> None:
    from mtvbench.config import LocalRaySettings
    from mtvbench.dispatch.raylocal import start_args

    args = start_args(LocalRaySettings(), tmp_path)
    assert "--include-dashboard=false" in args and "--disable-usage-stats" in args
    assert sum(a.startswith("--port=") for a in args) == 1  # a free port of its own, never Ray's 6379 by default
    args = start_args(LocalRaySettings(dashboard=True, dashboard_port=8300, port=7000, node_manager_port=7001,
                                       object_manager_port=7002, min_worker_port=7100, max_worker_port=7199,
                                       client_port=7003, dashboard_agent_port=7004, metrics_port=7005), tmp_path)
    for flag in ("--include-dashboard=true", "--dashboard-port=8300", "--port=7000", "--node-manager-port=7001",
                 "--object-manager-port=7002", "--min-worker-port=7100", "--max-worker-port=7199",
                 "--ray-client-server-port=7003", "--dashboard-agent-listen-port=7004", "--metrics-export-port=7005"):
        assert flag in args
    base = {"data": tmp_path, "model": "oracle", "judge": "offline", "out": tmp_path / "r"}
    with pytest.raises(ConfigError) as e:
        build_config({**base, "ray": {"connect_timeout_s": 0, "local": {"port": 70000, "min_worker_port": 9,
                                                                        "max_worker_port": 8}}})
    msg = str(e.value)
    assert "ray.connect_timeout_s" in msg and "ray.local.port" in msg


def test_no_key_reaches_the_environment_of_the_local_instance() -> None:
    from mtvbench.dispatch.raylocal import instance_env
    from mtvbench.util.secrets import register_secret

    register_secret("value-read-by-a-backend-0123")
    env = instance_env({"OPENAI_API_KEY": "sk-1", "MY_TOKEN": "t", "HF_SECRET": "s", "PATH": "/bin",
                        "ODD_NAME": "value-read-by-a-backend-0123", "RAY_ADDRESS": "h:1", "RAY_AUTH_MODE": "token"})
    assert env == {"PATH": "/bin", "RAY_AUTH_MODE": "token"}
