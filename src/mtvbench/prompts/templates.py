"""Paper Figure 15 (inference) and Figure 17 (checklist judge), and the authors' own inference prompt.

Two inference prompt styles (``--prompt-style``):

- ``paper`` (default): Figure 15 as printed; the history is ``User: ...`` / ``Assistant: ...`` lines.
- ``authors``: the prompt the authors' ``eval/infer_qwen25vl.py`` (NJU-LINK/MT-Video-Bench) builds: the
  history is the Python ``repr`` of the list of ``"User: ..."`` / ``"Assistant: ..."`` strings (``[]``
  when there is none), and the question follows ``Current question:`` on a line of its own. Use it to
  reproduce numbers made with that script.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from mtvbench.data.schema import ChecklistItem

PromptStyle = Literal["paper", "authors"]
PROMPT_STYLES: tuple[PromptStyle, ...] = ("paper", "authors")

_INTRO = ("You're an AI assistant helping to answer questions about a video. "
          "Use the conversation history if helpful.\n")

#: Figure 15. The history is rendered as ``User: ...`` / ``Assistant: ...`` lines.
INFERENCE_TEMPLATE = _INTRO + "Conversation history:\n{history}\nCurrent question: {question}"

#: The authors' infer_qwen25vl.py: ``{history}`` is the repr of a Python list of strings.
AUTHORS_INFERENCE_TEMPLATE = _INTRO + "Conversation history:\n{history}\nCurrent question:\n{question}"

#: Figure 17, plus the JSON output instruction the authors' script sends.
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


def render_authors_history(turns: Sequence[tuple[str, str]]) -> str:
    """The history as the authors' script formats it: ``str()`` of the list of lines, i.e. Python's
    ``repr`` of each string (quotes chosen and escaped by Python, ``\\n`` for newlines)."""
    return repr(history_lines(turns))


def render_inference_prompt(history: Sequence[tuple[str, str]], question: str, style: PromptStyle = "paper") -> str:
    if style == "paper":
        return INFERENCE_TEMPLATE.format(history=render_history(history), question=question)
    if style == "authors":
        return AUTHORS_INFERENCE_TEMPLATE.format(history=render_authors_history(history), question=question)
    raise ValueError(f"unknown prompt style {style!r}; use one of {', '.join(PROMPT_STYLES)}")


def render_judge_prompt(answer: str, items: Sequence[ChecklistItem]) -> str:
    checklist = "\n".join(f"{it.key}: {it.question}" for it in items)
    shape = "{" + ", ".join(f'"{it.answer_key}": "Yes/No"' for it in items) + "}"
    return JUDGE_TEMPLATE.format(n=len(items), answer=answer, checklist=checklist, json_shape=shape)
