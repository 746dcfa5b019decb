"""One identity: the run identity (RunConfig.identity) and the settings parts of every answer's fingerprint
(RunKeys) come from the same values, so a setting that changes an answer changes both; one that only changes
how the model is called changes neither. A run directory made before the model's options were recorded
resumes: they are filled in, never refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mtvbench.config import RECORDED_IDENTITY_KEYS, RunConfig, identity_differences
from mtvbench.errors import MtvbenchError
from mtvbench.records import GenerationResult
from mtvbench.run.identity import ResultKey, RunKeys
from mtvbench.run.settings import build_config
from mtvbench.run.store import RunStore


def _cfg(tmp_path: Path, settings: dict[str, Any] | None = None, judge: dict[str, Any] | None = None) -> RunConfig:
    return build_config({"data": tmp_path, "model": "openai:m", "judge": "offline", "out": tmp_path / "r",
                         "model_settings": {"base_url": "http://127.0.0.1:9/v1", **(settings or {})},
                         "judge_settings": judge or {}})


ANSWER_CHANGING = [{"temperature": 0.3}, {"max_tokens": 64}, {"top_k": 5}, {"system": "Be brief."},
                   {"repetition_penalty": 1.1}, {"seed": 3}, {"extra": {"video_part": True}},
                   {"extra": {"extra_body": {"min_tokens": 2}}}]


@pytest.mark.parametrize("setting", ANSWER_CHANGING, ids=lambda s: str(s))
def test_a_setting_that_changes_an_answer_changes_the_identity_and_the_fingerprint(tmp_path: Path,
                                                                                   setting: dict) -> None:
    base, changed = _cfg(tmp_path), _cfg(tmp_path, setting)
    assert base.identity() != changed.identity()
    parts = {k for k, v in RunKeys(base, {}).common.items() if RunKeys(changed, {}).common[k] != v}
    assert parts & {"generation", "system"}  # the fingerprint's part that says why an answer is asked again


@pytest.mark.parametrize("setting", [{"timeout_s": 5}, {"max_retries": 0}, {"extra": {"batch_size": 8}},
                                     {"extra": {"concurrency": 2}}], ids=lambda s: str(s))
def test_how_the_model_is_called_changes_neither(tmp_path: Path, setting: dict) -> None:
    base, changed = _cfg(tmp_path), _cfg(tmp_path, setting)
    assert base.identity() == changed.identity()
    assert RunKeys(base, {}).common == RunKeys(changed, {}).common


def test_the_fingerprint_parts_are_the_identitys_values(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, {"temperature": 0.3, "extra": {"video_part": True}})
    identity, common = cfg.identity(), RunKeys(cfg, {}).common
    assert common["backend"] == identity["model"] and common["frames"] == identity["frames"]
    assert identity["model_options"] == {"video_part": True}
    # the judge's settings are part of each verdict's fingerprint (changing them judges again), not of the run
    judged = _cfg(tmp_path, {"temperature": 0.3, "extra": {"video_part": True}}, judge={"temperature": 0.5})
    assert judged.identity() == identity
    assert RunKeys(judged, {}).judge_common != RunKeys(cfg, {}).judge_common


def test_a_run_directory_made_before_model_options_were_recorded_resumes(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, {"extra": {"video_part": True}})
    old = {k: v for k, v in cfg.identity().items() if k not in RECORDED_IDENTITY_KEYS}
    (tmp_path / "run").mkdir()
    store = RunStore(tmp_path / "run")
    try:
        store.set_meta("identity", old)
        store.check_identity(cfg.identity())  # not recorded: filled in, not refused
        assert store.get_meta("identity")["model_options"] == {"video_part": True}
        store.check_identity(_cfg(tmp_path, {"extra": {"video_part": False}}).identity())  # recorded, re-asked
        assert store.get_meta("identity")["model_options"] == {"video_part": False}
        store.begin_session()
        store.put_response("t#1", "prompt", GenerationResult(text="an answer"), ResultKey(fingerprint="f", parts={}))
        with pytest.raises(MtvbenchError, match="model_generation differ"):  # it holds a result now
            store.check_identity(_cfg(tmp_path, {"temperature": 0.9}).identity())
    finally:
        store.close()
    assert identity_differences(old, cfg.identity()) == []
    assert identity_differences({**old, "model": "openai:x"}, cfg.identity()) == ["model"]
