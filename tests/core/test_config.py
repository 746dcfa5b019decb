from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app, parse_options
from mtvbench.config import ConfigError, build_config


def test_preset_supplies_backend_frames_and_generation(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "model": "internvl3.5-8b-think", "out": tmp_path / "r"})
    assert cfg.model == "internvl3.5-8b-think"
    assert cfg.backend_spec.startswith("hf:") and "InternVL3_5-8B" in cfg.backend_spec
    assert cfg.frame_size == (448, 448) and cfg.frames == 128
    assert cfg.model_settings.system  # the InternVL3.5 Think system prompt
    assert cfg.identity()["model"] == cfg.backend_spec


def test_explicit_settings_win_over_the_preset(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "model": "qwen3-vl-8b-instruct", "out": tmp_path / "r", "frames": 32,
                        "model_settings": {"temperature": 0.0, "extra": {"batch_size": 2}}})
    assert cfg.frames == 32 and cfg.max_side == 720
    assert cfg.model_settings.temperature == 0.0
    assert cfg.model_settings.extra["batch_size"] == 2


def test_plain_specs_pass_through_and_typos_are_clear(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "model": "openai:gpt-4o", "out": tmp_path / "r"})
    assert cfg.backend_spec == "openai:gpt-4o" and cfg.frames == 128 and cfg.frame_size is None
    with pytest.raises(ConfigError, match="did you mean"):
        build_config({"data": tmp_path, "model": "qwen3-vl-8b-instrct", "out": tmp_path / "r"})


def test_options_parse_yaml_values() -> None:
    assert parse_options(["input=upload", "batch_size=8", "x=[1, 2]"]) == {"input": "upload", "batch_size": 8,
                                                                          "x": [1, 2]}
    with pytest.raises(ConfigError):
        parse_options(["novalue"])


def test_bad_config_file_names_file_and_field(tmp_path: Path) -> None:
    cfgfile = tmp_path / "run.yaml"
    cfgfile.write_text("data: /nowhere\nmodel: oracle\njudge: offline\nout: /tmp/x\nframes: -3\n")
    res = CliRunner().invoke(app, ["run", "--config", str(cfgfile)])
    assert res.exit_code == 2
    assert "run.yaml" in res.output and "frames" in res.output and "Traceback" not in res.output
