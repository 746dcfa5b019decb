"""The answer an authors' script writes from a reply (``mtvbench.run.runner.script_answer``): infer_qwen25vl.py
keeps the text after the first ``</think>`` (stripped) or the reply as it is; infer_internvl.py in Think mode the
same but always stripped, and without Think the whole reply."""

from __future__ import annotations

import pytest

from mtvbench.records import GenerationResult
from mtvbench.run.runner import script_answer


@pytest.mark.parametrize(("raw", "keep", "strip", "text"), [
    ("<think>a</think>\n\n Answer. ", False, False, "Answer."),
    ("<think>a</think> one </think> two ", False, False, "one </think> two"),  # the first tag, as split(.., 1)
    ("  no tags at all\n", False, False, "  no tags at all\n"),  # the Qwen script keeps it as it is
    ("  no tags at all\n", False, True, "no tags at all"),  # the InternVL script strips in Think mode
    ("<think>a</think> b", True, False, "<think>a</think> b"),  # InternVL without Think: the whole reply
    ("<THINK>a</THINK> b", False, False, "<THINK>a</THINK> b"),  # the tag is matched as written
])
def test_script_answer(raw: str, keep: bool, strip: bool, text: str) -> None:
    out = script_answer(GenerationResult(text="split by the backend", raw_text=raw), keep, strip)
    assert out.text == text and out.outcome == "ok" and out.raw_text == raw


def test_script_answer_empty_after_the_tag() -> None:
    out = script_answer(GenerationResult(text="", raw_text="<think>only thoughts</think>  ", outcome="empty"),
                        False, False)
    assert (out.text, out.outcome, out.reasoning) == ("", "empty", "only thoughts")
