"""``mtvbench build``'s flags come from the build settings as ``run``'s come from the run settings: a described
setting is a flag, a stage's settings section adds its described fields as ``--SECTION-FIELD``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field
from typer.main import get_command
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.cli.construct import BUILD_FLAGS, build_flags, build_settings
from mtvbench.config import validate_settings
from mtvbench.construct import config as build_config
from mtvbench.construct.config import BuildConfig, assemble
from mtvbench.construct.stages import Stage, loadable_stages, stage_names
from mtvbench.construct.stages.caption import CaptionSettings
from mtvbench.errors import ConfigError
from mtvbench.registry import RegistryError
from mtvbench.run import flags as rf

#: the flags every build command took before they were derived (mtvbench at commit af4e2a6), with --base-url and
#: --api-key-env spelled as run spells them
BEFORE = {"--workspace", "-w", "--videos", "--video", "--model", "-m", "--model-base-url", "--model-api-key-env",
          "--concurrency",
          "--force", "--config", "--detector", "--detector-weights", "--split-detector", "--no-objects",
          "--retry-failed", "--no-retry-failed"}
BEFORE_ALL = BEFORE - {"--split-detector"} | {"--out", "--accepted-only", "--no-accepted-only", "--executor",
                                              "--ray-address"}


class SummarySettings(BaseModel):
    sentences: int = Field(1, description="sentences per summary")
    style: str = "plain"


def _summary_stage(**kw: object) -> Stage:
    async def run(ctx, v):  # noqa: ANN001, ANN202 - never called
        raise AssertionError

    return Stage(make=run, artifact=BaseModel, help="summary", settings_model=SummarySettings, **kw)  # type: ignore


def _options(command: str) -> set[str]:
    build = get_command(app).commands["build"]  # type: ignore[attr-defined]
    return {o for p in build.commands[command].params for o in (*p.opts, *p.secondary_opts)}


def test_every_described_setting_is_a_flag_with_its_help() -> None:
    flags = {f.name: f for f in BUILD_FLAGS}
    described = [n for n, f in BuildConfig.model_fields.items() if f.description]
    assert {f"--{n.replace('_', '-')}" for n in described} <= set(flags)
    assert {"--split-detector", "--caption-frames", "--merge-passes", "--merge-prefilter-below", "--suitability-frames",
            "--generate-frames", "--model-base-url", "--model-api-key-env", "--temperature", "--max-tokens",
            "--model-option"} <= set(flags)
    assert "--judge-base-url" not in flags and "--models" not in flags and "--stage-settings" not in flags
    assert flags["--split-detector"].key == "split.detector" and flags["--caption-frames"].type is int
    assert flags["--model"].short == "-m"
    assert flags["--model-base-url"].key == "backend.base_url" and flags["--model-option"].key == "backend.extra"
    out = CliRunner().invoke(app, ["build", "caption", "--help"], env={"COLUMNS": "300"}).output
    for name in ("--caption-frames", "--split-detector", "--model-base-url", "--no-objects", "--temperature"):
        assert name in out
    assert CaptionSettings.model_fields["frames"].description in out
    assert "--base-url " not in out


@pytest.mark.parametrize("command", [*stage_names()[:10], "all"])
def test_every_build_command_takes_the_flags_it_took_before_they_were_derived(command: str) -> None:
    assert (BEFORE_ALL if command == "all" else BEFORE) <= _options(command)


def test_a_stage_with_a_settings_model_adds_its_section_and_flags() -> None:
    model = assemble({**loadable_stages(), "video-summary": _summary_stage()})
    assert model.SECTIONS["video-summary"] == "video-summary"
    flag = next(f for f in build_flags(model) if f.name == "--video-summary-sentences")
    assert (flag.key, flag.param, flag.type, flag.help) == ("video-summary.sentences", "video_summary_sentences", int,
                                                          "sentences per summary")
    assert not any(f.name == "--video-summary-style" for f in build_flags(model))  # no description: no flag
    cfg = validate_settings(model, {"video-summary": {"sentences": 3}, "caption": {"frames": 4}}, "f.yaml")
    assert cfg.section(SummarySettings).sentences == 3 and cfg.section(CaptionSettings).frames == 4
    assert BuildConfig().section(SummarySettings) == SummarySettings()  # a config without the section: defaults
    with pytest.raises(ConfigError, match=r"unknown setting 'video-summary\.sentnces' in f\.yaml \(did you mean"):
        validate_settings(model, {"video-summary": {"sentnces": 3}}, "f.yaml")
    with pytest.raises(RegistryError, match="'model' is taken"):
        assemble({"mine": _summary_stage(section="model")})


def test_a_stage_registered_after_import_is_read_from_the_config(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(build_config, "loadable_stages", lambda: {**loadable_stages(), "recap": _summary_stage()})
    f = tmp_path / "build.yaml"
    f.write_text("recap: {sentences: 2}\n")
    assert build_settings(f, {}).section(SummarySettings).sentences == 2
    f.write_text("recap: {sentences: many}\n")
    with pytest.raises(ConfigError, match=r"field 'recap\.sentences'"):
        build_settings(f, {})


def test_flags_go_over_the_file_and_name_themselves() -> None:
    values = {"caption": {"frames": 4}, "backend": {"temperature": 0.1}, "split": {"threshold": 2.0}}
    given = {"caption_frames": 6, "split_detector": "adaptive", "model_base_url": "http://x/v1",
             "model_option": ["k=1"], "objects": False, "model": "openai:m"}
    out, origins = rf.settings_from_flags(values, given, BUILD_FLAGS)
    assert out == {"caption": {"frames": 6}, "split": {"threshold": 2.0, "detector": "adaptive"}, "objects": False,
                   "model": "openai:m", "backend": {"temperature": 0.1, "base_url": "http://x/v1", "extra": {"k": 1}}}
    assert origins == {"caption.frames": "--caption-frames", "split.detector": "--split-detector",
                       "backend.base_url": "--model-base-url", "backend.extra.k": "--model-option",
                       "objects": "--objects", "model": "--model"}
    assert values["caption"] == {"frames": 4}  # the file's values are not changed in place


def test_yes_no_flags_set_their_setting(tmp_path: Path) -> None:
    out, _ = rf.settings_from_flags({}, {"objects": False, "retry_failed": True}, BUILD_FLAGS)
    cfg = build_settings(None, {"objects": False, "retry_failed": True})
    assert out == {"objects": False, "retry_failed": True} and not cfg.objects and cfg.retry_failed
    assert {"--no-objects", "--objects", "--retry-failed", "--no-retry-failed"} <= _options("all")
