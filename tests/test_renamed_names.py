"""Names renamed so that each word means one thing (issue 17 item 8; the glossary in docs/architecture.md) keep
working for one release: the old module or keyword gives the same object, with a DeprecationWarning that names
the new spelling."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mtvbench.construct.stages import STAGES, register_stage
from mtvbench.registry import RegistryError
from tests.support.run_helpers import cli

OLD_WS = Path(__file__).resolve().parent / "fixtures" / "workspaces" / "main-af4e2a6-offline"

def test_no_stage_may_take_the_stored_name_of_a_renamed_one() -> None:
    with pytest.raises(RegistryError, match="'score': the artifacts of the built-in stage 'suitability'"):
        register_stage("score", STAGES.get("suitability"))


def _cli_old(*args: object) -> str:
    res = cli(*args)
    out = " ".join(res.output.split())
    assert "No such option" not in out, out
    return out


def test_renamed_flags_of_the_hand_written_commands_still_work_with_a_warning(tmp_path: Path) -> None:
    out = _cli_old("checklists", "--data", tmp_path / "none", "--generator", "openai:x", "--base-url",
                   "http://127.0.0.1:9/v1", "--api-key-env", "MTV_NO_SUCH_KEY_VAR", "--out", tmp_path / "o")
    assert "--generator is now --model" in out and "--base-url is now --model-base-url" in out
    assert "--api-key-env is now --model-api-key-env" in out
    assert "--model-api-key-env: environment variable MTV_NO_SUCH_KEY_VAR is not set" in out
    out = _cli_old("cache", "clear", "--no-frames", "--cache-dir", tmp_path / "f", "--scene-cache", tmp_path / "s",
                   "--dry-run")
    assert "--frames/--no-frames is now --keep-frames" in out and "scenes: would remove 0 entries" in out
    assert "frames: would remove" not in out
    out = _cli_old("models", "--json")
    assert "--json is now --format json" in out and '"name": "qwen3-vl-8b-instruct"' in cli("models", "--json").output
    assert "--to is now --out" in _cli_old("download", "--to", tmp_path / "d", "--offline")
    (tmp_path / "file").write_text("x")
    assert "--workdir is now --out" in _cli_old("demo", "--workdir", tmp_path / "file", "--quiet")
    assert "--cache-dir is now --scene-cache" in _cli_old("scenes", tmp_path / "none", "--cache-dir", tmp_path / "c")


def test_renamed_review_flags_still_work_with_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="the review web app needs mtvbench[review]")
    ws = shutil.copytree(OLD_WS / "ws", tmp_path / "ws")
    out = _cli_old("review", "add-user", ws, "lead", "--role", "senior")
    assert "--role is now --job" in out and "#token=" in out and "for lead (senior)" in out
    out = _cli_old("review", "serve", ws, "--per-task", "2")
    assert "--per-task is now --sample-per-task" in out
    assert "--sample-per-task and --seed choose the raters' sample of a run directory" in out
