"""gemini: context caching (``context_cache: true``) against a loopback server that follows the caches API
(tests/support/gemini_server.py): a video's frames cached once, every turn of it reading them from the cache,
the cache deleted at the end of the video, refused or vanished caches handled."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.genai")

from mtvbench.errors import ConfigError  # noqa: E402
from mtvbench.media.frames import FrameSettings, sample_frames  # noqa: E402
from mtvbench.models.registry import create_backend  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.records import GenerationRequest  # noqa: E402
from mtvbench.run.evaluate import evaluate  # noqa: E402
from mtvbench.util.timecodes import frame_label  # noqa: E402
from tests.models.test_gemini import KEY_ENV, run_cfg, stored  # noqa: E402
from tests.support.datasets import write_video  # noqa: E402
from tests.support.gemini_server import GeminiServer, GeminiState  # noqa: E402

pytestmark = pytest.mark.usefixtures("_key")


@pytest.fixture
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-123")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)


def test_a_run_caches_each_videos_frames_once_and_deletes_them(dataset: Path, tmp_path: Path) -> None:
    with GeminiServer() as srv:
        _, summary = evaluate(run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache", context_cache=True,
                                      context_cache_ttl_s=120))
    st = srv.state
    assert summary.calls == 12 and summary.call_errors == 0
    assert st.counters["cache_creates"] == 2  # two videos
    # each cache's display name is its own (a cache whose creation is never answered is found by it)
    assert {c["images"] for c in st.caches.values()} == {4}
    assert sorted(re.sub(r"^mtvbench-[0-9a-f]{12}-", "", c["display"]) for c in st.caches.values()) == [
        "vid0.mp4", "vid1.mp4"]
    assert all(r["inline"] == 0 and r["cached_content"] and r["cached_images"] == 4 for r in st.requests)
    assert st.live_caches() == [] and st.counters["cache_deletes"] == 2  # nothing left billed
    answers = stored(tmp_path / "run")
    assert all(a["outcome"] == "ok" and a["text"].endswith("[frames=4] [files=0]") for a in answers.values())
    assert {a["usage"]["cached_tokens"] for a in answers.values()} == {258 * 4}
    # the turn that made a video's cache pays for making it (as uncached prompt tokens), once per video
    prompts = sorted(a["usage"]["prompt_tokens"] for a in answers.values())
    assert prompts == [10 + 258 * 4] * 10 + [10 + 258 * 4 + 258 * 4] * 2
    usage = json.loads((tmp_path / "run" / "scores.json").read_text())["usage"]["model"]
    assert usage["cached_tokens"] == 12 * 258 * 4 and usage["cached_not_recorded"] == 0


def _frames(tmp_path: Path, name: str = "v.mp4") -> Any:
    return sample_frames(write_video(tmp_path / name), FrameSettings(num_frames=3, max_side=64))


def _backend(srv: GeminiServer, **extra: Any) -> Any:
    return create_backend("gemini:gemini-test", BackendOptions(
        base_url=srv.url, api_key_env=KEY_ENV, system="Be brief.", max_retries=2,
        extra={"retry_base_s": 0.01, "context_cache": True, **extra}))


def test_the_cache_holds_the_system_prompt_and_ends_with_its_video(tmp_path: Path) -> None:
    a, b = _frames(tmp_path, "a.mp4"), _frames(tmp_path, "b.mp4")

    async def go(srv: GeminiServer) -> list[Any]:
        be = _backend(srv)
        try:
            first = await asyncio.gather(*(be.generate(GenerationRequest(id=f"{i}", prompt=f"Current question: q{i}",
                                                                          frames=f)) for i, f in enumerate([a, a, b])))
            live = len(srv.state.live_caches())
            await be.end_video(a)
            return [first, live, srv.state.live_caches()]
        finally:
            await be.aclose()

    with GeminiServer() as srv:
        results, live, after_a = asyncio.run(go(srv))
    st = srv.state
    assert all(r.outcome == "ok" for r in results) and live == 2
    assert len(after_a) == 1 and st.caches[after_a[0]]["display"].endswith("-b.mp4")  # a's gone, b's still there
    assert st.live_caches() == []  # and b's at the end of the run
    assert {c["system"]["parts"][0]["text"] for c in st.caches.values()} == {"Be brief."}
    assert all(r["system"] is None for r in st.requests)  # the system prompt travels in the cache


@pytest.mark.parametrize("timestamps", [False, True])
def test_the_cache_holds_each_frames_time_before_it_under_frame_timestamps(tmp_path: Path, timestamps: bool) -> None:
    frames = _frames(tmp_path)

    async def go(srv: GeminiServer) -> Any:
        be = _backend(srv)
        try:
            return await be.generate(GenerationRequest(id="0", prompt="q", frames=frames, frame_timestamps=timestamps))
        finally:
            await be.aclose()

    with GeminiServer() as srv:
        res = asyncio.run(go(srv))
    assert res.outcome == "ok" and srv.state.requests[0]["cached_content"] and srv.state.requests[0]["inline"] == 0
    (cache,) = srv.state.caches.values()
    labels = [frame_label(t) for t in frames.timestamps]
    assert cache["order"] == ([x for lab in labels for x in (lab, "image")] if timestamps else ["image"] * 3)


def test_a_cache_the_api_refuses_sends_the_frames_inline(tmp_path: Path) -> None:
    frames = _frames(tmp_path)

    async def go(srv: GeminiServer) -> list[Any]:
        be = _backend(srv)
        try:
            return list(await asyncio.gather(*(be.generate(GenerationRequest(
                id=f"{i}", prompt=f"Current question: q{i}", frames=frames)) for i in range(3))))
        finally:
            await be.aclose()

    with GeminiServer(GeminiState(min_cache_tokens=4096)) as srv:  # 3 frames: too few tokens to cache
        results = asyncio.run(go(srv))
    assert all(r.outcome == "ok" and r.usage.cached_tokens == 0 for r in results)
    assert all(r["inline"] == 3 and r["cached_content"] is None for r in srv.state.requests)
    assert srv.state.counters["cache_creates"] == 0


def test_a_cache_gone_before_its_video_ended_is_made_again(tmp_path: Path) -> None:
    frames = _frames(tmp_path)

    async def go(srv: GeminiServer) -> list[Any]:
        be = _backend(srv)
        try:
            one = await be.generate(GenerationRequest(id="1", prompt="Current question: q1", frames=frames))
            for c in srv.state.caches.values():  # expired on the server
                c["expires"] = 0
            two = await be.generate(GenerationRequest(id="2", prompt="Current question: q2", frames=frames))
            return [one, two]
        finally:
            await be.aclose()

    with GeminiServer() as srv:
        one, two = asyncio.run(go(srv))
    assert one.outcome == two.outcome == "ok" and two.attempts == 2
    assert srv.state.counters["cache_creates"] == 2 and two.usage.cached_tokens == 258 * 3


def test_context_cache_needs_inline_frames_and_a_positive_ttl() -> None:
    with pytest.raises(ConfigError, match="needs input=frames"):
        create_backend("gemini:m", BackendOptions(api_key_env=KEY_ENV, extra={"context_cache": True,
                                                                              "input": "upload"}))
    with pytest.raises(ConfigError, match="context_cache_ttl_s"):
        create_backend("gemini:m", BackendOptions(api_key_env=KEY_ENV, extra={"context_cache": True,
                                                                              "context_cache_ttl_s": 0}))
    with pytest.raises(ConfigError, match="context_cache_delete_s"):
        create_backend("gemini:m", BackendOptions(api_key_env=KEY_ENV, extra={"context_cache": True,
                                                                              "context_cache_delete_s": -1}))


@pytest.mark.parametrize("context", ["golden", "self", "none"])
def test_inline_frames_are_a_byte_identical_prefix_of_every_turn_of_a_video(dataset: Path, tmp_path: Path,
                                                                           context: str) -> None:
    """Without an explicit cache (Gemini's implicit caching): every request of a video carries the same system
    instruction and the same inline frame parts, in the same encoding, before its text (Figure 15's order)."""
    write_video(dataset / "videos" / "vid1.mp4", n_frames=40)  # the two videos differ
    with GeminiServer() as srv:
        cfg = run_cfg(dataset, tmp_path / "run", srv.url, tmp_path / "cache")
        model = cfg.model_settings.model_copy(update={"system": "You watch videos."})
        evaluate(cfg.model_copy(update={"context": context, "model_settings": model}))
    prefixes: dict[str, set[bytes]] = {}
    for r in srv.state.requests:
        body = json.loads(r["raw"])
        parts = [p for c in body["contents"] for p in c["parts"]]
        assert "text" in parts[-1] and len(parts) == 5 and all("text" not in p for p in parts[:-1])  # frames first
        assert body["systemInstruction"]["parts"] == [{"text": "You watch videos."}]
        raw = r["raw"]
        start = raw.index(b'"contents"')
        prefix = raw[start: raw.index(b'{"text"', start)]  # every part before the text: the frames
        video = "vid0" if any(f"about the {s} clip?" in r["text"] for s in ("object_reference", "summary",
                                                                            "topic_shifting")) else "vid1"
        prefixes.setdefault(video, set()).add(prefix)
    assert sorted(prefixes) == ["vid0", "vid1"] and all(len(p) == 1 for p in prefixes.values())
    assert prefixes["vid0"] != prefixes["vid1"]
