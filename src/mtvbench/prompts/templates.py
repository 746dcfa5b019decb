"""Paper Figure 15 (inference) and Figure 17 (checklist judge)."""

from __future__ import annotations

from collections.abc import Sequence

from mtvbench.data.schema import ChecklistItem

#: Figure 15. The history is rendered as ``User: ...`` / ``Assistant: ...`` lines.
INFERENCE_TEMPLATE = (
    "You're an AI assistant helping to answer questions about a video. "
    "Use the conversation history if helpful.\n"
    "Conversation history:\n{history}\n"
    "Current question: {question}"
)

#: Figure 17, plus the JSON output instruction the authors' script sends.
JUDGE_TEMPLATE = (
    "Given a current model-generated answer and a checklist of {n} questions, output whether the model "
    "has correctly addressed the above questions. Output 'Yes' or 'No'.\n"
    "1. Model Answer: {answer}\n"
    "2. Checklist:\n{checklist}\n\n"
    "Return only a JSON object with one key per checklist question, in this form: {json_shape}"
)


def render_history(turns: Sequence[tuple[str, str]]) -> str:
    """``[(user, assistant), ...]`` -> ``User: ...\\nAssistant: ...`` lines."""
    lines: list[str] = []
    for user, assistant in turns:
        lines.append(f"User: {user}")
        lines.append(f"Assistant: {assistant}")
    return "\n".join(lines)


def render_inference_prompt(history: Sequence[tuple[str, str]], question: str) -> str:
    return INFERENCE_TEMPLATE.format(history=render_history(history), question=question)


def render_judge_prompt(answer: str, items: Sequence[ChecklistItem]) -> str:
    checklist = "\n".join(f"{it.key}: {it.question}" for it in items)
    shape = "{" + ", ".join(f'"{it.answer_key}": "Yes/No"' for it in items) + "}"
    return JUDGE_TEMPLATE.format(n=len(items), answer=answer, checklist=checklist, json_shape=shape)
