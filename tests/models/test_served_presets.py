"""Paper presets on an OpenAI-compatible server (``PRESET@openai``), checked on the wire.

A real HTTP server on 127.0.0.1 (tests/support/openai_server.py) records every request body; the
runs go through the real CLI with real videos, so these tests see exactly what a vLLM or SGLang
server would receive: model name, frames (count and pixel size), generation parameters, the
parameters the OpenAI API lacks in the body, the system prompt and the prompt text.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image
from typer.testing import CliRunner

from mtvbench.cli import app
from mtvbench.config import ConfigError
from mtvbench.models.openai_api import OpenAIBackend
from mtvbench.models.presets import get_preset
from mtvbench.models.settings import BackendOptions, SettingsOrigin
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.settings import build_config
from tests.support.datasets import make_dataset, write_video
from tests.support.openai_server import LoopbackServer, ServerState, unexpected_fields_detail

#: the scored turns of make_dataset: two per dialogue, one dialogue per task
TURNS = 12


@pytest.fixture(scope="module")
def big_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test dataset with videos larger than the size rules: 130 frames, landscape 1280x720 and
    portrait 480x800, so 128 frames are sampled and every size rule must shrink them."""
    root = make_dataset(tmp_path_factory.mktemp("served") / "data")
    write_video(root / "videos" / "vid0.mp4", n_frames=130, size=(1280, 720))
    write_video(root / "videos" / "vid1.mp4", n_frames=130, size=(480, 800))
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frame-cache")


def run_cli(data: Path, out: Path, cache: Path, model: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["run", "--data", str(data), "--model", model, "--judge", "offline",
                                    "--out", str(out), "--cache-dir", str(cache), "--concurrency", "4",
                                    "--quiet", *args])


def model_bodies(srv: LoopbackServer) -> list[dict[str, Any]]:
    return [r["body"] for r in srv.state.requests if not r["judge"]]


def frame_sizes(body: dict[str, Any]) -> list[tuple[int, int]]:
    sizes = []
    for part in body["messages"][-1]["content"]:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/jpeg;base64,")
            img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            assert img.format == "JPEG"
            sizes.append(img.size)
    return sizes


def test_qwen_preset_on_a_served_model(big_data: Path, cache: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "qwen3-vl-8b-instruct@openai", "--model-base-url", srv.url,
                      "--protocol", "paper")
    assert res.exit_code == 0, res.output
    bodies = model_bodies(srv)
    assert len(bodies) == TURNS
    for body in bodies:
        assert body["model"] == "Qwen/Qwen3-VL-8B-Instruct"  # the checkpoint id `vllm serve` exposes
        assert [m["role"] for m in body["messages"]] == ["user"]  # no system prompt for this row
        sizes = frame_sizes(body)
        assert len(sizes) == 128  # 128 of the 130 frames
        assert set(sizes) in ({(720, 405)}, {(432, 720)})  # longer side 720, aspect kept
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.7, 0.8, 1024)
        # not in the OpenAI API: sent in the body (extra_body), where vLLM and SGLang read them
        assert (body["top_k"], body["repetition_penalty"]) == (20, 1.0)
        assert "presence_penalty" not in body
        assert body["messages"][-1]["content"][-1]["text"].startswith("You're an AI assistant")


def test_internvl_think_preset_on_a_served_model(big_data: Path, cache: Path, tmp_path: Path) -> None:
    think = get_preset("internvl3.5-8b-think")
    assert think is not None and think.system
    with LoopbackServer() as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "internvl3.5-8b-think@openai", "--model-base-url", srv.url,
                      "--model-option", "served_name=internvl-think", "--limit", "1", "--protocol", "paper")
    assert res.exit_code == 0, res.output
    bodies = model_bodies(srv)
    assert len(bodies) == TURNS
    for body in bodies:
        assert body["model"] == "internvl-think"  # --model-option served_name=...
        assert body["messages"][0] == {"role": "system", "content": think.system}
        sizes = frame_sizes(body)
        assert len(sizes) == 128 and set(sizes) == {(448, 448)}
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.6, 0.001, 8192)
        assert body["repetition_penalty"] == 1.05 and "top_k" not in body


def test_frames_as_one_video_part(big_data: Path, cache: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "qwen3-vl-4b-thinking@openai", "--model-base-url", srv.url,
                      "--model-option", "video_part=true", "--protocol", "paper")
    assert res.exit_code == 0, res.output
    for body in model_bodies(srv):
        parts = body["messages"][-1]["content"]
        assert [p["type"] for p in parts] == ["video_url", "text"]
        url = parts[0]["video_url"]["url"]
        assert url.startswith("data:video/jpeg;base64,") and len(url.split(",")) == 1 + 128
        assert body["max_tokens"] == 8196


