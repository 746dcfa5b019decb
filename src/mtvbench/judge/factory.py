"""The judge a ``--judge`` spec names: ``offline`` (the lexical matcher) or any model backend."""

from __future__ import annotations

from mtvbench.judge.llm import LLMJudge
from mtvbench.judge.offline import OfflineJudge
from mtvbench.judge.protocol import Judge
from mtvbench.models.registry import create_backend
from mtvbench.models.settings import BackendOptions
from mtvbench.protocol import EvalProtocol


def create_judge(spec: str, options: BackendOptions | None = None, max_attempts: int | None = None,
                 temperature: float | None = None, protocol: EvalProtocol | None = None) -> Judge:
    """The judge of ``spec`` (``offline``, or a backend spec such as ``openai:gemini-2.5-flash``).

    Args:
        spec: ``offline`` or a model spec.
        options: the judge backend's settings.
        max_attempts: asks per judge run while the reply has no readable verdict (None: the protocol's).
        temperature: the judge's sampling temperature (None: the backend's).
        protocol: the evaluation protocol that writes the prompt and reads the reply (None: ``paper``).

    Returns:
        The judge (close it with ``await judge.aclose()``)."""
    if spec.strip().lower() == "offline":
        return OfflineJudge()
    return LLMJudge(create_backend(spec, options), max_attempts=max_attempts, temperature=temperature,
                    protocol=protocol)
