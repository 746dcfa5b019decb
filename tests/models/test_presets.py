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
from mtvbench.models.presets import get_preset, list_presets, resolve_model
from mtvbench.models.registry import UnknownModelError

#: the Table 2 rows of the paper's text
PAPER = Path(__file__).resolve().parents[1] / "fixtures" / "paper-table2.txt"
TABLE2_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "table2.md"

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
    assert (opts.temperature, opts.top_p, opts.top_k, opts.max_tokens) == (0.7, 0.8, 20, 1024)
    assert (opts.do_sample, opts.repetition_penalty, opts.options) == (True, 1.0, {})
    assert frames is not None and frames.apply(FrameSettings(jpeg_quality=80)) == FrameSettings(
        num_frames=128, max_side=720, size=None, jpeg_quality=80)
    spec, opts, frames = resolve_model("InternVL3.5-8B (Think)")  # the paper's display name works too
    assert spec == "hf:OpenGVLab/InternVL3_5-8B" and opts.options["family"] == "internvl"
    assert opts.system and "<think>" in opts.system and opts.do_sample is True
    assert frames is not None and frames.apply().size == (448, 448) and frames.apply().key() == "n128-448x448-q90"
    spec, opts, _ = resolve_model("qwen3-vl-8b-thinking@vllm")
    assert spec == "vllm:Qwen/Qwen3-VL-8B-Thinking" and "family" not in opts.options
    spec, opts, _ = resolve_model("doubao-seed-1.6")
    assert spec == "openai:doubao-seed-1-6-250615" and opts.api_key_env == "ARK_API_KEY"
    assert opts.base_url and "volces.com" in opts.base_url
    spec, opts, _ = resolve_model("llava-onevision-7b@vllm")
    assert opts.temperature == 0.0  # greedy on vLLM
    assert resolve_model("hf:/my/ckpt") == ("hf:/my/ckpt", resolve_model("oracle")[1], None)
    with pytest.raises(UnknownModelError, match="did you mean.*qwen3-vl-8b-instruct"):
        resolve_model("qwen3-vl-8b-instrct")
    with pytest.raises(UnknownModelError, match="runs on hf, openai, not on vllm"):
        resolve_model("internvl3.5-8b@vllm")
    assert get_preset("MINICPM-V4.5") is get_preset("minicpm-v4.5")


def test_every_open_preset_runs_on_an_openai_compatible_server() -> None:
    for p in list_presets():
        if p.closed:
            assert "openai" not in p.alt_backends or p.backend == "openai"
            continue
        assert "openai" in p.backends(), p.name
        spec, opts, frames = resolve_model(f"{p.name}@openai")
        assert spec == f"openai:{p.checkpoint}"  # what `vllm serve <checkpoint>` exposes
        assert frames == p.frame_overrides()  # same frames and size rule as the local backends
        assert opts.system == p.system and opts.max_tokens == p.generation.max_new_tokens
        assert "family" not in opts.options  # the hf adapter does not apply on a server
        assert not set(p.options) & set(opts.options), p.name  # nor do the adapter's own settings
        g = p.generation
        assert opts.temperature == (0.0 if g.do_sample is False else g.temperature)
        assert (opts.top_p, opts.top_k) == (g.top_p, g.top_k)
        assert (opts.repetition_penalty, opts.presence_penalty) == (g.repetition_penalty, g.presence_penalty)
    spec, opts, _ = resolve_model("minicpm-v4.5@openai")
    assert opts.options["extra_body"] == {"stop_token_ids": [1, 151645]}  # the MiniCPM-V CookBook's vLLM guide
    assert resolve_model("llava-onevision-7b@openai")[1].options["video_part"] is True


def test_served_name_overrides_the_checkpoint_id_on_servers_only() -> None:
    spec, _, _ = resolve_model("internvl3.5-4b-think@openai", served_name="ivl-think")
    assert spec == "openai:ivl-think"
    with pytest.raises(UnknownModelError, match="use 'internvl3.5-4b-think@openai'"):
        resolve_model("internvl3.5-4b-think", served_name="ivl-think")
    with pytest.raises(UnknownModelError, match="not a preset"):
        resolve_model("openai:gpt-4o", served_name="x")


