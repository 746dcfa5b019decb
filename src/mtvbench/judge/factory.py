"""The judge a ``--judge`` spec names: ``offline`` (the lexical matcher) or any model backend."""

from __future__ import annotations

from mtvbench.judge.llm import LLMJudge
from mtvbench.judge.offline import OfflineJudge
from mtvbench.judge.protocol import Judge
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions


def create_judge(spec: str, options: BackendOptions | None = None, max_attempts: int = 3,
                 temperature: float | None = None) -> Judge:
    """The judge of ``spec`` (``offline``, or a backend spec such as ``openai:gemini-2.5-flash``).

    Args:
        spec: ``offline`` or a model spec.
        options: the judge backend's settings.
        max_attempts: asks per judge run while the reply has no parseable verdict.
        temperature: the judge's sampling temperature (None: the backend's).

    Returns:
        The judge (close it with ``await judge.aclose()``)."""
    if spec.strip().lower() == "offline":
        return OfflineJudge()
    return LLMJudge(create_backend(spec, options), max_attempts=max_attempts, temperature=temperature)
