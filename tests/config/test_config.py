from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.config import ConfigError
from mtvbench.run.flags import parse_options
from mtvbench.run.settings import build_config


def test_preset_supplies_backend_frames_and_generation(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "judge": "offline", "model": "internvl3.5-8b-think", "out": tmp_path / "r"})
    assert cfg.model == "internvl3.5-8b-think"
    assert cfg.backend_spec.startswith("hf:") and "InternVL3_5-8B" in cfg.backend_spec
    assert cfg.frame_size == (448, 448) and cfg.frames == 128
    assert cfg.model_settings.system  # the InternVL3.5 Think system prompt
    assert cfg.identity()["model"] == cfg.backend_spec


def test_explicit_settings_win_over_the_preset(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "judge": "offline", "model": "qwen3-vl-8b-instruct", "out": tmp_path / "r",
                        "frames": 32,
                        "model_settings": {"temperature": 0.0, "extra": {"batch_size": 2}}})
    assert cfg.frames == 32 and cfg.max_side == 720
    assert cfg.model_settings.temperature == 0.0
    assert cfg.model_settings.options["batch_size"] == 2


def test_plain_specs_pass_through_and_typos_are_clear(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "judge": "offline", "model": "openai:gpt-4o", "out": tmp_path / "r"})
    assert cfg.backend_spec == "openai:gpt-4o" and cfg.frames == 128 and cfg.frame_size is None
    with pytest.raises(ConfigError, match="did you mean"):
        build_config({"data": tmp_path, "judge": "offline", "model": "qwen3-vl-8b-instrct", "out": tmp_path / "r"})


def test_options_parse_yaml_values() -> None:
    assert parse_options(["input=upload", "batch_size=8", "x=[1, 2]"]) == {"input": "upload", "batch_size": 8,
                                                                          "x": [1, 2]}
    with pytest.raises(ConfigError, match="--model-option 'novalue': must look like KEY=VALUE"):
        parse_options(["novalue"])


def test_bad_config_file_names_file_and_field(tmp_path: Path) -> None:
    cfgfile = tmp_path / "run.yaml"
    cfgfile.write_text("data: /nowhere\nmodel: oracle\njudge: offline\nout: /tmp/x\nframes: -3\n")
    res = CliRunner().invoke(app, ["run", "--config", str(cfgfile)])
    assert res.exit_code == 2
    assert "run.yaml" in res.output and "frames" in res.output and "Traceback" not in res.output


# ---------------------------------------------------------------------------- strict settings

def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", *args])
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def _errors(output: str) -> list[str]:
    """The lines of the one error message (without the 'error: ' of its first line)."""
    return [line.removeprefix("error: ") for line in output.strip().splitlines()]


def test_unknown_keys_are_errors_with_a_suggestion(tmp_path: Path) -> None:
    cfgfile = tmp_path / "run.yaml"
    cfgfile.write_text("data: /nowhere\nmodel: oracle\njudge: offline\nout: /tmp/x\nframe: 64\n"
                       "model_settings: {temprature: 0.2, extra: {anything: 1}}\njudge_settings: {zzz: 1}\n")
    code, out = _run("--config", str(cfgfile))
    assert code == 2
    lines = _errors(out)
    assert f"unknown setting 'frame' in {cfgfile} (did you mean 'frames'?)" in lines
    assert (f"unknown setting 'model_settings.temprature' in {cfgfile} "
            "(did you mean 'model_settings.temperature'?)") in lines
    assert any(line.startswith(f"unknown setting 'judge_settings.zzz' in {cfgfile} (known: api_key_env, base_url")
               for line in lines)
    assert len(lines) == 3  # 'extra' stays the free-form place for backend options


def test_yaml_values_that_are_not_numbers(tmp_path: Path) -> None:
    cfgfile = tmp_path / "run.yaml"
    cfgfile.write_text("data: /d\nmodel: oracle\njudge: offline\nout: /o\nframes: yes\nconcurrency: 2.5\n"
                       "model_settings: {temperature: .nan, top_p: 1.5, max_tokens: 0, extra: {extra_body: [1, 2]}}\n"
                       "judge_settings: [1]\n")
    code, out = _run("--config", str(cfgfile))
    assert code == 2
    lines = _errors(out)
    assert f"{cfgfile}: field 'frames': must be a number, not a yes/no value (got True)" in lines
    assert f"{cfgfile}: field 'model_settings.temperature': must be a finite number (got nan)" in lines
    assert f"{cfgfile}: field 'judge_settings': must be a mapping of settings, got list (got [1])" in lines
    # the structure is broken, so the values are checked on the next try; fix judge_settings:
    cfgfile.write_text(cfgfile.read_text().replace("judge_settings: [1]\n", ""))
    lines = _errors(_run("--config", str(cfgfile))[1])
    assert f"{cfgfile}: field 'concurrency': Input should be a valid integer, got a number with a fractional part " \
           "(got 2.5)" in lines
    assert f"{cfgfile}: field 'model_settings.top_p': must be in (0, 1] (got 1.5)" in lines
    assert f"{cfgfile}: field 'model_settings.max_tokens': must be >= 1 (got 0)" in lines
    assert any(line.startswith(f"{cfgfile}: field 'model_settings.extra': extra_body must be a mapping")
               for line in lines)


