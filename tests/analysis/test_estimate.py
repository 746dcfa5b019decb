"""``mtvbench estimate``: requests, tokens, cached tokens under both orders, cost and time, calling nothing and
decoding no video; kept in the run directory and shown by ``report`` beside what the run used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtvbench.analysis.estimate import VERDICT_REPLY, read_estimate, simulate_hits
from mtvbench.scoring.tokens import text_tokens
from tests.support.datasets import write_video
from tests.support.openai_server import LoopbackServer, ServerState
from tests.support.run_helpers import cli, cli_run, settings


def test_the_order_simulation() -> None:
    videos = [[1] * 5, [1] * 3, [1] * 4]  # golden context: every turn on its own
    assert sum(simulate_hits(videos, 16, 4, cache_aware=True)) == 12 - 3  # each prefix computed once: the ideal
    assert sum(simulate_hits(videos, 16, 4, cache_aware=False)) == 0  # all sent together: none finds it cached
    assert sum(simulate_hits(videos, 1, 4, cache_aware=False)) == 12 - 3  # one at a time: every later one hits
    assert simulate_hits([[3, 2]], 16, 1, cache_aware=False) == [3]  # self context: chains wait for their answers
    assert simulate_hits([[1] * 40], 16, 1, cache_aware=False) == [24]  # 16 at once, then the rest hit


@pytest.fixture
def no_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any frame decode or HTTP request fails the test."""
    import httpx

    import mtvbench.media.frames as frames

    def forbidden(*a: object, **k: object) -> None:
        raise AssertionError("estimate decoded a video or called a server")

    for name in ("sample_frames", "sample_rgb", "_decode", "_decode_all"):
        monkeypatch.setattr(frames, name, forbidden)
    monkeypatch.setattr(httpx.Client, "send", forbidden)
    monkeypatch.setattr(httpx.AsyncClient, "send", forbidden)


def test_estimate_counts_without_calling_anything(dataset: Path, tmp_path: Path, no_calls: None) -> None:
    res = cli("estimate", "--data", dataset, "--model", "openai:gpt-4o", "--judge", "openai:gemini-2.5-flash",
              "--frames", "4", "--judge-runs", "2", "--max-tokens", "100", "--latency", "2", "--format", "json",
              "--config", _prices(tmp_path))
    assert res.exit_code == 0, res.output
    est = json.loads(res.stdout)
    m, j = est["model_role"], est["judge_role"]
    assert (m["requests"], j["requests"]) == (12, 24) and est["videos"] == 2
    # 4 frames of 64x48 (one 512 px tile each: 85 + 170) per request, plus the text
    assert m["prompt_tokens"] > 12 * 4 * 255 and est["prefix_tokens"] == 2 * (4 * 255 + 4)
    # 1024-token prefixes (OpenAI caches from 1024, in steps of 128): each video's 6 turns, the first computes it
    assert m["cached_tokens"]["cache_aware"] == est["ideal_cached"] == 2 * 5 * 1024
    assert m["cached_tokens"]["today"] == 0  # 12 turns, 16 in flight: all sent together, none finds it cached
    cached = m["cached_tokens"]["cache_aware"]
    assert m["cost"]["cache_aware"] == pytest.approx(((m["prompt_tokens"] - cached) * 2.5 + cached * 1.25
                                                      + 1200 * 10.0) / 1e6)
    assert m["completion_tokens"] == 1200 and m["completion_source"].startswith("max_tokens")
    assert m["cost"]["today"] == pytest.approx((m["prompt_tokens"] * 2.5 + 1200 * 10.0) / 1e6)
    assert est["seconds"] == pytest.approx(max(12 * 2 / 16, 24 * 2 / 16) + 2)
    # the judge's max_tokens is not set: its reply is assumed to be the verdict JSON alone, and said so
    assert j["completion_tokens"] == 24 * (text_tokens(VERDICT_REPLY) + 1) and "assumed" in j["completion_source"]


def _prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text("prices: {model: {input: 2.5, output: 10.0, cached_input: 1.25}}\n")
    return path


def test_an_unknown_model_says_rule_unknown(dataset: Path, no_calls: None) -> None:
    res = cli("estimate", "--data", dataset, "--model", "openai:my-model", "--judge", "offline", "--frames", "4")
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "rule unknown" in out and "nothing was called" in out


def _synthetic(root: Path, dialogues: int, videos: int) -> Path:
    """``dialogues`` one-turn dialogues over ``videos`` videos (golden context: one model request each)."""
    stems = ("object_reference", "memory_recall", "summary", "answer_refusal", "topic_shifting",
             "proactive_interaction")
    ability = {"object_reference": "Object Reference", "memory_recall": "Memory Recall", "summary": "Summary",
               "answer_refusal": "Answer Refusal", "topic_shifting": "Topic Shifting",
               "proactive_interaction": "Proactive Interaction"}
    mtqa: dict = {s: {} for s in stems}
    checklists: dict = {s: {} for s in stems}
    for d in range(dialogues):
        stem, video = stems[d % 6], f"v{d % videos}"
        mtqa[stem].setdefault(video, []).append({"event_index": d, "mtqa": {"Round 1": {
            "User": f"Question of dialogue {d}?", "Assistant": f"Answer {d}.", "Ability": ability[stem]}}})
        checklists[stem].setdefault(video, {})[str(d)] = [{"round index": 1, "Q1": "Does it say so?", "A1": "Yes"}]
    (root / "mtqa").mkdir(parents=True)
    (root / "checklist").mkdir()
    for s in stems:
        (root / "mtqa" / f"{s}.json").write_text(json.dumps(mtqa[s]))
        (root / "checklist" / f"{s}_CheckList.json").write_text(json.dumps(checklists[s]))
    for v in range(videos):
        write_video(root / "videos" / f"v{v}.mp4", n_frames=8)
    return root


