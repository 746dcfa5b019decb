"""Which URL a role calls, and which key goes there.

The rule (one for every remote backend): a key read from the environment is sent only to the
endpoint it was configured for.

- A variable named for the role (``api_key_env``: ``--model-api-key-env`` /
  ``--judge-api-key-env``, the config or a preset) goes to that role's URL, whatever it is. A
  variable named explicitly must be set and non-empty (:func:`key_variable_problem`): it is never
  silently replaced by the placeholder.
- The provider's default variable (``OPENAI_API_KEY``; ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``)
  goes only to the provider's own URL, or to the URL the user set for the provider in the
  environment (``OPENAI_BASE_URL``; ``GOOGLE_GEMINI_BASE_URL``). A custom ``base_url`` given
  without ``api_key_env`` receives the placeholder :data:`PLACEHOLDER_KEY` (vLLM and SGLang
  servers accept any key), so a local model server never sees the judge's key.

Every key value read here is registered with :func:`~mtvbench.util.secrets.register_secret`, so
it is scrubbed from messages and stores whatever its variable is called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from mtvbench.errors import ConfigError
from mtvbench.models.registry import MissingKeyError, parse_spec
from mtvbench.models.settings import BackendOptions, check_base_url
from mtvbench.util.secrets import register_secret

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
OPENAI_URL_ENV = "OPENAI_BASE_URL"
GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com/"
GEMINI_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
GEMINI_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
#: what a server gets when no key is meant for it (local OpenAI-compatible servers accept any)
PLACEHOLDER_KEY = "EMPTY"


@dataclass(frozen=True)
class Endpoint:
    """The URL one role calls and the key it sends there."""

    url: str
    key: str
    #: the variable whose value is sent; None when :data:`PLACEHOLDER_KEY` is sent
    key_env: str | None
    #: a provider variable that is set but was not sent here (named in 401/403 hints)
    withheld_env: str | None = None

    def auth_hint(self, option: str = "api_key_env") -> str | None:
        """What to do when the server refuses the request for lack of a key."""
        if self.key_env is not None:
            return None
        if self.withheld_env:
            return (f"no key was sent to {self.url}: {self.withheld_env} goes only to the provider's own URL; "
                    f"name the variable for this role ({option}: {self.withheld_env}) to send it here")
        return f"no key was sent to {self.url}; name the variable that holds its key with {option}"


def _same_url(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    pa, pb = urlsplit(a.strip()), urlsplit(b.strip())
    return (pa.scheme.lower(), pa.netloc.lower(), pa.path.rstrip("/")) == \
        (pb.scheme.lower(), pb.netloc.lower(), pb.path.rstrip("/"))


def _env(name: str) -> str | None:
    value = os.environ.get(name) or None
    register_secret(value)
    return value


def key_variable_problem(name: str) -> str | None:
    """Why the variable named to hold a role's key cannot be used (blank name, unset, empty), or None.

    The settings check it before anything is written (naming the flag, file or preset that named
    it); :func:`openai_endpoint` and :func:`gemini_endpoint` refuse it too, for library callers."""
    if not name.strip():
        return "must name an environment variable, e.g. MY_SERVER_KEY"
    if not (os.environ.get(name) or "").strip():
        return (f"environment variable {name} is not set (or is empty): export it, or leave the setting out "
                "to send no key (a local server gets the placeholder key)")
    return None


def _named_key(name: str) -> str:
    """The value of a variable named explicitly for a role; :class:`MissingKeyError` when unusable."""
    problem = key_variable_problem(name)
    if problem is not None:
        raise MissingKeyError(f"api_key_env {name!r}: {problem}")
    return _env(name) or ""


def env_base_url(name: str) -> str | None:
    """A base URL from the environment (``OPENAI_BASE_URL``), checked like ``--model-base-url``: a URL
    with credentials in it is refused (it would be recorded in config.yaml and quoted in messages)."""
    value = (os.environ.get(name) or "").strip()
    if not value:
        return None
    try:
        return check_base_url(value)
    except ValueError as e:
        raise ConfigError(f"environment variable {name}: {e}") from None


def openai_endpoint(options: BackendOptions) -> Endpoint:
    """The URL and key of an ``openai:`` role (OpenAI or any OpenAI-compatible server)."""
    env_url = env_base_url(OPENAI_URL_ENV)
    url = options.base_url or env_url or OPENAI_DEFAULT_URL
    provider_url = _same_url(url, OPENAI_DEFAULT_URL)
    if options.api_key_env is not None:
        return Endpoint(url, _named_key(options.api_key_env), options.api_key_env)
    key = _env(OPENAI_KEY_ENV)
    if provider_url or _same_url(url, env_url):
        if key:
            return Endpoint(url, key, OPENAI_KEY_ENV)
        if provider_url:
            raise MissingKeyError(f"no API key for {url}: set the environment variable {OPENAI_KEY_ENV}",
                                  hint="or name the variable that holds this role's key (--model-api-key-env / "
                                       "--judge-api-key-env; `build`: --api-key-env)")
    return Endpoint(url, PLACEHOLDER_KEY, None, withheld_env=OPENAI_KEY_ENV if key else None)


def use_vertex() -> bool:
    """``GOOGLE_GENAI_USE_VERTEXAI`` set: the gemini backend uses Vertex AI (application default
    credentials, no key)."""
    return (os.environ.get("GOOGLE_GENAI_USE_VERTEXAI") or "").strip().lower() in ("1", "true", "yes", "on")


def _google_host(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "generativelanguage.googleapis.com"


def gemini_endpoint(options: BackendOptions) -> Endpoint:
    """The URL and key of a ``gemini:`` role on the Gemini Developer API (not Vertex AI)."""
    env_url = env_base_url(GEMINI_URL_ENV)
    url = options.base_url or env_url or GEMINI_DEFAULT_URL
    if options.api_key_env is not None:
        return Endpoint(url, _named_key(options.api_key_env), options.api_key_env)
    found = [(name, value) for name in GEMINI_KEY_ENVS if (value := _env(name))]
    if _google_host(url) or _same_url(url, env_url):
        if not found:
            raise MissingKeyError(
                f"no Gemini API key: set {' or '.join(GEMINI_KEY_ENVS)} "
                "(or GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI)")
        name, key = found[0]
        return Endpoint(url, key, name)
    return Endpoint(url, PLACEHOLDER_KEY, None, withheld_env=found[0][0] if found else None)


def effective_base_url(spec: str, options: BackendOptions | None = None) -> str | None:
    """The base URL a role actually calls (also when it comes from ``OPENAI_BASE_URL`` /
    ``GOOGLE_GEMINI_BASE_URL`` or the provider's default); None for local backends and Vertex AI."""
    options = options or BackendOptions()
    prefix, _ = parse_spec(spec)
    if prefix == "openai":
        return options.base_url or env_base_url(OPENAI_URL_ENV) or OPENAI_DEFAULT_URL
    if prefix == "gemini":
        if use_vertex() and not options.api_key_env:
            return options.base_url
        return options.base_url or env_base_url(GEMINI_URL_ENV) or GEMINI_DEFAULT_URL
    return None