def test_bad_flag_values_are_named_by_their_flag(tmp_path: Path) -> None:
    code, out = _run("--data", str(tmp_path), "--model", "oracle", "--judge", "offline", "--out", str(tmp_path / "r"),
                     "--temperature", "nan", "--top-p", "0", "--frame-size", "0x10", "--max-tokens", "0",
                     "--frames", "0", "--concurrency", "0", "--model-option", "extra_body=[1,2]")
    assert code == 2
    assert sorted(_errors(out)) == sorted([
        "--temperature: must be a finite number (got nan)",
        "--top-p: must be in (0, 1] (got 0.0)",
        "--frame-size: width and height must be >= 1 (got '0x10')",
        "--max-tokens: must be >= 1 (got 0)",
        "--frames: Input should be greater than or equal to 1 (got 0)",
        "--concurrency: Input should be greater than or equal to 1 (got 0)",
        "--model-option: extra_body must be a mapping of request fields (e.g. {top_k: 20}), got list [1, 2]",
    ])
    assert not (tmp_path / "r").exists()


def test_more_bad_flag_values(tmp_path: Path) -> None:
    base = ["--data", str(tmp_path), "--model", "oracle", "--judge", "offline", "--out", str(tmp_path / "r")]
    assert _errors(_run(*base, "--temperature", "-0.5", "--frame-size", "abcx10")[1]) == [
        "--frame-size: must look like WIDTHxHEIGHT, e.g. 448x448 (got 'abcx10')",
        "--temperature: must be a number >= 0 (got -0.5)"]
    assert _errors(_run(*base, "--model-option", "batch_size")[1]) == [
        "--model-option 'batch_size': must look like KEY=VALUE, e.g. --model-option batch_size=8"]
    assert _errors(_run(*base, "--judge-option", "x=[1")[1])[0].startswith(
        "--judge-option 'x=[1': line 1 column 3: not valid YAML")
    assert _errors(_run(*base, "--model-option", "temperature=0.3")[1])[0].startswith(
        "--model-option: 'temperature' is a setting of its own")


