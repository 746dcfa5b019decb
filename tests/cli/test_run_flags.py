"""``mtvbench run``'s flags come from the run settings: a new setting is one field with a description."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.config import RunConfig
from mtvbench.run import flags as rf


def test_every_described_setting_is_a_flag_with_its_help() -> None:
    flags = {f.name: f for f in rf.run_flags()}
    described = [n for n, f in RunConfig.model_fields.items() if f.description]
    assert {f"--{n.replace('_', '-')}" for n in described} <= set(flags)
    assert {"--model-base-url", "--judge-base-url", "--model-api-key-env", "--judge-api-key-env", "--max-tokens",
            "--temperature", "--top-p", "--model-option", "--judge-option"} <= set(flags)
    assert "--model-spec" not in flags and "--prices" not in flags  # not settings a flag can spell
    assert flags["--frames"].type is int and flags["--tasks"].type is str and flags["--cache-dir"].type is Path
    out = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "300"}).output
    for name in ("--videos-in-flight", "--judge-max-attempts", "--temperature", "--model-option"):
        assert name in out
    assert RunConfig.model_fields["videos_in_flight"].description.split(" (")[0] in out


def test_a_new_field_is_a_new_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    class WithExecutor(RunConfig):
        executor: str = Field("local", description="who asks the model: local or ray")

    monkeypatch.setattr(rf, "RunConfig", WithExecutor)
    flag = next(f for f in rf.run_flags() if f.name == "--executor")
    assert (flag.key, flag.type, flag.help) == ("executor", str, "who asks the model: local or ray")


def test_flags_go_over_the_file_and_name_themselves() -> None:
    flags = rf.run_flags()
    values = {"frames": 8, "model_settings": {"temperature": 0.1, "extra": {"input": "images"}}}
    given = {"frames": 16, "temperature": 0.5, "model_option": ["batch_size=4"], "judge_base_url": "http://j/v1",
             "top_p": None}
    out, origins = rf.settings_from_flags(values, given, flags)
    assert out == {"frames": 16, "judge_settings": {"base_url": "http://j/v1"},
                   "model_settings": {"temperature": 0.5, "extra": {"input": "images", "batch_size": 4}}}
    assert origins == {"frames": "--frames", "model_settings.temperature": "--temperature",
                       "model_settings.extra.batch_size": "--model-option",
                       "judge_settings.base_url": "--judge-base-url"}
    assert values["model_settings"]["temperature"] == 0.1  # the file's values are not changed in place


def test_a_bad_flag_value_is_named_by_its_flag(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path), "--model", "oracle", "--judge", "offline",
                                   "--out", str(tmp_path / "run"), "--temperature", "nan", "--videos-in-flight", "0"])
    assert res.exit_code == 2
    assert "--temperature: must be a finite number" in res.output and "--videos-in-flight:" in res.output
    assert not (tmp_path / "run").exists()


def test_every_generation_setting_has_one_spelling_and_none_drops_a_preset_value(tmp_path: Path) -> None:
    from mtvbench.config import RoleSettings
    from mtvbench.models.settings import GENERATION_SETTINGS
    from mtvbench.run.settings import build_config

    flags = rf.run_flags()
    by_key = {f.key: f for f in flags}
    for field in GENERATION_SETTINGS:  # a YAML key of model_settings and a flag for each
        assert field in RoleSettings.model_fields and f"model_settings.{field}" in by_key, field
    assert by_key["model_settings.top_k"].name == "--top-k" and by_key["model_settings.seed"].name == "--model-seed"
    given = {"top_k": "none", "repetition_penalty": "1.1", "model_seed": "3", "system": "NULL", "do_sample": "false"}
    out, origins = rf.settings_from_flags({"model_settings": {"top_k": 5}}, given, flags)
    assert out["model_settings"] == {"top_k": None, "repetition_penalty": 1.1, "seed": 3, "system": None,
                                     "do_sample": "false"}
    assert origins["model_settings.top_k"] == "--top-k"
    base = {"data": tmp_path, "judge": "offline", "out": tmp_path / "r", "model": "qwen3-vl-8b-instruct",
            "protocol": "paper"}  # the paper protocol's preset values (the authors' Qwen script sets max tokens only)
    cfg = build_config({**base, "model_settings": out["model_settings"]}, flags=origins)
    ms = cfg.model_settings  # the preset's top_k 20 dropped, its temperature kept
    assert (ms.top_k, ms.repetition_penalty, ms.seed, ms.do_sample, ms.temperature) == (None, 1.1, 3, False, 0.7)
    assert ms.origin.preset == "qwen3-vl-8b-instruct" and "temperature" in ms.origin.preset_keys
    assert "top_k" not in ms.origin.preset_keys and "repetition_penalty" not in ms.origin.preset_keys


def test_a_bad_generation_value_is_named_by_its_flag_and_an_option_spelling_names_the_flag(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path), "--model", "oracle", "--judge", "offline",
                                   "--out", str(tmp_path / "run"), "--top-k", "many", "--presence-penalty", "3",
                                   "--model-option", "repetition_penalty=high"])
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert "--top-k: Input should be a valid integer" in out and "--presence-penalty: must be in [-2, 2]" in out
    assert ("--model-option: 'repetition_penalty' is a setting of its own, not a backend option: give it as "
            "repetition_penalty (--repetition-penalty for the model)") in out
    assert not (tmp_path / "run").exists()
