"""The paper's prompt templates, rendered in one place for every backend and judge."""

from mtvbench.prompts.templates import (
    AUTHORS_INFERENCE_TEMPLATE,
    INFERENCE_TEMPLATE,
    JUDGE_TEMPLATE,
    PROMPT_STYLES,
    PromptStyle,
    history_lines,
    render_authors_history,
    render_history,
    render_inference_prompt,
    render_judge_prompt,
)

__all__ = [
    "AUTHORS_INFERENCE_TEMPLATE",
    "INFERENCE_TEMPLATE",
    "JUDGE_TEMPLATE",
    "PROMPT_STYLES",
    "PromptStyle",
    "history_lines",
    "render_authors_history",
    "render_history",
    "render_inference_prompt",
    "render_judge_prompt",
]