def test_config_file_duplicate_key_fifo_and_bad_yaml(tmp_path: Path) -> None:
    import os

    dup = tmp_path / "dup.yaml"
    dup.write_text("data: /a\nmodel: oracle\nframes: 64\nframes: 32\n")
    assert _errors(_run("--config", str(dup))[1]) == [
        f"{dup}: line 4: duplicate key 'frames' (first at line 3); YAML readers silently keep only the last one"]
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert _errors(_run("--config", str(fifo))[1]) == [f"{fifo}: config file is not a regular file "
                                                       "(a FIFO, device or socket)"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: [\n")
    assert _errors(_run("--config", str(bad))[1])[0].startswith(f"{bad}: line 2 column 1: not valid YAML")
    listing = tmp_path / "list.yaml"
    listing.write_text("- data\n")
    assert "must be a mapping of settings" in _run("--config", str(listing))[1]


def test_yaml_merge_keys_may_override(tmp_path: Path) -> None:
    from mtvbench.config import load_settings_file

    f = tmp_path / "m.yaml"
    f.write_text("base: &b {frames: 8, limit: 2}\nrun:\n  <<: *b\n  frames: 16\n")
    assert load_settings_file(f)["run"] == {"frames": 16, "limit": 2}


def test_build_config_file_is_strict(tmp_path: Path) -> None:
    cfgfile = tmp_path / "build.yaml"
    cfgfile.write_text("modle: openai:x\nbackend: {temprature: 0.3, top_p: 2}\nsplit: {detectr: content}\n"
                       "caption: {frames: yes}\n")
    res = CliRunner().invoke(app, ["build", "split", "-w", str(tmp_path / "ws"), "--config", str(cfgfile)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert _errors(res.output) == [
        f"unknown setting 'modle' in {cfgfile} (did you mean 'model'?)",
        f"unknown setting 'backend.temprature' in {cfgfile} (did you mean 'backend.temperature'?)",
        f"unknown setting 'split.detectr' in {cfgfile} (did you mean 'split.detector'?)",
        f"{cfgfile}: field 'caption.frames': must be a number, not a yes/no value (got True)",
        f"{cfgfile}: field 'backend.top_p': must be in (0, 1] (got 2)",
    ]
    assert not (tmp_path / "ws").exists()
    res = CliRunner().invoke(app, ["build", "split", "-w", str(tmp_path / "ws"), "--concurrency", "0",
                                   "--split-detector", "bogus"])
    assert res.exit_code == 2
    assert _errors(res.output) == ["--concurrency: must be >= 1 (got 0)",
                                   "--split-detector: Input should be 'content' or 'adaptive' (got 'bogus')"]


def test_valid_build_config_json_still_loads(tmp_path: Path) -> None:
    from mtvbench.cli.construct import build_settings

    f = tmp_path / "b.json"
    f.write_text('{"model": "openai:m", "backend": {"temperature": 0.2, "extra": {"k": 1}}, "split": {}}')
    cfg = build_settings(f, {"model_base_url": "http://x/v1", "concurrency": 3, "split_detector": "adaptive"})
    assert cfg.model == "openai:m" and cfg.backend.temperature == 0.2 and cfg.backend.base_url == "http://x/v1"
    assert cfg.concurrency == 3 and cfg.split.detector == "adaptive"


def test_frame_size_above_8192_is_one_error_naming_the_flag(tmp_path: Path) -> None:
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "data")
    base = ["--data", str(data), "--model", "oracle", "--judge", "offline", "--out", str(tmp_path / "r")]
    code, out = _run(*base, "--frame-size", "9000x448")
    assert code == 2 and _errors(out) == ["--frame-size: width and height must be at most 8192 px (got '9000x448')"]
    assert not (tmp_path / "r").exists()  # before anything is written
    cfg = build_config({"data": data, "model": "oracle", "judge": "offline", "out": tmp_path / "r",
                        "frame_size": "8192x8192"})
    assert cfg.frame_settings().size == (8192, 8192)


def _overrides(tmp_path: Path, model: str = "qwen3-vl-8b-instruct", **values: object) -> list[str]:
    # the paper protocol's preset values (the authors' Qwen script sets only max_new_tokens)
    return build_config({"data": tmp_path, "judge": "offline", "model": model, "out": tmp_path / "r",
                         "protocol": "paper", **values}).preset_overrides


def test_preset_values_overridden_are_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generation settings, the system prompt, answer-changing backend options, frames and frame size
    given with values other than the preset's make a preset run "modified"; where and how it is called
    (URL, key variable, served_name, timeouts, batch size) and values equal to the preset's do not."""
    monkeypatch.setenv("K", "key-value-0123456789")  # a named key variable must be set
    assert _overrides(tmp_path) == []
    assert _overrides(tmp_path, frames=32, model_settings={"temperature": 0.0, "extra": {"batch_size": 2}}) == [
        "temperature", "frames"]
    assert _overrides(tmp_path, frames=128, max_side=720, model_settings={
        "temperature": 0.7, "top_p": 0.8, "timeout_s": 5, "base_url": "http://h/v1", "api_key_env": "K"}) == []
    assert _overrides(tmp_path, "qwen3-vl-8b-instruct@openai", model_settings={
        "base_url": "http://h/v1", "extra": {"served_name": "m", "max_retries": 1}}) == []
    assert _overrides(tmp_path, frame_size="448x448") == ["frame size"]
    assert _overrides(tmp_path, model_settings={"top_k": None}) == ["top_k"]  # a preset value dropped
    assert _overrides(tmp_path, model_settings={"system": "Be brief.", "repetition_penalty": 1.1, "extra": {
        "extra_body": {"top_k": 5}}}) == ["system prompt", "repetition_penalty", "extra_body.top_k"]
    assert _overrides(tmp_path, "internvl3.5-8b", frame_size=[448, 448]) == []
    assert _overrides(tmp_path, "internvl3.5-8b", max_side=448) == ["frame size"]
    assert _overrides(tmp_path, "openai:gpt-4o", frames=8, model_settings={"temperature": 1.0}) == []  # no preset


# ------------------------------------------------------------------------------ the authors' scripts' frames


def test_each_inference_style_has_its_frames_and_they_are_part_of_the_identity(tmp_path: Path) -> None:
    from mtvbench.run.identity import RunKeys

    base = {"data": tmp_path, "judge": "offline", "out": tmp_path / "r"}

    def cfg(model: str, **kw: object):  # noqa: ANN202
        return build_config({**base, "model": model, **kw})

    qwen, internvl = cfg("qwen3-vl-8b-instruct"), cfg("internvl3.5-8b")
    served = cfg("internvl3.5-8b@openai", model_settings={"base_url": "http://127.0.0.1:9/v1"})
    paper = cfg("qwen3-vl-8b-instruct", protocol="paper")
    assert qwen.frame_settings().key() == "n128-m720-q90-qwen-script1"  # the script's clip
    assert internvl.frame_settings().key() == "n128-448x448-q90-internvl-script1-png"  # exact tiles in process
    assert served.frame_settings().key() == "n128-448x448-q90-internvl-script1"  # JPEG to a server
    assert paper.frame_settings().key() == "n128-m720-q90"  # the paper protocol keeps uniform sampling
    keys = {c.frame_settings().key() for c in (qwen, internvl, served, paper)}
    assert len({c.identity()["frames"] for c in (qwen, internvl, served, paper)}) == len(keys) == 4
    assert RunKeys(qwen, {}).common["frames"] != RunKeys(paper, {}).common["frames"]  # a turn's fingerprint too
    assert internvl.inference_label == "authors: eval/infer_internvl.py"  # hf: the script's own call
    assert served.inference_label.startswith("authors: eval/infer_internvl.py (served: the script's 128 frames as "
                                             "448x448 JPEG images; where InternVL's chat() puts the image tokens")
    assert "not reproduced" in served.inference_label


def test_a_preset_runs_on_a_local_copy_of_its_checkpoint(tmp_path: Path) -> None:
    base = {"data": tmp_path, "judge": "offline", "out": tmp_path / "r"}
    cfg = build_config({**base, "model": "qwen3-vl-8b-instruct",
                        "model_settings": {"extra": {"checkpoint": str(tmp_path / "ckpt")}}})
    assert cfg.backend_spec == f"hf:{tmp_path / 'ckpt'}" and cfg.inference == "qwen-script"
    assert cfg.preset_overrides == [] and "checkpoint" not in cfg.model_settings.options
    assert cfg.model_settings.max_tokens == 1024  # the preset's settings
    with pytest.raises(ConfigError, match="served_name"):
        build_config({**base, "model": "qwen3-vl-8b-instruct@openai",
                      "model_settings": {"base_url": "http://127.0.0.1:9/v1", "extra": {"checkpoint": "/x"}}})
    with pytest.raises(ConfigError, match="not a preset"):
        build_config({**base, "model": "hf:/x", "model_settings": {"extra": {"checkpoint": "/y"}}})


@pytest.mark.parametrize(("model", "setting", "flag", "match"), [
    ("qwen3-vl-8b-instruct", ["--frame-size", "448x448"], "--frame-size", "longer side"),
    ("internvl3.5-8b", ["--frame-size", "448x300"], "--frame-size", "square frame size"),
    ("internvl3.5-8b", ["--max-side", "500"], "frame_size", "square frame size"),
])
def test_a_scripts_frames_take_its_own_size_rule(model: str, setting: list[str], flag: str, match: str,
                                                 tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path), "--model", model, "--judge", "offline",
                                   "--out", str(tmp_path / "r"), *setting])
    assert res.exit_code == 2 and "Traceback" not in res.output
    out = " ".join(res.output.split())
    assert flag in out and match in out and not (tmp_path / "r").exists()


def test_a_gemini_context_cache_under_ray_is_refused_with_one_error(tmp_path: Path) -> None:
    """A cache made in a Ray replica is not recorded in the driver's store: one a killed run left could be
    neither named nor deleted by the next run, so the pair is refused before anything is asked."""
    with pytest.raises(ConfigError, match="context_cache: a context cache made in a Ray replica"):
        build_config({"data": tmp_path, "model": "gemini:gemini-2.5-flash", "judge": "offline", "out": tmp_path / "r",
                      "executor": "ray", "model_settings": {"extra": {"context_cache": True}}})
    build_config({"data": tmp_path, "model": "gemini:gemini-2.5-flash", "judge": "offline", "out": tmp_path / "r",
                  "model_settings": {"extra": {"context_cache": True}}})  # local: accepted
