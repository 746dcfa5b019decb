"""What a backend is configured with: :class:`BackendOptions` (connection, call path, generation).

:class:`BackendOptions` *is* a :class:`~mtvbench.records.GenerationConfig` (the only record of
generation settings) with the connection (:class:`ConnectionSettings`) and the backend's own options
(:attr:`BackendOptions.options`; given and stored under the key ``extra`` in YAML and a run directory's
config.yaml, "extra" otherwise naming a pip extra). Every generation setting (:data:`GENERATION_SETTINGS`) is
a field of its own, spelled the same in YAML (``model_settings: {top_k: 20}``) and on the command line (``--top-k 20``,
:func:`setting_flag`); ``null`` / ``none`` means "not set", which drops a preset's value. Given as a backend
option (``--model-option repetition_penalty=1.05``, ``extra: {do_sample: false}``) it is refused
(:class:`~mtvbench.config.RoleSettings`) with one error naming its flag. Two merges, each in one place: a
preset's options with the user's settings on top (:meth:`BackendOptions.merge`: a value given wins, ``null``
included), and a call's settings, the options with the request's own values on top (:meth:`BackendOptions.settings_for`,
:meth:`mtvbench.records.GenerationConfig.merge`); no backend merges them itself. What of the options
can change an answer, for a run's identity and its fingerprints, is said once:
:meth:`BackendOptions.answer_settings`. The call-path settings (``timeout_s`` .. ``breaker_threshold``) are
read by :mod:`mtvbench.models.resilience` for every remote backend; local backends ignore them.

:class:`SettingsOrigin` (never stored, never part of a run's identity) says which role the options
are for and which values a preset gave them, so that a message can say how to change one
(:meth:`BackendOptions.drop_advice`, :meth:`BackendOptions.option_advice`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mtvbench.records import GenerationConfig
from mtvbench.util.strict import STRICT, strict

#: the settings of the call path (models.resilience) that ``--model-option`` / ``extra:`` may also set
CALL_SETTINGS = ("timeout_s", "max_retries", "retry_base_s", "retry_cap_s", "max_response_bytes", "breaker_threshold")
#: backend options that change how a call is made, never what it answers (left out of a run's fingerprint,
#: and changing one does not make a preset run "modified")
OPERATIONAL_OPTIONS = frozenset({
    "batch_size", "upload_poll_s", "upload_timeout_s", "context_cache_delete_s", "concurrency", "device_map",
    "videos_in_flight",
    *CALL_SETTINGS,
})
#: every generation setting: a field of :class:`BackendOptions` and (for the model) a flag of ``run``
GENERATION_SETTINGS = (*GenerationConfig.CALL_FIELDS, *GenerationConfig.OPTION_FIELDS, "system")
#: the settings that are moved from the backend options to their field (``--model-option timeout_s=60``)
_FROM_OPTIONS = CALL_SETTINGS
#: the key of the backend options in YAML, config.yaml and ``BackendOptions(extra=...)``: a stored key
OPTIONS_KEY = "extra"


def setting_flag(field: str, role: str | None) -> str | None:
    """The command-line flag of a role's setting, or None: ``--model-base-url`` / ``--judge-api-key-env``
    for the connection, ``--top-k`` for the model's generation settings (``--model-seed``: ``--seed`` is
    the bootstrap's). :mod:`mtvbench.run.flags` and the messages name flags with it."""
    dashed = field.replace("_", "-")
    if field in ("base_url", "api_key_env") and role in ("model", "judge"):
        return f"--{role}-{dashed}"
    if role == "model" and field in GENERATION_SETTINGS:
        return "--model-seed" if field == "seed" else f"--{dashed}"
    return None


#: query parameters that carry a credential (Azure's ``api-key``, ``key``, ``token``, signatures, ...)
_SECRET_PARAM = re.compile(r"(key|token|secret|signature|sig|password|auth)", re.IGNORECASE)


