"""The registry of the paper's 24 models, and `mtvbench models`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mtvbench.cli.models import models_command
from mtvbench.media.frames import FrameSettings
from mtvbench.models.base import UnknownModelError
from mtvbench.models.presets import get_preset, list_presets, resolve_model

PAPER = Path("/work/shared/paper/MT-Video-Bench-paper.txt")

#: Table 2 rows: display name -> Overall
TABLE2_OVERALL = {
    "Gemini-2.5-Pro": 76.95, "Gemini-2.5-Flash": 69.90, "Doubao-Seed-1.6-250615": 67.40,
    "Qwen3-VL-32B-Thinking": 68.57, "Qwen3-VL-32B-Instruct": 67.84, "InternVL3.5-38B (Think)": 58.50,
    "InternVL3.5-38B (No Think)": 53.74, "Qwen3-VL-8B-Thinking": 65.98, "Qwen3-VL-8B-Instruct": 62.96,
    "InternVL3.5-8B (Think)": 58.36, "MiniCPM-V4.5": 56.84, "Qwen2.5-VL-7B": 54.92, "LLaVA-Video-7B": 53.76,
    "LLaVA-OneVision-7B": 52.97, "InternVL3.5-8B (No Think)": 52.20, "MiniCPM-o": 50.39,
    "VideoChat-Flash-7B": 46.02, "LLaVA-NeXT-Video-7B": 45.66, "VideoLLaMA3-7B": 38.10,
    "InternVideo2.5-8B": 38.09, "Qwen3-VL-4B-Thinking": 62.96, "Qwen3-VL-4B-Instruct": 59.15,
    "InternVL3.5-4B (Think)": 54.58, "InternVL3.5-4B (No Think)": 49.50,
}


def test_all_24_rows_with_the_paper_input_settings() -> None:
    presets = list_presets()
    assert len(presets) == 24 and len({p.name for p in presets}) == 24
    assert {p.display: p.paper.overall for p in presets} == TABLE2_OVERALL
    for p in presets:
        assert p.frames == 128  # §4.1: 128 uniformly sampled frames for every model
        rule = p.frame_overrides()
        if p.display.startswith("InternVL3.5"):
            assert rule.size == (448, 448) and p.family == "internvl"
        elif p.display.startswith("InternVideo2.5"):
            assert rule.size == (728, 728)
        else:
            assert rule.size is None and rule.max_side == 720
        think = "(Think)" in p.display
        assert (p.system is not None and "<think>" in p.system) == think  # B.1: Think system prompt
    closed = {p.display: p.backend for p in presets if p.group == "closed"}
    assert closed == {"Gemini-2.5-Pro": "gemini", "Gemini-2.5-Flash": "gemini", "Doubao-Seed-1.6-250615": "openai"}


def test_paper_scores_match_the_paper_text() -> None:
    if not PAPER.exists():
        pytest.skip("paper text not available")
    text = PAPER.read_text(encoding="utf-8")
    for p in list_presets():
        row = re.search(re.escape(p.display) + r" \([^)]*\) ([\d. ]+)", text)
        assert row, p.display
        numbers = [float(x) for x in row.group(1).split()[:7]]
        s = p.paper
        assert numbers == [s.overall, s.OR, s.MR, s.CS, s.AR, s.TS, s.PI], p.display


def test_resolve_model_preset_and_passthrough() -> None:
    spec, opts, frames = resolve_model("qwen3-vl-8b-instruct")
    assert spec == "hf:Qwen/Qwen3-VL-8B-Instruct"
    assert (opts.temperature, opts.top_p, opts.top_k, opts.max_tokens) == (0.7, 0.8, 20, 16384)
    assert opts.extra["presence_penalty"] == 1.5
    assert frames is not None and frames.apply(FrameSettings(jpeg_quality=80)) == FrameSettings(
        num_frames=128, max_side=720, size=None, jpeg_quality=80)
    spec, opts, frames = resolve_model("InternVL3.5-8B (Think)")  # the paper's display name works too
    assert spec == "hf:OpenGVLab/InternVL3_5-8B" and opts.extra["family"] == "internvl"
    assert opts.system and "<think>" in opts.system and opts.extra["do_sample"] is True
    assert frames is not None and frames.apply().size == (448, 448) and frames.apply().key() == "n128-448x448-q90"
    spec, opts, _ = resolve_model("qwen3-vl-8b-thinking@vllm")
    assert spec == "vllm:Qwen/Qwen3-VL-8B-Thinking" and "family" not in opts.extra
    spec, opts, _ = resolve_model("doubao-seed-1.6")
    assert spec == "openai:doubao-seed-1-6-250615" and opts.api_key_env == "ARK_API_KEY"
    assert opts.base_url and "volces.com" in opts.base_url
    spec, opts, _ = resolve_model("llava-onevision-7b@vllm")
    assert opts.temperature == 0.0  # greedy on vLLM
    assert resolve_model("hf:/my/ckpt") == ("hf:/my/ckpt", resolve_model("oracle")[1], None)
    with pytest.raises(UnknownModelError, match="did you mean.*qwen3-vl-8b-instruct"):
        resolve_model("qwen3-vl-8b-instrct")
    with pytest.raises(UnknownModelError, match="runs on hf"):
        resolve_model("internvl3.5-8b@vllm")
    assert get_preset("MINICPM-V4.5") is get_preset("minicpm-v4.5")


def test_models_command_lists_every_row() -> None:
    app = typer.Typer()
    app.command("models")(models_command)
    app.command("other")(lambda: None)  # a second command keeps typer in sub-command mode
    runner = CliRunner()
    res = runner.invoke(app, ["models", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["display"] for r in rows] == list(TABLE2_OVERALL)
    res = runner.invoke(app, ["models"], env={"COLUMNS": "250"})
    assert res.exit_code == 0
    for p in list_presets():
        assert p.name in res.output
    res = runner.invoke(app, ["models", "internvl3.5-4b-think"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "Enclose this entire thinking process" in res.output and "448x448" in res.output
    assert runner.invoke(app, ["models", "nope"]).exit_code == 2
