"""What a backend is configured with: :class:`BackendOptions` (connection, call path, generation).

The generation settings are read through :meth:`BackendOptions.generation` and merged with a
request's own values in one place (:meth:`mtvbench.records.GenerationConfig.merge`); no backend
merges them itself. The call-path settings (``timeout_s`` .. ``breaker_threshold``) are read by
:mod:`mtvbench.models.resilience` for every remote backend; local backends ignore them.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from mtvbench.errors import ConfigError
from mtvbench.records import GenerationConfig

#: the settings of the call path (models.resilience) that ``--model-option`` / ``extra`` may also set
CALL_SETTINGS = ("timeout_s", "max_retries", "retry_base_s", "retry_cap_s", "max_response_bytes", "breaker_threshold")
#: backend options that change how a call is made, never what it answers (left out of a run's fingerprint,
#: and changing one does not make a preset run "modified")
OPERATIONAL_OPTIONS = frozenset({
    "batch_size", "upload_poll_s", "upload_timeout_s", "concurrency", "device_map", "videos_in_flight",
    *CALL_SETTINGS,
})

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


class BackendOptions(BaseModel):
    """Settings a backend may read; unknown keys go to ``extra``."""

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
    max_tokens: int | None = Field(None, description="max new tokens")
    temperature: float | None = Field(None, description="sampling temperature (>= 0)")
    top_p: float | None = Field(None, description="nucleus sampling top-p, in (0, 1]")
    top_k: int | None = None
    system: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str | None) -> str | None:
        return None if v is None else check_base_url(v)

    @model_validator(mode="before")
    @classmethod
    def _call_settings_from_extra(cls, data: Any) -> Any:
        """A call-path setting given as a backend option (``--model-option timeout_s=60``, or the
        old ``extra: {retry_base_s: ...}``) sets the field, unless the field is given itself."""
        if not isinstance(data, dict) or not isinstance(data.get("extra"), dict):
            return data
        moved = {k: v for k, v in data["extra"].items() if k in CALL_SETTINGS}
        if not moved:
            return data
        extra = {k: v for k, v in data["extra"].items() if k not in CALL_SETTINGS}
        return {**moved, **data, "extra": extra}

    def generation(self) -> GenerationConfig:
        """The generation settings of these options: the fields, plus ``do_sample``,
        ``repetition_penalty``, ``presence_penalty``, ``min_p`` and ``seed`` from ``extra``."""
        given = {k: self.extra[k] for k in GenerationConfig.OPTION_FIELDS if self.extra.get(k) is not None}
        try:
            return GenerationConfig(**{k: getattr(self, k) for k in GenerationConfig.CALL_FIELDS},
                                    system=self.system or None, **given)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"backend option {'.'.join(str(x) for x in err['loc'])}: {err['msg']} "
                              f"(got {err.get('input')!r})") from None

    def settings_for(self, request: GenerationConfig) -> GenerationConfig:
        """The settings of one call: these options, with what the request sets on top."""
        return self.generation().merge(request)
