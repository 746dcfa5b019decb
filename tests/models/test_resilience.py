"""The one call path (models/resilience.py) and key routing (models/endpoints.py), piece by piece."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path

import httpx
import pytest

from mtvbench.config import ConfigError
from mtvbench.models.endpoints import (
    OPENAI_DEFAULT_URL,
    PLACEHOLDER_KEY,
    effective_base_url,
    gemini_endpoint,
    openai_endpoint,
)
from mtvbench.models.registry import MissingKeyError, create_backend
from mtvbench.models.resilience import (
    CircuitBreaker,
    CircuitOpenError,
    ResponseTooLarge,
    backoff_s,
    capped_http_client,
    parse_retry_after,
    quote_server_text,
)
from mtvbench.models.settings import BackendOptions
from mtvbench.records import GenerationRequest, GenerationResult
from mtvbench.run.settings import build_config
from mtvbench.util.secrets import redact_secrets as redact
from tests.support.openai_server import Faults, LoopbackServer, ServerState, always

KEY_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_GENAI_USE_VERTEXAI")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------ waits and messages
def test_backoff_is_full_jitter_and_retry_after_is_capped() -> None:
    for attempt in range(1, 9):
        waits = [backoff_s(attempt, None, base_s=0.5, cap_s=10.0) for _ in range(200)]
        ceiling = min(10.0, 0.5 * 2 ** (attempt - 1))
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling / 2 and min(waits) < ceiling / 2  # spread over the whole range
    assert backoff_s(1, 3.0, base_s=0.5, cap_s=10.0) == 3.0  # the server's wish
    assert backoff_s(1, 3600.0, base_s=0.5, cap_s=10.0) == 10.0  # ... up to the cap


def test_retry_after_headers() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": when}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after(None) is None


def test_server_text_is_quoted_from_the_usual_bodies() -> None:
    assert quote_server_text('{"detail": "context too long"}') == '"context too long"'
    assert quote_server_text('{"detail": [{"loc": ["body"], "msg": "bad"}]}') == '"[{"loc": ["body"], "msg": "bad"}]"'
    assert quote_server_text('{"error": {"message": "no images", "type": "x"}}') == '"no images"'
    assert quote_server_text('[{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}}]') == \
        '"RESOURCE_EXHAUSTED: quota"'
    assert quote_server_text(b"upstream reset\n") == '"upstream reset"'
    assert quote_server_text("<html><body><h1>502 Bad Gateway</h1></body></html>") == '"502 Bad Gateway"'
    assert quote_server_text("") == "(empty body)"
    long = quote_server_text("x" * 5000)
    assert len(long) < 400 and long.endswith('..."')


# ------------------------------------------------------------------------ size cap
@pytest.mark.parametrize("fault", ["huge", "huge_unsized", "gzip_huge"])
async def test_the_client_stops_reading_at_the_cap(fault: str) -> None:
    state = ServerState(faults=Faults(plan=always(fault), huge_bytes=20 << 20))
    with LoopbackServer(state) as srv:
        async with capped_http_client(httpx.AsyncClient, BackendOptions(max_response_bytes=1 << 20)) as client:
            with pytest.raises(ResponseTooLarge, match="larger than max_response_bytes=1048576"):
                await client.post(f"{srv.url}/chat/completions", json={"messages": []})
    assert state.faults_sent[fault] == 1


async def test_a_small_reply_passes_the_cap_unchanged() -> None:
    with LoopbackServer() as srv:
        async with capped_http_client(httpx.AsyncClient, BackendOptions(max_response_bytes=4096)) as client:
            r = await client.post(f"{srv.url}/chat/completions", json={"model": "m", "messages": [
                {"role": "user", "content": "Current question: what?"}]})
    assert r.json()["choices"][0]["message"]["content"] == "Answer to: what? [frames=0]"
    assert r.request.headers["accept-encoding"] == "identity"


# ------------------------------------------------------------------------ breaker and deadline
def test_the_breaker_opens_after_earlier_successes_and_stays_open() -> None:
    b = CircuitBreaker("openai:m", "http://h/v1", threshold=3)
    b.success()
    b.failure("HTTP 503 from http://h/v1/chat/completions: \"down\"")
    b.failure("x")
    b.success()  # a success in between resets the count
    for _ in range(3):
        b.check()
        b.failure('HTTP 503 from http://h/v1/chat/completions: "down"')
    assert b.is_open
    with pytest.raises(CircuitOpenError) as e:
        b.check()
    assert e.value.exit_code == 3 and "openai:m at http://h/v1: 3 failures in a row" in str(e.value)
    assert 'Last error: HTTP 503 from http://h/v1/chat/completions: "down"' in str(e.value)
    b.success()  # a call in flight that finishes later does not close it
    assert b.is_open
    never = CircuitBreaker("openai:m", "http://h/v1", threshold=1)
    never.failure("HTTP 401 ...", refused=True)  # refused from the start: a key / URL / model problem
    assert never.error().exit_code == 2 and "check its URL, key and model name" in str(never.error())
    capped = CircuitBreaker("openai:m", "http://h/v1", threshold=1)
    capped.failure("reply from http://h/v1 is larger than max_response_bytes=10 bytes", refused=False)
    assert capped.error().exit_code == 3  # the server answers: a reply too large is not a key / URL problem
    assert "check its URL" not in str(capped.error())
    told = CircuitBreaker("openai:m", "http://h/v1", threshold=1)
    told.failure("HTTP 422 ...", refused=True, hint="drop the setting the server does not accept (above)")
    assert "no call to it succeeded: drop the setting the server does not accept (above)" in str(told.error())


async def test_an_open_breaker_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    state = ServerState(faults=Faults(plan=always("server_error")))
    with LoopbackServer(state) as srv:
        b = create_backend("openai:m", BackendOptions(base_url=srv.url, max_retries=1, retry_base_s=0.01,
                                                      breaker_threshold=2))
        try:
            first = [await b.generate(GenerationRequest(id=str(i), prompt=f"q{i}")) for i in range(2)]
            with pytest.raises(CircuitOpenError, match="2 failures in a row"):
                await b.generate(GenerationRequest(id="late", prompt="q-late"))
        finally:
            await b.aclose()
    assert [r.outcome for r in first] == ["error", "error"] and [r.attempts for r in first] == [2, 2]
    assert len(state.requests) == 4  # the third call was never sent


async def test_the_deadline_covers_the_waits_between_attempts() -> None:
    state = ServerState(faults=Faults(plan=always("rate_limit"), retry_after="0.4"))
    with LoopbackServer(state) as srv:
        b = create_backend("openai:m", BackendOptions(base_url=srv.url, timeout_s=1.0, max_retries=50,
                                                      retry_cap_s=5.0))
        try:
            res = await b.generate(GenerationRequest(id="a", prompt="q"))
        finally:
            await b.aclose()
    # 0.4 s apart, as the server asked: at most 3 attempts fit in the 1 s budget, not 51
    assert res.outcome == "error" and 1 <= res.attempts <= 3 and len(state.requests) <= 3
    assert res.error and "timeout_s=1s" in res.error and f"{srv.url}/chat/completions" in res.error


# ------------------------------------------------------------------------ settings
def test_call_settings_are_validated_and_the_old_extra_key_still_works(tmp_path: Path) -> None:
    base = {"data": tmp_path, "model": "openai:m", "judge": "offline", "out": tmp_path / "r"}
    cfg = build_config({**base, "judge_settings": {"extra": {"retry_base_s": 0.25, "other": 1}},
                        "model_settings": {"timeout_s": 30, "extra": {"timeout_s": 99, "breaker_threshold": 3}}})
    assert cfg.judge_settings.retry_base_s == 0.25 and cfg.judge_settings.options == {"other": 1}
    assert cfg.model_settings.timeout_s == 30  # the field given itself wins over the option
    assert cfg.model_settings.breaker_threshold == 3 and cfg.model_settings.options == {}
    assert cfg.judge_settings.max_response_bytes == 8 << 20 and cfg.judge_settings.breaker_threshold == 8
    for field, bad in (("timeout_s", float("inf")), ("retry_cap_s", float("nan")), ("retry_base_s", 0),
                       ("max_response_bytes", -1), ("breaker_threshold", 0), ("max_retries", -1)):
        with pytest.raises(ConfigError, match=f"field 'model_settings.{field}'"):
            build_config({**base, "model_settings": {field: bad}})


# ------------------------------------------------------------------------ key routing
def test_openai_key_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-0123456789")
    default = openai_endpoint(BackendOptions())
    assert (default.url, default.key, default.key_env) == (OPENAI_DEFAULT_URL, "sk-default-0123456789",
                                                            "OPENAI_API_KEY")
    assert openai_endpoint(BackendOptions(base_url="https://api.openai.com/v1/")).key == "sk-default-0123456789"
    local = openai_endpoint(BackendOptions(base_url="http://localhost:8000/v1"))
    assert local.key == PLACEHOLDER_KEY and local.withheld_env == "OPENAI_API_KEY"
    assert "api_key_env: OPENAI_API_KEY" in (local.auth_hint() or "")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway:9000/v1")
    assert openai_endpoint(BackendOptions()).key == "sk-default-0123456789"  # the URL set for the provider
    assert openai_endpoint(BackendOptions(base_url="http://gateway:9000/v1/")).key == "sk-default-0123456789"
    assert openai_endpoint(BackendOptions(base_url="http://localhost:8000/v1")).key == PLACEHOLDER_KEY
    monkeypatch.setenv("MY_ROLE_VAR", "role-secret-value")
    named = openai_endpoint(BackendOptions(base_url="http://localhost:8000/v1", api_key_env="MY_ROLE_VAR"))
    assert (named.key, named.key_env) == ("role-secret-value", "MY_ROLE_VAR")
    monkeypatch.delenv("NONE_SET", raising=False)
    with pytest.raises(MissingKeyError, match="api_key_env 'NONE_SET': environment variable NONE_SET is not set"):
        openai_endpoint(BackendOptions(base_url="http://localhost:8000/v1", api_key_env="NONE_SET"))  # never EMPTY
    monkeypatch.setenv("BLANK_VAR", "  ")
    with pytest.raises(MissingKeyError, match="BLANK_VAR is not set \\(or is empty\\)"):
        gemini_endpoint(BackendOptions(base_url="http://127.0.0.1:9/", api_key_env="BLANK_VAR"))
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(MissingKeyError, match="NONE_SET"):
        openai_endpoint(BackendOptions(api_key_env="NONE_SET"))  # the provider itself needs one
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        openai_endpoint(BackendOptions())


def test_gemini_key_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gem-secret-0123456789")
    assert gemini_endpoint(BackendOptions()).key == "gem-secret-0123456789"
    assert gemini_endpoint(BackendOptions(base_url="https://generativelanguage.googleapis.com")).key_env == \
        "GEMINI_API_KEY"
    proxy = gemini_endpoint(BackendOptions(base_url="http://127.0.0.1:9/"))
    assert proxy.key == PLACEHOLDER_KEY and proxy.withheld_env == "GEMINI_API_KEY"
    monkeypatch.setenv("PROXY_VAR", "proxy-secret-012345")
    assert gemini_endpoint(BackendOptions(base_url="http://127.0.0.1:9/", api_key_env="PROXY_VAR")).key == \
        "proxy-secret-012345"


def test_effective_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert effective_base_url("openai:gpt-4o") == OPENAI_DEFAULT_URL
    assert effective_base_url("openai:m", BackendOptions(base_url="http://h:1/v1")) == "http://h:1/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway:9000/v1")
    assert effective_base_url("openai:gpt-4o") == "http://gateway:9000/v1"
    assert effective_base_url("gemini:gemini-2.5-pro") == "https://generativelanguage.googleapis.com/"
    assert effective_base_url("oracle") is None and effective_base_url("hf:Qwen/Qwen3-VL-8B-Instruct") is None


def test_every_key_read_is_scrubbed_whatever_its_variable_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLE_CREDENTIAL", "plain-looking-value-42")
    openai_endpoint(BackendOptions(base_url="http://localhost:1/v1", api_key_env="ROLE_CREDENTIAL"))
    assert redact("server said: plain-looking-value-42 is wrong") == "server said: *** is wrong"
    res = GenerationResult(text="echo plain-looking-value-42", raw_text="echo plain-looking-value-42",
                           error="bad key plain-looking-value-42")
    assert res.text == res.raw_text == "echo ***" and res.error == "bad key ***"


async def test_a_refused_request_says_where_the_key_went(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-0123456789")
    with LoopbackServer(ServerState(unauthorized=True)) as srv:
        b = create_backend("openai:m", BackendOptions(base_url=srv.url))
        try:
            res = await b.generate(GenerationRequest(id="a", prompt="q"))
        finally:
            await b.aclose()
    assert res.outcome == "error" and res.attempts == 1
    assert f"Incorrect API key provided: {PLACEHOLDER_KEY}." in (res.error or "")
    assert "OPENAI_API_KEY goes only to the provider's own URL" in (res.error or "")


def test_hostile_reply_shapes_are_retryable_and_usage_is_never_negative() -> None:
    import json as _json

    from mtvbench.models.openai_api import parse_completion
    from mtvbench.models.resilience import RetryableError

    for reply in ({"choices": [{"message": {"content": 123}, "finish_reason": "stop"}]},
                  {"choices": {"a": 1}}, {"choices": [None]}, [1, 2], "text"):
        with pytest.raises(RetryableError, match="malformed reply from http://x"):
            parse_completion(_json.dumps(reply).encode(), "http://x")
    res = parse_completion(_json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                                        "usage": {"prompt_tokens": 3, "completion_tokens": -5,
                                                  "total_tokens": "9"}}).encode(), "http://x")
    assert res.outcome == "ok" and (res.usage.prompt_tokens, res.usage.completion_tokens) == (3, 0)


def test_a_url_with_credentials_is_refused_and_never_echoed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mtvbench.cli import app
    from mtvbench.models.registry import create_backend
    from tests.support.datasets import make_dataset

    data = make_dataset(tmp_path / "d")
    for url, what in (("http://user:s3cr3tpass@host/v1", "user name or password"),
                      ("https://host/v1?api-key=s3cr3tpass", "credential in its query (api-key)"),
                      ("https://host/v1?sig=s3cr3tpass&x=1", "credential in its query (sig)")):
        res = CliRunner().invoke(app, ["run", "--data", str(data), "--model", "openai:m", "--judge", "offline",
                                       "--out", str(tmp_path / "r"), "--model-base-url", url])
        out = " ".join(res.output.split())
        assert res.exit_code == 2 and "--model-base-url: must not" in out and what in out, out
        assert "s3cr3tpass" not in res.output and not (tmp_path / "r").exists()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://u:s3cr3tpass@gateway/v1")
    with pytest.raises(ConfigError, match="environment variable OPENAI_BASE_URL: must not hold") as e:
        create_backend("openai:m", BackendOptions())
    assert "s3cr3tpass" not in str(e.value)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway:9000/v1")  # a plain URL from the environment is fine
    assert create_backend("openai:m", BackendOptions()).url == "http://gateway:9000/v1/chat/completions"
