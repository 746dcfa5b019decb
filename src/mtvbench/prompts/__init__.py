"""The paper's prompt templates, rendered in one place for every backend and judge."""

from mtvbench.prompts.templates import (
    INFERENCE_TEMPLATE,
    JUDGE_TEMPLATE,
    render_history,
    render_inference_prompt,
    render_judge_prompt,
)

__all__ = [
    "INFERENCE_TEMPLATE",
    "JUDGE_TEMPLATE",
    "render_history",
    "render_inference_prompt",
    "render_judge_prompt",
]
