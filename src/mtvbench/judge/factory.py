"""The judge a ``--judge`` spec names, looked up in :data:`mtvbench.judge.registry.JUDGES`, and the
factories of the built-in judges: ``offline`` (the lexical matcher) and the LLM judge over any backend."""

from __future__ import annotations

from mtvbench.judge.llm import LLMJudge
from mtvbench.judge.offline import OfflineJudge
from mtvbench.judge.protocol import Judge, JudgeSettings
from mtvbench.judge.registry import JUDGES, LLM, judge_of, unknown_judge
from mtvbench.models.registry import BACKENDS, create_backend, parse_spec
from mtvbench.models.settings import BackendOptions
from mtvbench.protocol import EvalProtocol


def offline_judge(spec: str, settings: JudgeSettings) -> OfflineJudge:
    """``--judge offline``: the lexical matcher (asks no model)."""
    return OfflineJudge()


def llm_judge(spec: str, settings: JudgeSettings) -> LLMJudge:
    """``--judge openai:gemini-2.5-flash``: the LLM judge (paper Figure 17) asking the backend ``spec``."""
    return LLMJudge(create_backend(spec, settings.options), max_attempts=settings.max_attempts,
                    temperature=settings.temperature, protocol=settings.protocol)


def create_judge(spec: str, options: BackendOptions | None = None, max_attempts: int | None = None,
                 temperature: float | None = None, protocol: EvalProtocol | None = None) -> Judge:
    """The judge of ``spec`` (``offline``, a judge registered by name, or a backend spec such as
    ``openai:gemini-2.5-flash`` for the LLM judge).

    Args:
        spec: ``offline``, ``NAME[:ARG]`` of a registered judge, or a model spec.
        options: the judge backend's settings.
        max_attempts: asks per judge run while the reply has no readable verdict (None: the protocol's).
        temperature: the judge's sampling temperature (None: the backend's).
        protocol: the evaluation protocol that writes the prompt and reads the reply (None: ``paper``).

    Returns:
        The judge (close it with ``await judge.aclose()``)."""
    name, arg = judge_of(spec)
    if name == LLM and ":" not in spec and parse_spec(spec)[0] not in BACKENDS:
        raise unknown_judge(spec)  # a bare word: a judge's name mistyped, not a backend
    settings = JudgeSettings(options=options, max_attempts=max_attempts, temperature=temperature, protocol=protocol)
    return JUDGES.get(name)(arg, settings)
