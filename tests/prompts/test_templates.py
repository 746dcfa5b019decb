"""The inference prompt in its styles: paper Figure 15, and the authors' infer_qwen25vl.py prompt."""

from __future__ import annotations

import pytest

from mtvbench.prompts import authors_history_lines, render_inference_prompt

INTRO = "You're an AI assistant helping to answer questions about a video. Use the conversation history if helpful.\n"


def test_paper_style_is_figure_15_with_history_lines() -> None:
    p = render_inference_prompt([("What moves?", "A red square."), ("Where?", "Left to right.")], "Why?")
    assert p == (INTRO + "Conversation history:\nUser: What moves?\nAssistant: A red square.\nUser: Where?\n"
                 "Assistant: Left to right.\nCurrent question: Why?")
    assert render_inference_prompt([], "Why?", "paper") == INTRO + "Conversation history:\n\nCurrent question: Why?"


def test_authors_style_is_the_python_list_repr_and_question_on_its_own_line() -> None:
    # the string the authors' f-string produces, written out by hand: Python's list repr picks the quotes
    # per string (double quotes around a string holding an apostrophe, escaped apostrophe when both kinds
    # occur), escapes newlines and backslashes, keeps printable non-ASCII text
    history = [("What's \"this\"?", "It's a\nsquare"), ("Path C:\\x?", "Café ☕")]
    p = render_inference_prompt(history, "And then?", "qwen-script")
    assert p == (
        INTRO + "Conversation history:\n"
        "['User: What\\'s \"this\"?', \"Assistant: It's a\\nsquare\", 'User: Path C:\\\\x?', 'Assistant: Café ☕']"
        "\nCurrent question:\nAnd then?")
    assert render_inference_prompt([], "First?", "qwen-script") == (
        INTRO + "Conversation history:\n[]\nCurrent question:\nFirst?")


def test_authors_history_equals_the_scripts_fstring_of_its_list() -> None:
    # the authors' script appends f"User: {question}" / f"Assistant: {answer}" to a list and puts
    # f"{dialogue_history}" into the prompt; odd strings must come out the same way
    turns = [("tab\there", "quote ' and \" both"), ("ünïcode \u200b zero-width", "back\\slash {braces}")]
    dialogue_history: list[str] = []
    for q, a in turns:
        dialogue_history.append(f"User: {q}")
        dialogue_history.append(f"Assistant: {a}")
    assert str(authors_history_lines(turns)) == f"{dialogue_history}"
    assert render_inference_prompt(turns, "{q}", "qwen-script").endswith("\nCurrent question:\n{q}")


def test_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown inference style 'fancy'"):
        render_inference_prompt([], "q", "fancy")  # type: ignore[arg-type]
