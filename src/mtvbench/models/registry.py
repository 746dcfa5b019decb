"""Model backends by the prefix of a spec (``openai:gpt-4o`` -> ``openai``): :data:`BACKENDS`.

Each entry is a :class:`Backend`: the factory (``"module:attr"``, imported on first use, so an
optional dependency is imported only when its backend is used) and the pip extra with the
modules it needs (checked before anything is written, :mod:`mtvbench.extras`). A backend of
another package is added by an entry point of the group ``mtvbench.backends`` naming its
:class:`Backend` or its factory (a class or function taking ``(name, options)``); in code,
:func:`register_backend` does the same. Prefixes are unique (:mod:`mtvbench.registry`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

from mtvbench.errors import MtvbenchError
from mtvbench.models.backend import ModelBackend
from mtvbench.models.settings import BackendOptions
from mtvbench.registry import Registry, load_reference

BackendFactory = Callable[[str, BackendOptions], ModelBackend]
#: (import name, the distribution pip installs)
Module = tuple[str, str]


@dataclass(frozen=True)
class Backend:
    """A backend: how to make it and what it needs installed."""

    #: ``(name after the prefix, options) -> backend``, or ``"module:attr"`` naming it
    factory: Union[BackendFactory, str]  # noqa: UP007 - a string reference is resolved lazily
    #: the pip extra that installs what it needs (``hf`` for ``mtvbench[hf]``); None: core
    extra: str | None = None
    #: modules checked (not imported) before a run starts
    modules: tuple[Module, ...] = ()
    #: one line for ``mtvbench models --backends`` and error messages
    description: str = ""

    def make(self, name: str, options: BackendOptions) -> ModelBackend:
        """Make the backend for the model ``name`` (the part of the spec after the prefix) with ``options``,
        importing the factory first when it is a reference."""
        factory = load_reference(self.factory) if isinstance(self.factory, str) else self.factory
        return factory(name, options)


def _as_backend(obj: Any) -> Backend:
    if isinstance(obj, Backend):
        return obj
    if callable(obj):
        return Backend(factory=obj, description=(obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else "")
    raise TypeError(f"expected a mtvbench.models.registry.Backend or a factory (name, options) -> backend, "
                    f"got {type(obj).__name__}")


BACKENDS: Registry[Backend] = Registry("model backend", group="mtvbench.backends", coerce=_as_backend)
BACKENDS.add("openai", Backend("mtvbench.models.openai_api:OpenAIBackend",
                               description="any OpenAI-compatible chat-completions server"))
BACKENDS.add("gemini", Backend("mtvbench.models.gemini:GeminiBackend", extra="gemini",
                               modules=(("google.genai", "google-genai"),), description="Google Gemini (google-genai)"))
BACKENDS.add("hf", Backend("mtvbench.models.hf:HFBackend", extra="hf",
                           modules=(("torch", "torch"), ("transformers", "transformers")),
                           description="a local Hugging Face transformers model"))
BACKENDS.add("vllm", Backend("mtvbench.models.vllm_engine:VLLMBackend", extra="vllm", modules=(("vllm", "vllm"),),
                             description="vLLM's offline engine in this process"))
BACKENDS.add("oracle", Backend("mtvbench.models.baselines:oracle",
                               description="baseline: answers with the golden answer"))
BACKENDS.add("refuse", Backend("mtvbench.models.baselines:refuse", description="baseline: always declines"))
BACKENDS.add("offline", Backend("mtvbench.construct.offline_model:offline_model",
                                description="build only (`mtvbench build -m offline`): scripted replies, no API; "
                                            "what it builds is NOT a real benchmark"))


def register_backend(prefix: str, *, extra: str | None = None, modules: tuple[Module, ...] = ()
                     ) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: make ``factory`` the backend of ``prefix`` (``--model PREFIX:NAME``).

    Args:
        prefix: the part of a spec before ``:``; must not be taken.
        extra: the pip extra that installs what the backend needs, if any.
        modules: ``(import name, distribution)`` pairs checked before a run starts.

    Returns:
        The decorator; it returns the factory unchanged."""

    def deco(factory: BackendFactory) -> BackendFactory:
        BACKENDS.add(prefix, Backend(factory, extra=extra, modules=modules),
                     origin=getattr(factory, "__module__", None) or "register_backend()")
        return factory

    return deco


class UnknownModelError(MtvbenchError, ValueError):
    """A model spec whose prefix no backend has (the message lists the prefixes and suggests the closest)."""


class MissingKeyError(MtvbenchError):
    """No API key in the environment for a backend that needs one."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``'openai:gpt-4o'`` -> (``'openai'``, ``'gpt-4o'``); ``'oracle'`` -> (``'oracle'``, ``''``)."""
    prefix, _, rest = spec.partition(":")
    return prefix.strip().lower(), rest.strip()


def known_prefixes() -> list[str]:
    """Every backend prefix (built-in and from installed packages), sorted."""
    return sorted(BACKENDS.names())


def unknown_prefix_error(spec: str) -> UnknownModelError:
    """The error for ``spec``, whose prefix names no backend: every known prefix, and the closest ones as a
    suggestion."""
    prefix, _ = parse_spec(spec)
    close = BACKENDS.suggest(prefix)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return UnknownModelError(f"unknown model '{spec}': the prefix must be one of {', '.join(known_prefixes())}{hint}")


def create_backend(spec: str, options: BackendOptions | None = None) -> ModelBackend:
    """The backend a spec names, configured with ``options``.

    Args:
        spec: ``PREFIX:NAME`` (``openai:gpt-4o``, ``hf:/path/to/ckpt``) or a bare prefix (``oracle``).
        options: connection, call-path and generation settings (default: all defaults).

    Returns:
        The backend (close it with ``await backend.aclose()``).

    Raises:
        UnknownModelError: no backend has the prefix."""
    prefix, name = parse_spec(spec)
    if prefix not in BACKENDS:
        raise unknown_prefix_error(spec)
    return BACKENDS.get(prefix).make(name, options or BackendOptions())


__all__ = ["BACKENDS", "Backend", "BackendFactory", "MissingKeyError", "UnknownModelError", "create_backend",
           "known_prefixes", "parse_spec", "register_backend"]