def test_authors_protocol_on_the_wire_and_in_the_run_identity(big_data: Path, cache: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "qwen2.5-vl-7b@openai", "--model-base-url", srv.url)
        assert res.exit_code == 0, res.output  # --protocol authors is the default
        bodies = model_bodies(srv)
        texts = [r["text"] for r in srv.state.requests if not r["judge"]]
        summary_r3 = next(t for t in texts if t.endswith("Question 3 about the summary clip?"))
        history = []
        for k in (1, 2):
            history += [f"User: Question {k} about the summary clip?",
                        f"Assistant: The red square moves right in round {k} and the blue circle stays."]
        assert summary_r3 == ("You're an AI assistant helping to answer questions about a video. Use the conversation "
                              f"history if helpful.\nConversation history:\n{history}\nCurrent question:\n"
                              "Question 3 about the summary clip?")
        for body in bodies:  # the script's message: the text first, then the video; only max_new_tokens is set
            parts = body["messages"][-1]["content"]
            assert parts[0]["type"] == "text" and {p["type"] for p in parts[1:]} == {"image_url"}
            assert body["max_tokens"] == 1024
            assert not {"temperature", "top_p", "top_k", "repetition_penalty"} & set(body)
            # the script's MP4 decoded: 128 of the 130 frames, its size rule (720x405 written as 720x404 by
            # the MP4 writer; the portrait 480x800 as 432x720)
            sizes = frame_sizes(body)
            assert len(sizes) == 128 and set(sizes) in ({(720, 404)}, {(432, 720)})
        config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
        assert config["protocol"] == "authors"  # served: said so, never claimed identical to the script
        assert config["inference_sent"].startswith("authors: eval/infer_qwen25vl.py (served: the script's MP4 ")
        # a Qwen2.5-VL run: what only a Qwen3-VL checkpoint does is not said of it
        assert "resampling of the MP4 not reproduced" in config["inference_sent"]
        assert "Qwen3-VL" not in config["inference_sent"]
        scores = json.loads((tmp_path / "run" / "scores.json").read_text())
        assert scores["inference"] == config["inference_sent"]
        # answers made under another protocol are never reused: the same run directory refuses paper
        again = run_cli(big_data, tmp_path / "run", cache, "qwen2.5-vl-7b@openai", "--model-base-url", srv.url,
                        "--protocol", "paper")
    assert again.exit_code == 2 and "protocol" in again.output and "Traceback" not in again.output


