"""Paper Figure 15 (inference) and Figure 17 (checklist judge), and the inference prompt of each style.

Inference styles (:data:`InferenceStyle`; the run's protocol and preset decide which one, see
:mod:`mtvbench.protocol`):

- ``paper``: Figure 15 as printed; the history is ``User: ...`` / ``Assistant: ...`` lines.
- ``qwen-script``: the prompt of the authors' ``eval/infer_qwen25vl.py`` (:mod:`.authors`).
- ``internvl-script``: the prompt text of the authors' ``eval/infer_internvl.py``; the history is not in the
  prompt but goes as chat turns (:func:`mtvbench.prompts.authors.internvl_script_history`).

Figure 17 is the judge prompt of the ``paper`` protocol, with one addition of ours: the JSON output
instruction (the paper prints none). The ``authors`` protocol sends ``eval.py``'s own prompt instead
(:func:`mtvbench.prompts.authors.render_authors_judge_prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from mtvbench.data.schema import ChecklistItem
from mtvbench.prompts.authors import render_internvl_script_prompt, render_qwen_script_prompt

InferenceStyle = Literal["paper", "qwen-script", "internvl-script"]
INFERENCE_STYLES: tuple[InferenceStyle, ...] = ("paper", "qwen-script", "internvl-script")

#: Figure 15. The history is rendered as ``User: ...`` / ``Assistant: ...`` lines.
INFERENCE_TEMPLATE = ("You're an AI assistant helping to answer questions about a video. "
                      "Use the conversation history if helpful.\n"
                      "Conversation history:\n{history}\nCurrent question: {question}")

#: Figure 17, plus our JSON output instruction (the paper prints no output format).
JUDGE_TEMPLATE = (
    "Given a current model-generated answer and a checklist of {n} questions, output whether the model "
    "has correctly addressed the above questions. Output 'Yes' or 'No'.\n"
    "1. Model Answer: {answer}\n"
    "2. Checklist:\n{checklist}\n\n"
    "Return only a JSON object with one key per checklist question, in this form: {json_shape}"
)


def history_lines(turns: Sequence[tuple[str, str]]) -> list[str]:
    """``[(user, assistant), ...]`` -> ``["User: ...", "Assistant: ...", ...]``."""
    return [line for user, assistant in turns for line in (f"User: {user}", f"Assistant: {assistant}")]


def render_history(turns: Sequence[tuple[str, str]]) -> str:
    """``[(user, assistant), ...]`` -> ``User: ...\\nAssistant: ...`` lines (paper Figure 15)."""
    return "\n".join(history_lines(turns))


def render_inference_prompt(history: Sequence[tuple[str, str]], question: str,
                            style: InferenceStyle = "paper") -> str:
    """The text of one model turn in ``style`` (``internvl-script`` carries no history in its text)."""
    if style == "paper":
        return INFERENCE_TEMPLATE.format(history=render_history(history), question=question)
    if style == "qwen-script":
        return render_qwen_script_prompt(history, question)
    if style == "internvl-script":
        return render_internvl_script_prompt(question)
    raise ValueError(f"unknown inference style {style!r}; use one of {', '.join(INFERENCE_STYLES)}")


def render_judge_prompt(answer: str, items: Sequence[ChecklistItem]) -> str:
    """Figure 17 with our JSON instruction (the ``paper`` protocol's judge prompt)."""
    checklist = "\n".join(f"{it.key}: {it.question}" for it in items)
    shape = "{" + ", ".join(f'"{it.answer_key}": "Yes/No"' for it in items) + "}"
    return JUDGE_TEMPLATE.format(n=len(items), answer=answer, checklist=checklist, json_shape=shape)