def check_base_url(url: str) -> str:
    """An ``http(s)://`` URL without credentials in it: a key belongs in an environment variable
    (``api_key_env``), never in a URL that is stored in ``config.yaml`` and quoted in messages."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL such as http://localhost:8000/v1")
    where = "put the key in an environment variable and name it with --model-api-key-env / --judge-api-key-env"
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"must not hold a user name or password (user:pass@host): {where}")
    secret = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(k)]
    if secret:
        raise ValueError(f"must not carry a credential in its query ({', '.join(secret)}): {where}")
    return url.strip()


class SettingsOrigin(BaseModel):
    """Where a role's settings come from, for messages only (never stored, never in an identity)."""

    model_config = ConfigDict(frozen=True)

    #: ``model`` / ``judge`` (a run's roles, with flags); None: a build's or a library caller's options
    role: str | None = None
    #: the preset whose values the options hold, if any
    preset: str | None = None
    #: the settings that still hold the preset's values (not given by the user)
    preset_keys: frozenset[str] = frozenset()

    def section(self) -> str:
        """The YAML mapping of these settings in a run's config (``model_settings``)."""
        return f"{self.role}_settings"


class ConnectionSettings(BaseModel):
    """Where a backend is called and how: its URL, its key variable and the call path
    (:mod:`mtvbench.models.resilience`). Never part of what an answer means."""

    model_config = STRICT

    base_url: str | None = Field(None, description="OpenAI-compatible URL")
    #: a key named here goes to ``base_url``
    api_key_env: str | None = Field(None, description="env var holding the key")
    #: deadline of one call in seconds: every attempt, connect to last byte, and every wait between them
    timeout_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    #: attempts after the first one for retryable failures (429, 408/409, 5xx, connection, malformed reply)
    max_retries: int = Field(6, ge=0)
    #: backoff with full jitter: a wait is uniform in [0, min(retry_cap_s, retry_base_s * 2**n)]
    retry_base_s: float = Field(1.0, gt=0, allow_inf_nan=False)
    #: the longest wait between attempts, also for a server's Retry-After / retry-after-ms
    retry_cap_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    #: a reply body (error replies included) larger than this is cut off and the call fails
    max_response_bytes: int = Field(8 << 20, gt=0)
    #: this many failed calls in a row to one endpoint stop the run (circuit breaker)
    breaker_threshold: int = Field(8, ge=1)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str | None) -> str | None:
        return None if v is None else check_base_url(v)


def settings_from_options(data: Any) -> Any:
    """``data`` (a role's settings as given) with each call-path setting given as a backend option
    (``--model-option timeout_s=60``) moved to its field, unless the field is given itself."""
    if not isinstance(data, dict) or not isinstance(data.get(OPTIONS_KEY), dict):
        return data
    moved = {k: v for k, v in data[OPTIONS_KEY].items() if k in _FROM_OPTIONS}
    if not moved:
        return data
    options = {k: v for k, v in data[OPTIONS_KEY].items() if k not in _FROM_OPTIONS}
    return {**moved, **data, OPTIONS_KEY: options}


