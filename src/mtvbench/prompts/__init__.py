"""Prompt texts, rendered in one place for every backend and judge: the paper's templates
(:mod:`.templates`, :mod:`.generation`) and the authors' released ones (:mod:`.authors`)."""

from mtvbench.prompts.authors import (
    authors_history_lines,
    internvl_frame_prefix,
    internvl_script_history,
    internvl_think_system,
    placeholder_answer,
    render_authors_judge_prompt,
    render_internvl_script_prompt,
    render_qwen_script_prompt,
)
from mtvbench.prompts.templates import (
    INFERENCE_STYLES,
    INFERENCE_TEMPLATE,
    JUDGE_TEMPLATE,
    InferenceStyle,
    history_lines,
    render_history,
    render_inference_prompt,
    render_judge_prompt,
)

__all__ = [
    "INFERENCE_STYLES",
    "INFERENCE_TEMPLATE",
    "JUDGE_TEMPLATE",
    "InferenceStyle",
    "authors_history_lines",
    "history_lines",
    "internvl_frame_prefix",
    "internvl_script_history",
    "internvl_think_system",
    "placeholder_answer",
    "render_authors_judge_prompt",
    "render_history",
    "render_inference_prompt",
    "render_internvl_script_prompt",
    "render_judge_prompt",
    "render_qwen_script_prompt",
]
