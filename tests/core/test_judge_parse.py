from __future__ import annotations

import pytest

from mtvbench.data.schema import ChecklistItem
from mtvbench.judge.checklist import parse_verdicts
from mtvbench.prompts import render_history, render_inference_prompt, render_judge_prompt

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