class BackendOptions(GenerationConfig, ConnectionSettings):
    """Settings a backend may read: the connection (:class:`ConnectionSettings`), the generation settings
    (it *is* a :class:`~mtvbench.records.GenerationConfig`, with the same fields), and :attr:`options`: the
    backend's own options (``--model-option KEY=VALUE``), whose key is ``extra`` wherever they are given or
    stored (YAML, config.yaml, ``BackendOptions(extra=...)``): a stored key keeps its spelling."""

    model_config = strict(frozen=False, serialize_by_alias=True)

    options: dict[str, Any] = Field(default_factory=dict, alias=OPTIONS_KEY)
    _origin: SettingsOrigin = PrivateAttr(default_factory=SettingsOrigin)

    @model_validator(mode="before")
    @classmethod
    def _settings_from_options(cls, data: Any) -> Any:
        """A call-path setting given as a backend option (``--model-option timeout_s=60``) sets the field, unless
        the field is given itself."""
        return settings_from_options(data)

    @property
    def origin(self) -> SettingsOrigin:
        return self._origin

    def mark(self, origin: SettingsOrigin) -> None:
        """Record where these options come from (for messages; nothing else changes)."""
        self._origin = origin

    def with_origin(self, origin: SettingsOrigin) -> BackendOptions:
        """A copy of these options marked with ``origin``."""
        out = self.model_copy()
        out.mark(origin)
        return out

    def answer_options(self) -> dict[str, Any]:
        """The backend options that can change an answer and the generation settings a request does not
        carry (``do_sample``, ``repetition_penalty``, ...), in one mapping sorted by key, as run fingerprints
        have always read them (they were backend options before they were fields): every option but the
        operational ones (:data:`OPERATIONAL_OPTIONS`)."""
        given = {k: getattr(self, k) for k in GenerationConfig.OPTION_FIELDS if getattr(self, k) is not None}
        return {k: v for k, v in sorted({**self.options, **given}.items()) if k not in OPERATIONAL_OPTIONS}

    def answer_settings(self) -> dict[str, Any]:
        """Everything of these options that can change an answer: ``generation`` (``max_tokens``,
        ``temperature``, ``top_p``, ``top_k`` and ``system``) and ``options`` (:meth:`answer_options`). What
        a run's identity records and its fingerprints hash (:meth:`mtvbench.config.RunConfig.identity`)."""
        return {"generation": {k: getattr(self, k) for k in (*GenerationConfig.CALL_FIELDS, "system")},
                "options": self.answer_options()}

    def merge(self, other: GenerationConfig) -> BackendOptions:
        """These options (a preset's) with the settings ``other`` (the user's) was given on top: every field
        given wins, ``null`` included (it drops the preset's value); backend options are added, a given
        ``extra_body`` key by key. Unlike :meth:`GenerationConfig.merge` (a request over options), a field
        counts as given when it was given, whatever its value."""
        given = {k: getattr(other, k) for k in other.model_fields_set if k != "options"}
        mine = dict(self.options)
        options = merge_options(mine, other.options) if isinstance(other, BackendOptions) else mine
        return self.model_copy(update={**given, "options": options})

    def sent_value(self, key: str, value: Any) -> str:
        """``top_k=20``, with ``(preset qwen2.5-vl-7b)`` when the value is the preset's."""
        origin = f" (preset {self._origin.preset})" if key in self._origin.preset_keys else ""
        return f"{key}={json.dumps(value)}{origin}"

    def drop_advice(self, keys: Sequence[str]) -> str:
        """How to stop sending the request fields ``keys`` (generation settings, or ``extra_body`` keys):
        ``--top-k none --repetition-penalty none (YAML: model_settings: {top_k: null, repetition_penalty: null})``."""
        role = self._origin.role
        section = self._origin.section()
        settings = [k for k in keys if k in GENERATION_SETTINGS]
        body = [k for k in keys if k not in GENERATION_SETTINGS]
        ways = []
        if settings:
            nulls = ", ".join(f"{k}: null" for k in settings)
            flags = [f"{flag} none" for k in settings if (flag := setting_flag(k, role))]
            if role is None:
                ways.append(f"{nulls} in the role's settings (build --config: backend: {{{nulls}}})")
            else:
                yaml_form = f"{section}: {{{nulls}}}"
                ways.append(f"{' '.join(flags)} (YAML: {yaml_form})" if len(flags) == len(settings) else yaml_form)
        if body:
            option = f"--{role}-option" if role in ("model", "judge") else "the backend option"
            ways.append(f"{option} 'extra_body={{{', '.join(f'{k}: null' for k in body)}}}'")
        return " and ".join(ways)

    def option_advice(self, key: str, value: str = "N") -> str:
        """How to set the backend option ``key`` of this role: ``--model-option KEY=N (YAML: model_settings: ...)``."""
        role = self._origin.role
        yaml_value = (f"{{{key}: {value}}}" if key in BackendOptions.model_fields
                      else f"{{{OPTIONS_KEY}: {{{key}: {value}}}}}")
        if role in ("model", "judge"):
            return f"--{role}-option {key}={value} (YAML: {role}_settings: {yaml_value})"
        return (f"{key}={value} in the role's settings (run: --model-option / --judge-option {key}={value}; "
                f"build --config: backend: {yaml_value})")

    def generation(self) -> GenerationConfig:
        """The generation settings of these options alone (an empty system prompt: not set)."""
        return GenerationConfig(**{**self.settings(), "system": self.system or None})

    def settings_for(self, request: GenerationConfig) -> GenerationConfig:
        """The settings of one call: these options, with what the request sets on top
        (``options.settings_for(request.generation)``)."""
        return self.generation().merge(request)


def merge_options(preset: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Backend options: given ones win; a given ``extra_body`` adds to the preset's instead of replacing it."""
    merged = {**preset, **given}
    if isinstance(preset.get("extra_body"), dict) and isinstance(given.get("extra_body"), dict):
        merged["extra_body"] = {**preset["extra_body"], **given["extra_body"]}
    return merged