def test_internvl_think_under_the_authors_protocol_gets_the_scripts_message(big_data: Path, cache: Path,
                                                                           tmp_path: Path) -> None:
    from mtvbench.prompts import internvl_think_system

    with LoopbackServer() as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "internvl3.5-8b-think@openai", "--model-base-url", srv.url,
                      "--model-option", "served_name=internvl-think", "--limit", "1", "--tasks", "CS")
    assert res.exit_code == 0, res.output
    bodies = model_bodies(srv)
    assert bodies
    for body in bodies:
        msgs = body["messages"]
        assert msgs[0] == {"role": "system", "content": internvl_think_system()}  # the script's own wording
        assert "thorough but concise, remaining focused" in msgs[0]["content"]
        last = msgs[-1]["content"][-1]["text"]
        assert last.startswith("You're an AI assistant") and "Conversation history" not in last
        earlier = msgs[1:-1]  # the earlier rounds as chat turns, as the script's HISTORY
        assert [m["role"] for m in earlier] == ["user", "assistant"] * (len(earlier) // 2)
        assert all(m["content"].startswith(("User: ", "Assistant: ")) for m in earlier)
    # an earlier model turn's user message holds the text the script sent then: 128 frame lines and its prompt
    late = max(bodies, key=lambda b: len(b["messages"]))
    sent_before = [m["content"] for m in late["messages"][1:-1] if m["role"] == "user" and "<image>" in m["content"]]
    assert sent_before and sent_before[0].startswith("User: Frame1: <image>\nFrame2: <image>\n")
    assert sent_before[0].count("<image>") == 128 and "Current question:\n" in sent_before[0]
    for body in bodies:  # the script's 128 segment middles as 448x448 tiles (JPEG to a server)
        sizes = frame_sizes(body)
        assert len(sizes) == 128 and set(sizes) == {(448, 448)}
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config["inference_sent"].startswith("authors: eval/infer_internvl.py (served: ")
    assert "where InternVL's chat() puts the image tokens" in config["inference_sent"]


def test_served_preset_without_server_url_is_one_clear_error(big_data: Path, cache: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    res = run_cli(big_data, tmp_path / "run", cache, "qwen3-vl-8b-instruct@openai")
    assert res.exit_code == 2 and "Traceback" not in res.output
    out = " ".join(res.output.split())
    assert "--model: 'qwen3-vl-8b-instruct@openai'" in out and "--model-base-url" in out
    assert "vllm serve Qwen/Qwen3-VL-8B-Instruct" in out
    assert not (tmp_path / "run").exists()  # nothing half-written


def test_protocol_picks_what_each_row_is_sent(tmp_path: Path) -> None:
    base = {"data": tmp_path, "judge": "offline", "out": tmp_path / "r"}

    def cfg(model: str, **kw: Any):  # noqa: ANN202
        return build_config({**base, "model": model, **kw})

    assert cfg("qwen3-vl-8b-thinking").inference == "qwen-script"
    assert cfg("internvl3.5-8b-think").inference == "internvl-script"
    assert cfg("minicpm-v4.5").inference == "paper"
    assert cfg("minicpm-v4.5").inference_label == "paper (no released script)"
    assert cfg("openai:my-model").inference == "paper" and cfg("openai:my-model").protocol == "authors"
    assert cfg("qwen3-vl-8b-thinking", protocol="paper").inference == "paper"
    assert cfg("qwen3-vl-8b-thinking", protocol="paper").inference_label == "paper (Figure 15)"
    # Qwen rows under authors: max_new_tokens only, the rest is the checkpoint's (as the script leaves it)
    authors = cfg("qwen3-vl-8b-instruct").model_settings
    assert authors.max_tokens == 1024 and authors.temperature is None and authors.top_k is None
    assert authors.options["generation_defaults"] == "checkpoint"
    paper = cfg("qwen3-vl-8b-instruct", protocol="paper").model_settings
    assert (paper.temperature, paper.top_p, paper.top_k) == (0.7, 0.8, 20)
    with pytest.raises(ConfigError, match="unknown setting 'prompt_style'"):
        build_config({**base, "model": "oracle", "prompt_style": "authors"})
    with pytest.raises(ConfigError, match="protocol"):
        build_config({**base, "model": "oracle", "protocol": "fancy"})
    old = build_config({**base, "model": "oracle", "protocol": "paper"})
    assert "protocol" not in old.identity()  # run directories made before protocols still resume as paper
    assert cfg("oracle").identity()["protocol"] == "authors"


def test_given_extra_body_adds_to_the_presets(tmp_path: Path) -> None:
    cfg = build_config({"data": tmp_path, "judge": "offline", "out": tmp_path / "r", "model": "minicpm-v4.5@openai",
                        "model_settings": {"base_url": "http://127.0.0.1:9/v1",
                                           "extra": {"extra_body": {"min_p": 0.05}, "served_name": "mc"}}})
    assert cfg.backend_spec == "openai:mc" and "served_name" not in cfg.model_settings.options
    assert cfg.model_settings.options["extra_body"] == {"stop_token_ids": [1, 151645], "min_p": 0.05}
    dropped = build_config({"data": tmp_path, "judge": "offline", "out": tmp_path / "r", "model": "minicpm-v4.5@openai",
                            "model_settings": {"base_url": "http://127.0.0.1:9/v1",
                                               "extra": {"extra_body": {"stop_token_ids": None}}}})
    body = OpenAIBackend("mc", dropped.model_settings.backend_options())._params(GenerationRequest(id="t", prompt="hi"))
    assert "stop_token_ids" not in body["extra_body"]  # a preset's extra_body key dropped with null


def test_generation_mapping_of_the_openai_backend() -> None:
    def params(**given: Any) -> dict[str, Any]:
        extra = {k: given.pop(k) for k in list(given) if k not in BackendOptions.model_fields}
        opts = BackendOptions(base_url="http://127.0.0.1:9/v1", max_tokens=64, temperature=0.3, top_p=0.9, top_k=5,
                              extra=extra, **given)
        return OpenAIBackend("m", opts)._params(GenerationRequest(id="t", prompt="hi"))

    p = params(repetition_penalty=1.05, presence_penalty=1.5, min_p=0.1, do_sample=True)
    assert {k: p[k] for k in ("model", "max_tokens", "temperature", "top_p", "presence_penalty")} == {
        "model": "m", "max_tokens": 64, "temperature": 0.3, "top_p": 0.9, "presence_penalty": 1.5}
    assert p["extra_body"] == {"top_k": 5, "repetition_penalty": 1.05, "min_p": 0.1}
    assert params(extra_body={"top_k": 7, "chat_template_kwargs": {"enable_thinking": False}})["extra_body"] == {
        "top_k": 7, "chat_template_kwargs": {"enable_thinking": False}}  # an explicit extra_body wins
    greedy = OpenAIBackend("m", BackendOptions(base_url="http://127.0.0.1:9/v1", do_sample=False))
    assert greedy._params(GenerationRequest(id="t", prompt="hi"))["temperature"] == 0.0


# ------------------------------------------------------------------ servers other than vLLM
def test_preset_values_a_server_rejects_are_named_with_the_option_that_drops_them(
        big_data: Path, cache: Path, tmp_path: Path) -> None:
    """`transformers serve` refuses top_k and repetition_penalty (422): the error names the preset's values
    and the flags that drop them; with those flags (or the YAML nulls) the same preset runs."""
    state = ServerState(unexpected_fields=frozenset({"top_k", "repetition_penalty"}))
    quick = ("--frames", "2", "--limit", "1", "--protocol", "paper")  # the paper protocol sends the preset's values
    with LoopbackServer(state) as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "qwen2.5-vl-7b@openai", "--model-base-url", srv.url, *quick)
        assert res.exit_code == 2, res.output
        out = " ".join(res.output.split())
        server_said = unexpected_fields_detail(["repetition_penalty", "top_k"])
        assert f'HTTP 422 from {srv.url}/chat/completions: "{server_said}"' in out
        assert ("the server does not accept top_k=1 (preset qwen2.5-vl-7b), repetition_penalty=1.05 (preset "
                "qwen2.5-vl-7b); drop them with --top-k none --repetition-penalty none (YAML: model_settings: "
                "{top_k: null, repetition_penalty: null})") in out
        assert ("no call to it succeeded: drop the settings the server does not accept (above) and give a new --out"
                in out)
        assert "check its URL, key and model name" not in out  # it is neither
        first = len(srv.state.requests)
        ok = run_cli(big_data, tmp_path / "run1", cache, "qwen2.5-vl-7b@openai", "--model-base-url", srv.url, *quick,
                     "--top-k", "none", "--repetition-penalty", "none")
        assert ok.exit_code == 0, ok.output
        bodies = [r["body"] for r in srv.state.requests[first:] if not r["judge"]]
        assert len(bodies) == TURNS
        assert all("top_k" not in b and "repetition_penalty" not in b and b["temperature"] == 0.1 for b in bodies)
        cfg = tmp_path / "run.yaml"  # the same in YAML: one spelling, flags and keys alike
        cfg.write_text(yaml.safe_dump({"model_settings": {"top_k": None, "repetition_penalty": None}}))
        yaml_run = run_cli(big_data, tmp_path / "run2", cache, "qwen2.5-vl-7b@openai", "--model-base-url", srv.url,
                           *quick, "--config", str(cfg))
        assert yaml_run.exit_code == 0, yaml_run.output


def test_a_value_the_user_set_is_named_as_theirs_with_the_roles_own_spelling(tmp_path: Path) -> None:
    state = ServerState(unexpected_fields=frozenset({"min_p", "stop_token_ids"}))
    with LoopbackServer(state) as srv:
        opts = BackendOptions(base_url=srv.url, max_retries=0, min_p=0.05,
                              extra={"extra_body": {"stop_token_ids": [7]}}).with_origin(SettingsOrigin(role="judge"))
        res = asyncio.run(_ask(OpenAIBackend("j", opts)))
    assert res.outcome == "error" and res.attempts == 1  # refused: not asked again in this run
    assert res.error is not None and res.error.endswith(
        "the server does not accept min_p=0.05, stop_token_ids=[7]; drop them with judge_settings: {min_p: null} "
        "and --judge-option 'extra_body={stop_token_ids: null}'")
    assert "(preset" not in res.error


def test_a_video_part_refused_with_a_500_hints_at_sending_images(big_data: Path, cache: Path, tmp_path: Path) -> None:
    with LoopbackServer(ServerState(video_parts_fail=True)) as srv:
        res = run_cli(big_data, tmp_path / "run", cache, "llava-onevision-7b@openai", "--model-base-url", srv.url,
                      "--frames", "2", "--limit", "1", "--model-option", "max_retries=0")
        assert res.exit_code == 3, res.output
        out = " ".join(res.output.split())
        assert f'HTTP 500 from {srv.url}/chat/completions: "Internal Server Error" (the server may not accept video ' \
               "parts, video_part=true: send the frames as images with --model-option video_part=false" in out
        images = run_cli(big_data, tmp_path / "run", cache, "llava-onevision-7b@openai", "--model-base-url", srv.url,
                         "--frames", "2", "--limit", "1", "--model-option", "video_part=false")
    assert images.exit_code == 0, images.output


async def _ask(backend: OpenAIBackend) -> GenerationResult:
    try:
        return await backend.generate(GenerationRequest(id="t", prompt="hi"))
    finally:
        await backend.aclose()
