"""gemini: every context cache a run made is deleted, or named with its expiry (the run's output and
scores.json) and deleted by the next run in the same directory; a cache gone mid-video is made again once;
SIGINT and SIGTERM close the run as its end does. Against the loopback server of tests/support/gemini_server.py
with its caches API faults (deletes failing or hanging, creates failing or answered too late, caches
vanishing), in this process and as a ``mtvbench run`` process sent a signal."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("google.genai")

from mtvbench.media.frames import FrameSettings, sample_frames  # noqa: E402
from mtvbench.models.registry import create_backend  # noqa: E402
from mtvbench.models.settings import BackendOptions  # noqa: E402
from mtvbench.records import GenerationRequest  # noqa: E402
from tests.models.test_gemini import KEY_ENV, run_cfg  # noqa: E402
from tests.support.datasets import write_video  # noqa: E402
from tests.support.gemini_server import GeminiServer, GeminiState  # noqa: E402
from tests.support.run_helpers import cli, mtvbench_cmd, subprocess_env  # noqa: E402

#: the deadline of deleting one cache in these tests (retries included)
DELETE_S = 1.0


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-123")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)


def values(data: Path, out: Path, url: str, cache: Path, timeout_s: float = 20, **extra: Any) -> dict[str, Any]:
    """The settings of a cached Gemini run as YAML-able values (for ``--config``)."""
    cfg = run_cfg(data, out, url, cache, context_cache=True, context_cache_ttl_s=600,
                  context_cache_delete_s=DELETE_S, **extra)
    cfg = cfg.model_copy(update={"model_settings": cfg.model_settings.model_copy(update={"timeout_s": timeout_s})})
    return json.loads(cfg.model_dump_json(exclude_defaults=True))


def config(tmp_path: Path, v: dict[str, Any]) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(v))
    return path


def scores(run: Path) -> dict[str, Any]:
    return json.loads((run / "scores.json").read_text())


def left_named(run: Path) -> set[str]:
    """The caches scores.json names as left on the server (each with its expiry)."""
    left = scores(run).get("left_on_server", [])
    assert all(x["expires"] for x in left)
    return {x["name"].rsplit("/", 1)[-1] for x in left}


def assert_each_live_cache_named(state: GeminiState, output: str, run: Path) -> None:
    live = set(state.live_caches())
    assert all(f"cachedContents/{cid}" in output for cid in live), (live, output)
    assert live <= left_named(run)


def signalled(tmp_path: Path, v: dict[str, Any], ready: Callable[[], bool], sig: int,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``mtvbench run`` as a process, sent ``sig`` once ``ready()`` holds; its exit status and output."""
    proc = subprocess.Popen(mtvbench_cmd("run", "--config", config(tmp_path, v), "--quiet"), env=subprocess_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the run ended (or did not get there) before the signal: {proc.returncode}\n{out}\n{err}")
        time.sleep(0.02)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the run did not end after the signal\n{out}\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# ------------------------------------------------------------------ deletes that fail
def test_a_delete_answered_500_is_retried_and_the_cache_named_with_its_expiry(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with GeminiServer(GeminiState(delete_status=500)) as srv:
        res = cli("run", "--config", config(tmp_path, values(dataset, run, srv.url, tmp_path / "c")), "--quiet")
        live = set(srv.state.live_caches())
        assert srv.state.counters["cache_delete_requests"] > srv.state.counters["cache_creates"]  # retried
    assert len(live) == 2 and "Traceback" not in res.output
    assert_each_live_cache_named(srv.state, res.output, run)
    assert "expires" in res.output and "could not be deleted" in res.output
    assert res.exit_code == 0  # the scores are whole; the caches are a cost, said


def test_a_delete_that_hangs_ends_at_its_deadline_and_the_cache_is_named(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with GeminiServer(GeminiState(delete_hang_s=30)) as srv:
        start = time.monotonic()
        res = cli("run", "--config", config(tmp_path, values(dataset, run, srv.url, tmp_path / "c")), "--quiet")
        took = time.monotonic() - start
        assert took < 30, took  # the deletes hang for 30 s; their deadline is DELETE_S each
        assert_each_live_cache_named(srv.state, res.output, run)
    assert res.exit_code == 0 and "Traceback" not in res.output and len(left_named(run)) == 2


def test_every_create_answered_500_is_one_error_and_no_traceback(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with GeminiServer(GeminiState(create_status=500)) as srv:
        res = cli("run", "--config", config(tmp_path, values(dataset, run, srv.url, tmp_path / "c")), "--quiet")
    assert res.exit_code == 3 and "Traceback" not in res.output and "never retrieved" not in res.output
    assert srv.state.live_caches() == [] and scores(run)["left_on_server"] == []
    assert res.output.count("HTTP 500") <= 1  # said once (the last failure), not once per turn


def test_a_create_answered_after_the_clients_timeout_leaves_no_cache(dataset: Path, tmp_path: Path) -> None:
    """The server makes the cache but answers after the client gave up: the client never learns its name,
    finds it by the display name it gave it and deletes it."""
    run = tmp_path / "run"
    with GeminiServer(GeminiState(create_delay_s=2.5)) as srv:
        res = cli("run", "--config", config(tmp_path, values(dataset, run, srv.url, tmp_path / "c", timeout_s=1)),
                  "--quiet")
        time.sleep(0.1)
        assert srv.state.counters["cache_creates"] >= 2  # made on the server, every one
        assert srv.state.live_caches() == [], res.output
    assert "Traceback" not in res.output


def test_a_creation_that_fails_after_its_turns_gave_up_is_neither_printed_nor_left(tmp_path: Path) -> None:
    """The turn's deadline passes first (its wait for the shared creation is cancelled), then the creation
    fails on the client's own timeout: nobody waits for it any more, and asyncio must not print its error with
    a traceback (the issue's "every create 500: a traceback is printed"); the cache it made is deleted."""
    frames = sample_frames(write_video(tmp_path / "v.mp4"), FrameSettings(num_frames=3, max_side=64))

    async def go(srv: GeminiServer) -> tuple[Any, list[str]]:
        reported: list[str] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx["message"]))
        be = create_backend("gemini:gemini-test", BackendOptions(
            base_url=srv.url, api_key_env=KEY_ENV, timeout_s=0.5, max_retries=0,
            extra={"context_cache": True, "context_cache_delete_s": DELETE_S}))
        try:
            res = await be.generate(GenerationRequest(id="0", prompt="Current question: q0", frames=frames))
            await asyncio.sleep(1.0)  # the creation has failed by now, with nobody waiting for it
        finally:
            await be.aclose()
        del be
        gc.collect()
        await asyncio.sleep(0)
        return res, reported

    with GeminiServer(GeminiState(create_delay_s=1.0)) as srv:
        res, reported = asyncio.run(go(srv))
        time.sleep(0.6)
        assert srv.state.counters["cache_creates"] == 1 and srv.state.live_caches() == []
    assert res.outcome == "error" and reported == []


# ------------------------------------------------------------------ a cache gone mid-video
@pytest.mark.parametrize("status", [403, 404])
def test_a_cache_gone_mid_video_is_made_again_once_for_eight_turns_at_once(tmp_path: Path, status: int) -> None:
    frames = sample_frames(write_video(tmp_path / "v.mp4"), FrameSettings(num_frames=3, max_side=64))

    async def go(srv: GeminiServer) -> list[Any]:
        be = create_backend("gemini:gemini-test", BackendOptions(
            base_url=srv.url, api_key_env=KEY_ENV, max_retries=3,
            extra={"retry_base_s": 0.01, "context_cache": True, "context_cache_delete_s": DELETE_S}))
        try:
            first = await be.generate(GenerationRequest(id="0", prompt="Current question: q0", frames=frames))
            rest = await asyncio.gather(*(be.generate(GenerationRequest(id=f"{i}", prompt=f"Current question: q{i}",
                                                                        frames=frames)) for i in range(1, 9)))
            await be.end_video(frames)
            return [first, *rest]
        finally:
            await be.aclose()

    # q8 is told that the first cache is gone only after the others made the new one: that late word about
    # the old cache must leave the new one in place (else a third cache is made and the second one leaks)
    state = GeminiState(vanish_caches=1, vanish_after=1, vanish_status=status, generate_delay_s=0.05,
                        delay_of=lambda q: 0.8 if q == "q8" else 0.0)
    with GeminiServer(state) as srv:
        results = asyncio.run(go(srv))
    assert [r.outcome for r in results] == ["ok"] * 9, [r.error for r in results]
    assert state.counters["vanished"] == 1 and state.counters["cache_creates"] == 2  # made again once
    assert results[8].attempts == 2  # q8: its first attempt found the old cache gone
    assert state.live_caches() == []
    assert all(r.usage.cached_tokens == 258 * 3 for r in results)


# ------------------------------------------------------------------ signals
def _cached_calls(state: GeminiState, n: int) -> Callable[[], bool]:
    return lambda: state.counters["cached_generate"] >= n


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_video_closes_the_run_and_deletes_its_caches(dataset: Path, tmp_path: Path, sig: int,
                                                                   code: int) -> None:
    run = tmp_path / "run"
    with GeminiServer(GeminiState(generate_delay_s=0.4)) as srv:
        out = signalled(tmp_path, values(dataset, run, srv.url, tmp_path / "c", concurrency=2),
                        _cached_calls(srv.state, 2), sig)
        assert out.returncode == code, out.stdout + out.stderr
        assert srv.state.live_caches() == []
    assert "Traceback" not in out.stderr
    assert "everything finished so far is stored" in out.stderr
    assert scores(run)["left_on_server"] == []  # the score files are written as at the run's end


def test_sigint_while_creates_are_in_flight_deletes_the_caches_they_make(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    state = GeminiState(create_delay_s=1.5)
    with GeminiServer(state) as srv:
        out = signalled(tmp_path, values(dataset, run, srv.url, tmp_path / "c"),
                        lambda: state.counters["cache_create_requests"] >= 1, signal.SIGINT)
        assert out.returncode == 130, out.stdout + out.stderr
        assert state.counters["cache_creates"] >= 1
        assert state.live_caches() == [], out.stderr
    assert "Traceback" not in out.stderr


# ------------------------------------------------------------------ the next run cleans up
def test_sigterm_with_every_delete_failing_names_each_cache_and_the_next_run_deletes_them(
        dataset: Path, tmp_path: Path) -> None:
    """The issue's scenario: deletes fail, a cache vanishes mid-video (made again), SIGTERM mid-run: every
    cache left is named (output and scores.json); the next run, with deletes accepted, deletes them."""
    run = tmp_path / "run"
    state = GeminiState(delete_status=500, vanish_caches=1, vanish_after=1, generate_delay_s=0.3)
    with GeminiServer(state) as srv:
        v = values(dataset, run, srv.url, tmp_path / "c", concurrency=3)
        out = signalled(tmp_path, v, lambda: state.counters["vanished"] >= 1 and
                        state.counters["cache_creates"] >= 2 and state.counters["cached_generate"] >= 3,
                        signal.SIGTERM)
        assert out.returncode == 143, out.stdout + out.stderr
        live = set(state.live_caches())
        assert live and "Traceback" not in out.stderr
        assert_each_live_cache_named(state, out.stderr, run)
        state.delete_status = 0
        state.generate_delay_s = 0
        again = cli("run", "--config", config(tmp_path, v), "--quiet")
        assert again.exit_code == 0, again.output
        assert state.live_caches() == []
    assert all(f"cachedContents/{cid}" in again.output for cid in live)  # it says which it deleted
    assert "left by an earlier run" in again.output
    assert scores(run)["left_on_server"] == []


def test_a_killed_run_leaves_its_caches_to_their_ttl_and_the_next_run_deletes_them(dataset: Path,
                                                                                   tmp_path: Path) -> None:
    run = tmp_path / "run"
    state = GeminiState(generate_delay_s=0.4)
    with GeminiServer(state) as srv:
        v = values(dataset, run, srv.url, tmp_path / "c", concurrency=2)
        signalled(tmp_path, v, _cached_calls(state, 2), signal.SIGKILL)
        live = set(state.live_caches())
        assert live  # nothing can run after kill -9: the caches wait for their TTL
        state.generate_delay_s = 0
        again = cli("run", "--config", config(tmp_path, v), "--quiet")
        assert again.exit_code == 0, again.output
        assert state.live_caches() == []
    assert "left by an earlier run" in again.output and all(f"cachedContents/{c}" in again.output for c in live)
