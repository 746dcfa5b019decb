"""The replay judge: replies by (prompt digest, n), scripted 500s, a default, and a record of every body."""

from __future__ import annotations

import json

import openai
import pytest

from tests.support.replay_server import ReplayScript, ReplayServer, prompt_digest, prompt_text


def _ask(client: openai.OpenAI, text: str, parts: bool = True) -> str | None:
    content: object = [{"type": "text", "text": text}] if parts else text
    resp = client.chat.completions.create(model="judge", messages=[{"role": "user", "content": content}])
    return resp.choices[0].message.content


def test_replies_by_prompt_and_nth_call_with_failures_and_default() -> None:
    script = ReplayScript(default="DEFAULT")
    key = script.add("judge me", {"1": {"status": 500}, "2": "not json", "3": '{"A1": "Yes"}', "*": "later"})
    with ReplayServer(script) as srv:
        client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="Error code: 500"):
            _ask(client, "judge me")
        got = [_ask(client, "judge me"), _ask(client, "judge me", parts=False), _ask(client, "judge me"),
               _ask(client, "something else")]
    assert got == ["not json", '{"A1": "Yes"}', "later", "DEFAULT"]
    assert [(r.n, r.status) for r in srv.calls(key)] == [(1, 500), (2, 200), (3, 200), (4, 200)]
    assert [r.seq for r in srv.requests] == [1, 2, 3, 4, 5]
    assert srv.requests[0].body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "judge me"}]}]
    assert srv.requests[2].prompt == "judge me" and srv.requests[4].reply == "DEFAULT"


def test_client_retries_use_up_numbers() -> None:
    """A 500 retried by the openai client itself is a new request: it takes the next n."""
    script = ReplayScript()
    key = script.add("p", {"1": {"status": 500}, "2": "second"})
    with ReplayServer(script) as srv:
        client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=1)
        assert _ask(client, "p") == "second"
    assert [r.n for r in srv.calls(key)] == [1, 2]


def test_script_round_trips_through_json_and_prompt_text_rules() -> None:
    script = ReplayScript(default="d")
    key = script.add("x", {"1": "a", "2": {"status": 500}}, label="turn 1")
    again = ReplayScript.from_json(json.loads(json.dumps(script.to_json())))
    assert again == script and again.entry(key, 2) == {"status": 500} and again.entry(key, 3) == "d"
    assert key == prompt_digest("x") and len(key) == 64
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "old"},
                         {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"},
                                                      {"type": "text", "text": "b"}]}]}
    assert prompt_text(body) == "ab" and prompt_text({"messages": []}) == ""
