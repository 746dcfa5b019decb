"""gemini: backend against a real HTTP server speaking the Gemini REST protocol (tests/support/gemini_server.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.genai")

from google.genai import errors as genai_errors  # noqa: E402

from mtvbench.media.frames import FrameSettings, sample_frames  # noqa: E402
from mtvbench.models.gemini import classify_error, retry_delay  # noqa: E402
from mtvbench.models.registry import MissingKeyError, create_backend  # noqa: E402
from mtvbench.models.resilience import FatalError, RetryableError  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.records import GenerationRequest  # noqa: E402
from mtvbench.run.evaluate import evaluate  # noqa: E402
from mtvbench.run.settings import build_config  # noqa: E402
from mtvbench.run.store import RunStore  # noqa: E402
from tests.support.datasets import write_video  # noqa: E402
from tests.support.gemini_server import GeminiServer, GeminiState  # noqa: E402

KEY_ENV = "MTVBENCH_TEST_GEMINI_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-123")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)


def run_cfg(data: Path, out: Path, url: str, cache: Path, **extra: Any):
    return build_config({
        "data": data, "model": "gemini:gemini-test", "judge": "offline", "out": out, "frames": 4,
        "judge_runs": 1, "concurrency": 4, "cache_dir": cache, "bootstrap": 0,
        "model_settings": {"base_url": url, "api_key_env": KEY_ENV, "timeout_s": 20, "max_retries": 3,
                           "extra": {"retry_base_s": 0.01, "upload_poll_s": 0.01, **extra}},
    })


def stored(run: Path) -> dict[str, dict[str, Any]]:
    store = RunStore(run, create=False)
    try:
        return store.responses()
    finally:
        store.close()


def test_inline_frames_run_end_to_end(dataset: Path, tmp_path: Path) -> None:
    with GeminiServer() as srv:
        scores, summary = evaluate(run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    reqs = srv.state.requests
    assert summary.calls == 12 and summary.call_errors == 0 and len(reqs) == 12
    assert all(r["inline"] == 4 and r["files"] == [] for r in reqs)  # 4 JPEG parts per call
    assert srv.state.counters["uploads"] == 0
    assert set(srv.state.api_keys) == {"test-key-123"}
    r3 = next(r for r in reqs if "Question 3 about the summary clip" in r["text"])
    assert "Assistant: The red square moves right in round 2 and the blue circle stays." in r3["text"]
    answers = stored(tmp_path / "run")
    assert len(answers) == 12 and all(a["outcome"] == "ok" for a in answers.values())
    assert all(a["text"].endswith("[frames=4] [files=0]") for a in answers.values())
    assert all(a["usage"]["prompt_tokens"] == 10 + 258 * 4 for a in answers.values())
    s = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert s["counts"]["scored_turns"] == 12 and scores.overall == s["overall"]


def test_upload_once_per_video_and_deleted_after_run(dataset: Path, tmp_path: Path) -> None:
    with GeminiServer(GeminiState(processing_polls=2)) as srv:
        _, summary = evaluate(run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache", input="upload"))
    st = srv.state
    assert summary.calls == 12 and summary.call_errors == 0
    # two videos, six dialogues, twelve turns: exactly one upload per video
    assert st.counters["upload_starts"] == 2 and st.counters["uploads"] == 2
    assert st.uploads_of("mtvbench-vid0.mp4") == 1 and st.uploads_of("mtvbench-vid1.mp4") == 1
    for f in st.files.values():  # the bytes that arrived are the video file, with its mime type
        name = f["displayName"].removeprefix("mtvbench-")
        assert f["data"] == (dataset / "videos" / name).read_bytes() and f["mimeType"] == "video/mp4"
    assert st.counters["file_gets"] >= 2  # waited for ACTIVE (PROCESSING on the first poll)
    assert all(r["inline"] == 0 and len(r["files"]) == 1 for r in st.requests)
    uris = {r["files"][0] for r in st.requests}
    assert len(uris) == 2  # every turn of a video reuses its one handle
    assert st.counters["deletes"] == 2 and all(f["deleted"] for f in st.files.values())
    assert all(a["text"].endswith("[frames=0] [files=1]") for a in stored(tmp_path / "run").values())


def test_blocks_are_final_and_replies_without_an_answer_are_retried(dataset: Path, tmp_path: Path) -> None:
    def block(question: str, attempt: int) -> str | None:
        if "Question 3 about the summary" in question:
            return "finish"
        if "Question 5 about the summary" in question:
            return "prompt"
        if "Question 3 about the memory" in question:
            return "max_tokens"
        if "Question 5 about the memory" in question and attempt == 1:
            return "empty"  # no candidates, no block reason: asked again
        if "Question 3 about the object" in question and attempt == 1:
            return "html"  # a proxy's page instead of JSON: asked again
        return None

    with GeminiServer(GeminiState(block=block)) as srv:
        _, summary = evaluate(run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    assert summary.calls == 12 and summary.call_errors == 0  # not errors, not crashes
    assert summary.blocked == 2 and summary.empty == 1  # counted for the run summary
    answers = stored(tmp_path / "run")
    by_q = {a["prompt"].rsplit("Current question: ", 1)[-1]: a for a in answers.values()}
    finish = by_q["Question 3 about the summary clip?"]
    assert finish["outcome"] == "blocked" and "SAFETY" in finish["error"]
    prompt = by_q["Question 5 about the summary clip?"]
    assert prompt["outcome"] == "blocked" and prompt["error"] == "prompt blocked: SAFETY"
    out_of_tokens = by_q["Question 3 about the memory_recall clip?"]
    assert out_of_tokens["outcome"] == "empty" and "MAX_TOKENS" in out_of_tokens["error"]
    for q in ("Question 5 about the memory_recall clip?", "Question 3 about the object_reference clip?"):
        assert by_q[q]["outcome"] == "ok" and by_q[q]["attempts"] == 2, q
    assert sum(a["outcome"] == "ok" for a in answers.values()) == 9
    # a second run resumes: blocked / empty are final outcomes, nothing is asked again
    with GeminiServer(GeminiState(block=block)) as srv2:
        evaluate(run_cfg(dataset, tmp_path / "run", srv2.url, tmp_path / "cache"))
    assert srv2.state.counters["generate"] == 0


def test_a_reply_that_never_holds_an_answer_ends_as_error_not_empty(dataset: Path, tmp_path: Path) -> None:
    state = GeminiState(block=lambda q, attempt: "empty" if "Question 3 about the summary" in q else None)
    with GeminiServer(state) as srv:
        _, summary = evaluate(run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache"))
    row = next(a for a in stored(tmp_path / "run").values()
               if a["prompt"].endswith("Current question: Question 3 about the summary clip?"))
    assert row["outcome"] == "error" and row["attempts"] == 4  # 1 + max_retries=3, the true count
    assert "no candidates" in row["error"] and srv.url in row["error"]
    assert summary.call_errors == 1 and summary.empty == 0


def _frames(tmp_path: Path):
    return sample_frames(write_video(tmp_path / "v.mp4"), FrameSettings(num_frames=3, max_side=64))


def test_quota_errors_are_retried_then_recorded(tmp_path: Path) -> None:
    frames = _frames(tmp_path)

    async def go(state: GeminiState, max_retries: int) -> list:
        with GeminiServer(state) as srv:
            b = create_backend("gemini:gemini-test", BackendOptions(
                base_url=srv.url, api_key_env=KEY_ENV, max_retries=max_retries, extra={"retry_base_s": 0.01}))
            try:
                return await asyncio.gather(*(b.generate(GenerationRequest(
                    id=str(i), prompt=f"Current question: q{i}", frames=frames)) for i in range(6)))
            finally:
                await b.aclose()

    flaky = GeminiState(rate_limit_every=2, retry_delay="0.02s")
    results = asyncio.run(go(flaky, 3))
    assert flaky.counters["rate_limited"] == 3
    assert all(r.outcome == "ok" for r in results) and sorted(r.attempts for r in results) == [1, 1, 1, 2, 2, 2]
    exhausted = GeminiState(rate_limit_always=True, retry_delay="0.01s")
    results = asyncio.run(go(exhausted, 1))
    assert all(r.outcome == "error" and "RESOURCE_EXHAUSTED" in (r.error or "") for r in results)
    assert exhausted.counters["generate"] == 12  # 6 requests x (1 + 1 retry)


def test_retry_delay_and_error_classes() -> None:
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
                      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
                                  {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]}}
    err = genai_errors.ClientError(429, body)
    assert retry_delay(err) == 12.0
    mapped = classify_error(err)
    assert isinstance(mapped, RetryableError) and mapped.retry_after == 12.0
    assert isinstance(classify_error(genai_errors.ServerError(503, {"error": {"code": 503}})), RetryableError)
    bad = classify_error(genai_errors.ClientError(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                                  "message": "bad"}}))
    assert isinstance(bad, FatalError) and "INVALID_ARGUMENT" in str(bad)


def test_generation_settings_system_and_thoughts(tmp_path: Path) -> None:
    frames = _frames(tmp_path)

    async def go(srv: GeminiServer):
        b = create_backend("gemini:gemini-test", BackendOptions(
            base_url=srv.url, api_key_env=KEY_ENV, temperature=0.2, top_k=40, max_tokens=256, system="Be brief.",
            extra={"thinking_budget": 512, "include_thoughts": True, "safety": "off"}))
        try:
            return await b.generate(GenerationRequest(id="a", prompt="Current question: colour?", frames=frames))
        finally:
            await b.aclose()

    with GeminiServer() as srv:
        res = asyncio.run(go(srv))
    req = srv.state.requests[0]
    assert req["system"]["parts"][0]["text"] == "Be brief."
    cfg = req["config"]
    assert cfg["temperature"] == 0.2 and cfg["topK"] == 40 and cfg["maxOutputTokens"] == 256
    thinking = cfg.get("thinkingConfig") or cfg.get("thinking_config")
    assert (thinking.get("thinkingBudget") or thinking.get("thinking_budget")) == 512
    assert {s["threshold"] for s in req["safety"]} == {"BLOCK_NONE"}
    assert res.outcome == "ok" and res.text == "Answer to: colour? [frames=3] [files=0]"
    assert res.reasoning == "thinking about the frames"  # thought parts are kept apart from the answer


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        create_backend("gemini:gemini-2.5-pro")
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    assert create_backend("gemini:gemini-2.5-pro").name == "gemini:gemini-2.5-pro"


def test_mtvbench_run_on_bundled_sample_uploads_each_video_once(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mtvbench.cli import app
    from mtvbench.data.sample import materialize

    data = materialize(tmp_path / "sample")
    with GeminiServer() as srv:
        res = CliRunner().invoke(app, [
            "run", "--data", str(data), "--model", "gemini:gemini-test", "--judge", "offline",
            "--out", str(tmp_path / "run"), "--model-base-url", srv.url, "--model-api-key-env", KEY_ENV,
            "--model-option", "input=upload", "--model-option", "upload_poll_s=0.01", "--frames", "8",
            "--judge-runs", "1", "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    assert res.exit_code == 0, res.output
    n_videos = len(list((data / "videos").glob("*.mp4")))
    assert srv.state.counters["uploads"] == n_videos  # one upload per video for every turn of the run
    s = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert s["complete"] and s["counts"]["scored_turns"] == len(srv.state.requests)


def test_the_google_key_goes_only_to_google(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GEMINI_API_KEY is for Google's endpoint: a custom base URL without api_key_env gets a placeholder."""
    monkeypatch.setenv("GEMINI_API_KEY", "gem-secret-0123456789")
    frames = _frames(tmp_path)

    async def go(url: str) -> Any:
        b = create_backend("gemini:gemini-test", BackendOptions(base_url=url, retry_base_s=0.01))
        try:
            return await b.generate(GenerationRequest(id="a", prompt="Current question: colour?", frames=frames))
        finally:
            await b.aclose()

    with GeminiServer() as srv:
        res = asyncio.run(go(srv.url))
    assert res.outcome == "ok" and srv.state.api_keys == ["EMPTY"]
