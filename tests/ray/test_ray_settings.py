"""The Ray executor's settings and key routing, and the missing extra: no cluster, no ray needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtvbench.config import ConfigError, build_config
from mtvbench.dispatch.ray import RemoteEngine, driver_model, replica_options
from mtvbench.models.settings import BackendOptions
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
