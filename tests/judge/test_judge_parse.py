from __future__ import annotations

import pytest

from mtvbench.data.schema import ChecklistItem, Round
from mtvbench.prompts import render_history, render_inference_prompt, render_judge_prompt
from mtvbench.protocol.verdicts import parse_verdicts

KEYS = ["A1", "A2", "A3", "A4", "A5"]


@pytest.mark.parametrize("text", [
    '{"A1": "Yes", "A2": "No", "A3": "yes", "A4": "NO", "A5": "Yes"}',
    'Sure!\n```json\n{"A5": "Yes", "A4": "No", "A3": "Yes", "A2": "No", "A1": "Yes"}\n```\nDone.',
    "```\n{'A1': 'Yes'}\n```\nA1: Yes, A2: No, A3: Yes, A4: no, A5: yes",
    '{"a1": "Yes.", "a2": "No", "a3": true, "a4": false, "a5": "YES"}',
])
def test_parse_by_key_in_any_form(text: str) -> None:
    v = parse_verdicts(text, KEYS)
    assert v == {"A1": "Yes", "A2": "No", "A3": "Yes", "A4": "No", "A5": "Yes"}


def test_reordered_reply_is_matched_by_key_not_position() -> None:
    v = parse_verdicts('{"A2": "Yes", "A1": "No"}', ["A1", "A2"])
    assert v == {"A1": "No", "A2": "Yes"}  # the authors' positional matching would swap these


@pytest.mark.parametrize("text", ['{"A1": "Yes", "A2": "No"}', "I think they are all fine.", '{"A1": "maybe"}'])
def test_partial_or_unparseable_is_none(text: str) -> None:
    assert parse_verdicts(text, ["A1", "A2", "A3"]) is None


def test_prompts_follow_the_paper() -> None:
    hist = render_history([("What moves?", "A red square."), ("Where?", "Left to right.")])
    assert hist == "User: What moves?\nAssistant: A red square.\nUser: Where?\nAssistant: Left to right."
    p = render_inference_prompt([("q1", "a1")], "q2")
    assert p.startswith("You're an AI assistant helping to answer questions about a video. "
                        "Use the conversation history if helpful.")
    assert "Conversation history:\nUser: q1\nAssistant: a1\n" in p and p.endswith("Current question: q2")
    items = [ChecklistItem(key=f"Q{i}", question=f"Does it {i}?", expected="Yes") for i in range(1, 4)]
    j = render_judge_prompt("the answer", items)
    assert j.startswith("Given a current model-generated answer and a checklist of 3 questions")
    assert "1. Model Answer: the answer\n2. Checklist:\nQ1: Does it 1?\nQ2: Does it 2?\nQ3: Does it 3?" in j
    assert '{"A1": "Yes/No", "A2": "Yes/No", "A3": "Yes/No"}' in j


# ------------------------------------------------------------------ the judge through the shared ask loop


def _judge(url: str, max_attempts: int = 3):  # noqa: ANN202
    from mtvbench.judge.llm import LLMJudge
    from mtvbench.models.registry import create_backend
    from mtvbench.models.settings import BackendOptions

    return LLMJudge(create_backend("openai:judge", BackendOptions(base_url=url, max_retries=0)),
                    max_attempts=max_attempts)


ITEMS = [ChecklistItem(key="Q1", question="Does the model state that the square is red?", expected="Yes"),
         ChecklistItem(key="Q2", question="Does the model state that the circle is green?", expected="No")]
RND = Round(index=1, user="What is red?", assistant="The square.", model_turn=True, checklist=ITEMS)