def test_generation_follows_the_authors_scripts() -> None:
    """InternVL3.5 and Qwen rows use the values of eval/infer_internvl.py and eval/infer_qwen25vl.py."""
    for p in list_presets():
        g = p.generation
        if p.display.startswith("InternVL3.5"):
            think = "(Think)" in p.display
            assert (g.do_sample, g.temperature, g.top_p, g.repetition_penalty, g.max_new_tokens) == (
                True, 0.6 if think else 0.1, 0.001, 1.05, 8192 if think else 1024), p.name
            assert p.authors_script == "infer_internvl.py" and "infer_internvl.py" in g.source and g.checked
        elif p.display.startswith("Qwen"):
            # the script: max_new_tokens = 1024 if "Instruct" in the model name else 8196
            assert g.max_new_tokens == (1024 if "Instruct" in p.checkpoint else 8196), p.name
            assert g.presence_penalty is None  # transformers generate() has none: the authors' runs had none
            assert p.authors_script == "infer_qwen25vl.py" and "infer_qwen25vl.py" in g.source
        else:
            assert p.authors_script is None, p.name


def test_checked_values_and_checkpoints_name_their_source() -> None:
    url = re.compile(r"https://\S+")
    for p in list_presets():
        if p.generation.checked and not p.closed:
            assert url.search(p.generation.source), p.name
        if not p.generation.checked:
            assert "not" in p.generation.source, p.name  # says what was not seen
        if p.checkpoint_source is not None:
            assert url.fullmatch(p.checkpoint_source), p.name
    checked = {p.name for p in list_presets() if p.generation.checked and not p.closed}
    # checked only where every value was seen in the checkpoint's files or the authors' scripts: the Qwen
    # README recommendations were never seen in the checkpoints' generation_config.json
    assert checked == {"internvl3.5-38b-think", "internvl3.5-38b", "internvl3.5-8b-think", "internvl3.5-8b",
                       "internvl3.5-4b-think", "internvl3.5-4b"}
    # the authors' Qwen script sets max_new_tokens only (seen in the script): the rest is the checkpoint's
    scripted = {p.name: p.authors_generation for p in list_presets() if p.authors_generation is not None}
    assert set(scripted) == {p.name for p in list_presets() if p.authors_script == "infer_qwen25vl.py"}
    assert all(g.checked and g.checkpoint_defaults and g.temperature is None and url.search(g.source)
               for g in scripted.values())
    assert {g.max_new_tokens for n, g in scripted.items() if "thinking" in n} == {8196}


def test_llava_video_runs_on_a_server_under_its_published_id() -> None:
    p = get_preset("llava-video-7b")
    assert p is not None and p.checkpoint == "lmms-lab/LLaVA-Video-7B-Qwen2" and p.backends() == ["openai"]
    assert p.notes and "LLaVA-NeXT" in p.notes and "server" in p.notes
    assert resolve_model("llava-video-7b")[0] == "openai:lmms-lab/LLaVA-Video-7B-Qwen2"
    with pytest.raises(UnknownModelError, match="runs on openai, not on hf"):
        resolve_model("llava-video-7b@hf")
    assert all("llava-hf/LLaVA-Video" not in q.checkpoint for q in list_presets())


def test_readme_table2_shows_every_row_and_its_serve_command() -> None:
    section = TABLE2_GUIDE.read_text(encoding="utf-8")
    for p in list_presets():
        row = next((line for line in section.splitlines() if line.startswith(f"| {p.display} |")), None)
        assert row is not None, p.display
        assert f"{p.paper.overall:.2f}" in row
        if p.backend != "openai" or p.closed:
            assert f"--model {p.name} " in row, p.name
        if p.serve:
            assert f"`{p.serve}`" in row, p.name
        elif not p.closed:
            assert "not verified" in row or "none verified" in row, p.name


def test_models_command_lists_every_row() -> None:
    app = typer.Typer()
    app.command("models")(models_command)
    app.command("other")(lambda: None)  # a second command keeps typer in sub-command mode
    runner = CliRunner()
    res = runner.invoke(app, ["models", "--format", "json"])
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
