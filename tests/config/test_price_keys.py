"""`prices` keys are strict (issue 25, point 4): a role (`model`, `judge`), a backend spec `PREFIX:NAME`, a
backend's bare name or a preset name; keys for models the run does not use stay allowed (one table serves
several runs); anything else is one error naming the key, with a suggestion where one is close."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mtvbench.errors import ConfigError
from mtvbench.run.settings import build_config
from tests.support.run_helpers import cli

PRICE = {"input": 1.0, "output": 2.0}
BASE = {"data": "d", "model": "openai:gpt-4o", "judge": "openai:gemini-2.5-flash", "out": "o"}


@pytest.mark.parametrize("key", ["model", "judge", "openai:gpt-4o", "openai:some-other-model", "gemini:gemini-2.5-pro",
                                 "hf:Qwen/Qwen2.5-VL-7B-Instruct", "oracle", "qwen3-vl-8b-instruct"])
def test_a_price_key_of_a_role_spec_or_preset_is_accepted(key: str, tmp_path: Path) -> None:
    cfg = build_config({**BASE, "out": tmp_path / "o", "prices": {key: PRICE}})
    assert key in cfg.prices


@pytest.mark.parametrize(("key", "suggestion"), [("judeg", "judge"), ("modle", "model"), ("Judge", "judge"),
                                                 ("opnai:gpt-4o", "openai:gpt-4o"), ("gemni:gemini-2.5-pro",
                                                                                    "gemini:gemini-2.5-pro"),
                                                 ("qwen3-vl-8b-instrct", "qwen3-vl-8b-instruct"),
                                                 ("openai:", None), ("gpt-4o", None), ("", None)])
def test_any_other_price_key_is_one_error_with_a_suggestion(key: str, suggestion: str | None, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        build_config({**BASE, "out": tmp_path / "o", "prices": {key: PRICE, "judge": PRICE}}, source="run.yaml")
    text = str(err.value)
    assert f"unknown price key '{key}'" in text and "run.yaml" in text and text.count("\n") == 0, text
    if suggestion is not None:
        assert f"did you mean '{suggestion}'?" in text, text


def test_a_misspelt_price_role_is_refused_by_every_command(tmp_path: Path) -> None:
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "data")
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"prices": {"judeg": PRICE}}))
    for command in ("estimate", "run"):
        res = cli(command, "--config", str(config), "--data", str(data), "--model", "oracle", "--judge", "offline",
                  "--out", str(tmp_path / "run"), "--quiet" if command == "run" else "--format=plain")
        text = " ".join(res.output.split())
        assert res.exit_code == 2 and "unknown price key 'judeg' (did you mean 'judge'?" in text, (command, text)
    assert not (tmp_path / "run").exists()