def test_judge_reasks_an_unparseable_reply_then_scores_it() -> None:
    import asyncio

    from tests.support.openai_server import Faults, LoopbackServer, ServerState

    with LoopbackServer(ServerState(faults=Faults(malformed_judge_every=1))) as srv:
        v = asyncio.run(_judge(srv.url).judge("the square is red", RND, run=2))
        ids = [r["body"]["messages"][0]["content"] for r in srv.state.requests]
    assert v.status == "ok" and v.attempts == 2 and v.verdicts == {"A1": "Yes", "A2": "No"}
    assert len(v.raw) == 2 and "most of them are fine" in v.raw[0]
    assert len(ids) == 2 and ids[0] == ids[1]  # the judge is asked the same prompt again


def test_judge_unparsed_after_the_bound_and_error_on_api_failure() -> None:
    import asyncio

    from tests.support.openai_server import Faults, LoopbackServer, ServerState

    with LoopbackServer(ServerState(faults=Faults(always_malformed_judge=True))) as srv:
        v = asyncio.run(_judge(srv.url, max_attempts=2).judge("the square is red", RND, run=1))
        n = len(srv.state.requests)
    assert v.status == "unparsed" and v.verdicts is None and v.attempts == 2 and n == 2 and len(v.raw) == 2
    assert "A1, A2" in (v.error or "")
    with LoopbackServer(ServerState(unauthorized=True)) as srv:
        e = asyncio.run(_judge(srv.url).judge("the square is red", RND, run=1))
    assert e.status == "error" and e.attempts == 1 and "401" in (e.error or "") and e.raw == []


def test_ask_reprompts_with_the_problems_and_keeps_every_reply() -> None:
    import asyncio

    from mtvbench.models.ask import ReaskPolicy, append_problems, ask
    from mtvbench.models.registry import create_backend
    from mtvbench.models.settings import BackendOptions
    from mtvbench.records import GenerationRequest, Rejected
    from tests.support.openai_server import LoopbackServer, ServerState

    replies = iter(["seven", "8", "9"])

    def number(text: str) -> int | Rejected:
        return int(text) if text.isdigit() and int(text) > 8 else Rejected([f"{text!r} is not a number above 8"])

    with LoopbackServer(ServerState(model_reply=lambda prompt, n: next(replies))) as srv:
        backend = create_backend("openai:m", BackendOptions(base_url=srv.url))
        ok = asyncio.run(ask(backend, GenerationRequest(id="q", prompt="A number above 8?"), number,
                             ReaskPolicy(3, append_problems("\nFix: "))))
        prompts = [r["text"] for r in srv.state.requests]
    assert ok.status == "ok" and ok.value == 9 and ok.attempts == 3 and ok.raw == ["seven", "8", "9"]
    assert prompts == ["A number above 8?", "A number above 8?\nFix: 'seven' is not a number above 8",
                       "A number above 8?\nFix: '8' is not a number above 8"]
    with LoopbackServer(ServerState(model_reply=lambda prompt, n: "no")) as srv:
        backend = create_backend("openai:m", BackendOptions(base_url=srv.url))
        failed = asyncio.run(ask(backend, GenerationRequest(id="q", prompt="?"), number, ReaskPolicy(2)))
    assert failed.status == "failed" and failed.attempts == 2 and failed.problems == ["'no' is not a number above 8"]


def test_one_json_extractor_and_yes_no_normaliser() -> None:
    from mtvbench.util.jsonio import extract_json_object, json_values, yes_no

    assert [yes_no(x) for x in ("Yes", " no. ", "**YES**", True, False, "maybe", 1)] == \
        ["Yes", "No", "Yes", "Yes", "No", None, None]
    text = 'prose [1, 2] then ```json\n{"a": 1}\n``` and {"b": 2}'
    assert list(json_values(text, arrays=True))[:1] == [{"a": 1}]
    assert [1, 2] not in list(json_values(text)) and [1, 2] in list(json_values("x [1, 2] y", arrays=True))
    assert extract_json_object(text, accept=lambda o: "b" in o) is None  # the outermost braces hold both
    assert extract_json_object('{"b": 2}', accept=lambda o: "b" in o) == {"b": 2}