def test_a_thousand_dialogues_cache_aware_reaches_the_ideal(tmp_path: Path, no_calls: None) -> None:
    data = _synthetic(tmp_path / "data", 1000, 12)
    res = cli("estimate", "--data", data, "--model", "gemini:gemini-2.5-flash", "--judge", "offline",
              "--frames", "4", "--format", "json")
    assert res.exit_code == 0, res.output
    est = json.loads(res.stdout)
    m = est["model_role"]
    assert m["requests"] == 1000 and est["frame_rule"] == "Gemini per image"
    assert est["prefix_tokens"] == 12 * (4 * 258 + 4)
    assert m["cached_tokens"]["cache_aware"] == est["ideal_cached"] == (1000 - 12) * (4 * 258 + 4)
    assert 0 < m["cached_tokens"]["today"] < est["ideal_cached"]  # 16 in flight: some wait and then hit


def test_the_report_shows_the_estimate_beside_what_the_run_used(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with LoopbackServer(ServerState(prefix_cache=True)) as srv:
        values = settings(dataset, run, srv.url, tmp_path / "cache", model="openai:gpt-4o", limit=1, tasks=["OR"])
        cfg = tmp_path / "run.yaml"
        cfg.write_text(json.dumps(values))
        est = cli("estimate", "--config", cfg, "--max-tokens", "100")
        assert est.exit_code == 0, est.output
        assert read_estimate(run) is not None
        assert cli_run(values).exit_code == 0
    again = cli("estimate", "--config", cfg, "--from-run", run, "--format", "json")  # means of the stored calls
    assert again.exit_code == 0, again.output
    m = json.loads(again.stdout)["model_role"]
    assert m["completion_source"] == "from-run" and m["completion_tokens"] == 2 * 7 and m["latency_s"] > 0
    res = cli("report", run, "--out", tmp_path / "rep", "--thumbnails", "0")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "rep" / "report.html").read_text()
    section = html[html.index("Estimate vs actual"):]
    assert "<td class=\"t\">estimate</td>" in section and "<td class=\"t\">actual</td>" in section


def test_a_served_preset_is_estimated_before_its_server_exists(dataset: Path, no_calls: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``estimate`` calls nothing, so a preset run on a server the user starts needs no URL yet (``run`` does)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    res = cli("estimate", "--data", dataset, "--model", "qwen3-vl-8b-instruct@openai", "--judge", "offline",
              "--frames", "4", "--format", "json")
    assert res.exit_code == 0, res.output
    est = json.loads(res.stdout)
    assert est["model_role"]["requests"] == 12 and est["model_role"]["prompt_tokens"] > 0
    refused = cli("run", "--data", dataset, "--model", "qwen3-vl-8b-instruct@openai", "--judge", "offline",
                  "--frames", "4", "--out", dataset.parent / "never")
    assert refused.exit_code == 2 and "--model-base-url" in refused.output
    assert not (dataset.parent / "never").exists()


def test_clip_sampling_estimate_says_what_it_costs_under_each_choice(tmp_path: Path) -> None:
    """Under --sampling clip a video's turns are sent different frames: fewer cached tokens than uniform, the
    same requests and prompt tokens; the estimate gives both rows and counts the distinct frame sets."""
    from mtvbench.analysis.estimate import estimate_config
    from mtvbench.data.sample import materialize
    from mtvbench.run.settings import build_config

    root = materialize(tmp_path / "sample")
    base = {"data": root, "model": "openai:gpt-4o", "judge": "offline", "out": tmp_path / "run", "protocol": "paper"}
    uni = estimate_config(build_config(base, needs_server=False))
    clip = estimate_config(build_config({**base, "sampling": "clip"}, needs_server=False))
    assert set(uni.sampling) == set(clip.sampling) == {"uniform", "clip"}
    assert clip.sampling["uniform"].model_dump() == uni.model_role.model_dump()
    assert clip.model_role.requests == uni.model_role.requests
    assert clip.model_role.prompt_tokens == uni.model_role.prompt_tokens
    for order in ("today", "cache_aware"):
        assert clip.model_role.cached_tokens[order] < uni.model_role.cached_tokens[order]
    assert uni.frame_sets == uni.videos < clip.frame_sets
    assert clip.ideal_cached < uni.ideal_cached
    timed = estimate_config(build_config({**base, "frame_timestamps": "on"}, needs_server=False))
    assert timed.model_role.prompt_tokens > uni.model_role.prompt_tokens  # each frame's time label


@pytest.mark.parametrize(("options", "labelled"), [({"video_part": True}, False), ({}, True)],
                         ids=["video-part", "images"])
def test_time_labels_are_counted_only_where_they_are_sent_as_text(tmp_path: Path, options: dict[str, object],
                                                                  labelled: bool) -> None:
    """Under --frame-timestamps on a frame's time is text before its image, but metadata of a video part (vLLM's
    media_io_kwargs): the estimate counts label tokens only in the first case."""
    from mtvbench.analysis.estimate import estimate_config
    from mtvbench.data.sample import materialize
    from mtvbench.run.settings import build_config

    root = materialize(tmp_path / "sample")
    base = {"data": root, "model": "openai:Qwen/Qwen3-VL-8B-Instruct", "judge": "offline", "out": tmp_path / "run",
            "protocol": "paper", "model_settings": {"extra": options}}
    off = estimate_config(build_config(base, needs_server=False)).model_role.prompt_tokens
    on = estimate_config(build_config({**base, "frame_timestamps": "on"}, needs_server=False)).model_role.prompt_tokens
    assert off is not None and on is not None
    assert (on > off) is labelled and (on == off) is not labelled
