"""A preset's settings and the given ones merge typed, in one place (BackendOptions.merge): a given value wins
(null drops the preset's), backend options are added, a given extra_body adds key by key."""

from __future__ import annotations

from pathlib import Path

from mtvbench.models.presets import resolve_model
from mtvbench.models.settings import BackendOptions
from mtvbench.run.settings import build_config


def _cfg(tmp_path: Path, model: str, settings: dict) -> object:
    return build_config({"data": tmp_path, "judge": "offline", "model": model, "out": tmp_path / "r",
                         "protocol": "paper", "model_settings": settings})


def test_merge_lets_given_values_win_and_adds_extra_body_key_by_key() -> None:
    preset = BackendOptions(temperature=0.7, top_k=20, system="S",
                            extra={"video_part": True, "extra_body": {"top_k": 20, "min_tokens": 2}})
    given = BackendOptions(temperature=0.0, top_k=None, extra={"extra_body": {"min_tokens": 5, "stop": ["x"]},
                                                               "detail": "low"})
    merged = preset.merge(given)
    assert (merged.temperature, merged.top_k, merged.system) == (0.0, None, "S")  # null drops, untouched stays
    assert merged.options == {"video_part": True, "detail": "low",
                            "extra_body": {"top_k": 20, "min_tokens": 5, "stop": ["x"]}}
    assert preset.merge(BackendOptions()) == preset  # nothing given: the preset's settings
    assert preset.options["extra_body"] == {"top_k": 20, "min_tokens": 2}  # the preset's own are not changed


def test_a_preset_run_merges_the_given_extra_body_into_the_presets(tmp_path: Path) -> None:
    _, options, _ = resolve_model("minicpm-v4.5@openai", protocol="paper")
    assert options.options["extra_body"] == {"stop_token_ids": [1, 151645]}
    cfg = _cfg(tmp_path, "minicpm-v4.5@openai", {"base_url": "http://127.0.0.1:9/v1",
                                                 "extra": {"extra_body": {"min_tokens": 3}}})
    assert cfg.model_settings.options["extra_body"] == {"stop_token_ids": [1, 151645], "min_tokens": 3}
    assert cfg.preset_overrides == ["extra_body.min_tokens"]
    dropped = _cfg(tmp_path, "minicpm-v4.5@openai", {"base_url": "http://127.0.0.1:9/v1",
                                                     "extra": {"extra_body": {"stop_token_ids": None}}})
    assert dropped.model_settings.options["extra_body"] == {"stop_token_ids": None}
    assert dropped.preset_overrides == ["extra_body.stop_token_ids"]


def test_a_given_generation_setting_wins_over_the_presets_field(tmp_path: Path) -> None:
    """--repetition-penalty 1.2 on a preset that sets 1.05: the given value is the one sent, as the run's
    "modified: repetition_penalty" says."""
    assert resolve_model("qwen2.5-vl-7b", protocol="paper")[1].repetition_penalty == 1.05
    cfg = _cfg(tmp_path, "qwen2.5-vl-7b", {"repetition_penalty": 1.2})
    assert cfg.model_settings.repetition_penalty == 1.2 and "repetition_penalty" not in cfg.model_settings.options
    assert cfg.preset_overrides == ["repetition_penalty"]
    dropped = _cfg(tmp_path, "qwen2.5-vl-7b", {"repetition_penalty": None, "top_k": 5})
    assert dropped.model_settings.repetition_penalty is None and dropped.model_settings.top_k == 5
