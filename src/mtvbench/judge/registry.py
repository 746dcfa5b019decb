"""Judges by the name a ``--judge`` spec starts with: :data:`JUDGES` (the same registry as the model backends').

``offline`` is the lexical matcher (:mod:`.offline`, no API); ``llm:SPEC`` is the LLM judge of paper
Figure 17 (:mod:`.llm`) asking the model backend ``SPEC``. A spec whose name (the part before the first
``:``) is no judge's is a backend spec for the LLM judge: ``--judge openai:gemini-2.5-flash`` is
``llm:openai:gemini-2.5-flash``. Each entry is a factory ``(the spec after NAME:, JudgeSettings) -> Judge``
(:class:`~mtvbench.judge.protocol.JudgeSettings`), given as ``"module:attr"`` and imported on first use.
Another package adds a judge by an entry point of the group ``mtvbench.judges`` naming its factory; in
code, :func:`register_judge` does the same. Names are unique (:mod:`mtvbench.registry`); a judge named
like a backend prefix takes that prefix's specs from the LLM judge, so choose another name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mtvbench.errors import MtvbenchError
from mtvbench.judge.protocol import JudgeFactory
from mtvbench.registry import Registry

#: the judge a spec without a judge's name goes to (the spec is its backend)
LLM = "llm"


def _as_factory(obj: Any) -> JudgeFactory:
    if callable(obj):
        return obj
    raise TypeError(f"expected a judge factory (spec, JudgeSettings) -> judge, got {type(obj).__name__}")


JUDGES: Registry[JudgeFactory] = Registry("judge", group="mtvbench.judges", coerce=_as_factory)
JUDGES.add("offline", "mtvbench.judge.factory:offline_judge")
JUDGES.add(LLM, "mtvbench.judge.factory:llm_judge")


def register_judge(name: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Decorator: make ``factory`` the judge of ``--judge NAME`` (and ``NAME:ARG``, the factory gets ``ARG``).

    Args:
        name: the judge's name; must not be taken.

    Returns:
        The decorator; it returns the factory unchanged."""

    def deco(factory: JudgeFactory) -> JudgeFactory:
        JUDGES.add(name, factory, origin=getattr(factory, "__module__", None) or "register_judge()")
        return factory

    return deco


def judge_of(spec: str) -> tuple[str, str]:
    """(the judge's name, what its factory gets) of a ``--judge`` spec: ``offline`` -> (``offline``, ``""``),
    ``openai:gpt-4o`` -> (``llm``, ``openai:gpt-4o``), ``llm:openai:gpt-4o`` -> (``llm``, ``openai:gpt-4o``)."""
    name, _, rest = spec.strip().partition(":")
    if name.lower() in JUDGES:
        return name.lower(), rest.strip()
    return LLM, spec


class UnknownJudgeError(MtvbenchError, ValueError):
    """A ``--judge`` spec that names neither a judge nor a model backend."""


def unknown_judge(spec: str) -> UnknownJudgeError:
    """A ``--judge`` spec that is neither a judge's name nor a model spec."""
    close = JUDGES.suggest(spec.strip().lower())
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    return UnknownJudgeError(f"unknown judge {spec!r} ({hint}--judge takes a judge's name: "
                             f"{', '.join(sorted(JUDGES.names()))}, or a model spec PREFIX:NAME for the LLM judge)")


__all__ = ["JUDGES", "LLM", "UnknownJudgeError", "judge_of", "register_judge", "unknown_judge"]
