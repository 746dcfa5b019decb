"""Shared helpers of the run tests: the settings of a run against the loopback server, the same as
a config file for the command line, and readers of what a run directory holds."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from click.testing import Result
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.run.settings import build_config
from tests.support.openai_server import ServerState

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cfg_for(data: Path, out: Path, url: str, cache: Path, **kw: Any):
    values = {"data": data, "model": "openai:test-model", "judge": "openai:test-judge", "out": out,
              "frames": 4, "judge_runs": 2, "concurrency": 4, "cache_dir": cache, "bootstrap": 200,
              "model_settings": {"base_url": url, "extra": {"retry_base_s": 0.01}, "timeout_s": 20},
              "judge_settings": {"base_url": url, "extra": {"retry_base_s": 0.01}, "timeout_s": 20}}
    values.update(kw)
    return build_config(values)


def model_requests(state: ServerState) -> list[dict[str, Any]]:
    return [r for r in state.requests if not r["judge"]]


def scores_of(run: Path) -> dict[str, Any]:
    return json.loads((run / "scores.json").read_text())


__all__ = ["SRC", "cfg_for", "cli", "cli_run", "judge_requests", "model_requests", "mtvbench_cmd", "run_cli_process",
           "scores_of", "settings", "stored_ok", "subprocess_env", "write_settings"]


def settings(data: Path, out: Path, url: str, cache: Path, **kw: Any) -> dict[str, Any]:
    """The settings of ``cfg_for`` as plain YAML-able values."""
    return json.loads(cfg_for(data, out, url, cache, **kw).model_dump_json(exclude_defaults=True))


def write_settings(path: Path, values: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(values))
    return path


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def cli_run(values: dict[str, Any], *args: str, config: Path | None = None) -> Result:
    """``mtvbench run --config <values> --quiet ARGS``."""
    cfg = write_settings(config or Path(values["out"]).parent / f"{Path(values['out']).name}.yaml", values)
    return cli("run", "--config", str(cfg), "--quiet", *args)


def judge_requests(state: Any) -> list[dict[str, Any]]:
    return [r for r in state.requests if r["judge"]]


def stored_ok(run: Path) -> int:
    """Responses stored with outcome ok (0 while the store is being created)."""
    try:
        with sqlite3.connect(run / "store.sqlite", timeout=5) as c:
            return c.execute("SELECT COUNT(*) FROM responses WHERE outcome='ok'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def subprocess_env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def mtvbench_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "mtvbench", *[str(a) for a in args]]


def run_cli_process(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mtvbench_cmd(*args), env=subprocess_env(), capture_output=True, text=True,
                          timeout=timeout, **kw)
