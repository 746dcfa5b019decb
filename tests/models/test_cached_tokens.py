"""Cached prompt tokens as each backend reads them from its replies (a reply without them: not recorded)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mtvbench.models.gemini import result_from_response
from mtvbench.models.openai_api import parse_completion
from mtvbench.records import Usage


def _reply(usage: object) -> bytes:
    return json.dumps({"choices": [{"message": {"content": "an answer"}, "finish_reason": "stop"}],
                       "usage": usage}).encode()


@pytest.mark.parametrize(("usage", "cached"), [
    ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 64}}, 64),
    ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}, 0),
    ({"prompt_tokens": 100, "completion_tokens": 5}, None),  # a server that does not say (vLLM by default)
    ({"prompt_tokens": 100, "prompt_tokens_details": None}, None),
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": -3}}, None),
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": True}}, None),
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 500}}, 100),  # never more than the prompt
])
def test_openai_compatible_replies(usage: dict, cached: int | None) -> None:
    assert parse_completion(_reply(usage), "http://x").usage.cached_tokens == cached


def test_gemini_usage_metadata() -> None:
    from google.genai import types

    def resp(meta: dict) -> object:
        return types.GenerateContentResponse.model_validate(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
             "usageMetadata": meta})

    got = result_from_response(resp({"promptTokenCount": 900, "candidatesTokenCount": 4, "totalTokenCount": 904,
                                     "cachedContentTokenCount": 800}))
    assert (got.usage.prompt_tokens, got.usage.cached_tokens) == (900, 800)
    # the API's JSON leaves a zero count out: absent is 0 cached, not "not recorded"
    assert result_from_response(resp({"promptTokenCount": 9, "candidatesTokenCount": 4})).usage.cached_tokens == 0
    assert result_from_response(SimpleNamespace(usage_metadata=None, prompt_feedback=SimpleNamespace(
        block_reason="SAFETY"))).usage.cached_tokens is None


def test_sums_keep_not_recorded_apart_from_zero() -> None:
    assert (Usage() + Usage()).cached_tokens is None
    assert (Usage(cached_tokens=3) + Usage()).cached_tokens == 3
    assert (Usage(cached_tokens=3) + Usage(cached_tokens=4)).cached_tokens == 7
