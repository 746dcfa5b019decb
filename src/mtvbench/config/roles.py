"""The settings a run and a build share: a role's connection and generation settings
(:class:`RoleSettings`, strict :class:`~mtvbench.models.settings.BackendOptions` with ranges), the Ray
resources, deadlines and local instance (:class:`RaySettings`, :class:`LocalRaySettings`) (prices,
:class:`~mtvbench.records.Price`, are a record that scoring reads too).

Ranges: ``temperature >= 0``, ``0 < top_p <= 1``, ``max_tokens >= 1``, ``repetition_penalty > 0``,
``-2 <= presence_penalty <= 2``, ``0 <= min_p <= 1``, ``timeout_s > 0``, ``max_retries >= 0``;
``extra_body`` a mapping. A key variable named explicitly (``api_key_env``: a flag, the file or a preset)
must be set and non-empty in the environment (the value is read, never stored): checked when the
settings are for a new run or build (:data:`~mtvbench.config.validation.CHECK_ENVIRONMENT`), before
anything is written, not when a run directory's own ``config.yaml`` is read back for scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from mtvbench.config.validation import CHECK_ENVIRONMENT
from mtvbench.models.endpoints import key_variable_problem
from mtvbench.models.settings import GENERATION_SETTINGS, BackendOptions, setting_flag
from mtvbench.util.strict import STRICT

#: generation and connection settings: field -> (test, the rule in words)
_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "temperature": (lambda v: v >= 0, "must be a number >= 0"),
    "top_p": (lambda v: 0 < v <= 1, "must be in (0, 1]"),
    "top_k": (lambda v: v >= -1, "must be >= 1, or 0 / -1 for no top-k limit"),
    "max_tokens": (lambda v: v >= 1, "must be >= 1"),
    "repetition_penalty": (lambda v: v > 0, "must be > 0 (1.0: no penalty)"),
    "presence_penalty": (lambda v: -2 <= v <= 2, "must be in [-2, 2]"),
    "min_p": (lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    "timeout_s": (lambda v: v > 0, "must be > 0 seconds"),
    "max_retries": (lambda v: v >= 0, "must be >= 0"),
}


class RoleSettings(BackendOptions):
    """Connection and generation settings of one role (model under test, or judge)."""

    model_config = STRICT

    @field_validator(*_RANGES)
    @classmethod
    def _in_range(cls, v: float | None, info: ValidationInfo) -> float | None:
        ok, rule = _RANGES[info.field_name]
        if v is not None and not ok(v):
            raise ValueError(rule)
        return v

    @field_validator("api_key_env")
    @classmethod
    def _key_variable(cls, v: str | None, info: ValidationInfo) -> str | None:
        """A named key variable must hold a key, when the settings are for a new run or build
        (:func:`validate_settings`), not when a stored ``config.yaml`` is read back."""
        if v is not None and (info.context or {}).get(CHECK_ENVIRONMENT):
            problem = key_variable_problem(v)
            if problem is not None:
                raise ValueError(problem)
        return v

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if key in BackendOptions.model_fields:
                flag = setting_flag(key, "model") if key in GENERATION_SETTINGS else None
                raise ValueError(f"{key!r} is a setting of its own, not a backend option: give it as {key} "
                                 + (f"({flag} for the model)" if flag else "(or its flag)")
                                 + ", not inside extra / --model-option")
        body = v.get("extra_body")
        if body is not None and not isinstance(body, dict):
            raise ValueError(f"extra_body must be a mapping of request fields (e.g. {{top_k: 20}}), "
                             f"got {type(body).__name__} {body!r}")
        return v

    def backend_options(self) -> BackendOptions:
        return BackendOptions.model_validate(self.model_dump()).with_origin(self.origin)


ExecutorName = Literal["local", "ray"]


def _port() -> Any:
    """An optional TCP port (unset: Ray's choice)."""
    return Field(None, ge=1, le=65535)


class LocalRaySettings(BaseModel):
    """The Ray instance a run or build starts on this machine when it joins no cluster
    (:mod:`mtvbench.dispatch.raylocal`): no dashboard unless asked, and its ports. A port left unset is
    Ray's choice, except the head's (GCS) port: a free one, so that two runs on one machine never meet."""

    model_config = STRICT

    #: seconds for the instance to come up (``ray start``); then one error, nothing written
    start_timeout_s: float = Field(120, gt=0)
    #: Ray's dashboard (a web server on ``dashboard_port``, Ray's default 8265)
    dashboard: bool = False
    dashboard_port: int | None = _port()
    #: the head's (GCS) port
    port: int | None = _port()
    node_manager_port: int | None = _port()
    object_manager_port: int | None = _port()
    #: the ports of the worker processes: from ``min_worker_port`` to ``max_worker_port``
    min_worker_port: int | None = _port()
    max_worker_port: int | None = _port()
    #: the Ray Client server (started only when Ray's client dependencies are installed; Ray's default 10001)
    client_port: int | None = _port()
    #: the dashboard agent (Ray's default 52365) and the metrics export port
    dashboard_agent_port: int | None = _port()
    metrics_port: int | None = _port()

    @model_validator(mode="after")
    def _worker_ports(self) -> LocalRaySettings:
        low, high = self.min_worker_port, self.max_worker_port
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_worker_port ({low}) must be <= max_worker_port ({high})")
        return self


class RaySettings(BaseModel):
    """Resources of ``--executor ray`` (:mod:`mtvbench.dispatch.ray`, for run and build).
    How work is spread never changes a result: none of this is part of a run's identity."""

    model_config = STRICT

    #: model replicas (Ray actors, one model each); default: one per node, or, with ``num_gpus``,
    #: as many as the cluster's GPUs hold
    replicas: int | None = Field(None, ge=1)
    #: GPUs of one replica (``vllm:`` with ``tensor_parallel_size=N``: N); 0 runs it on CPUs
    num_gpus: float = Field(0, ge=0)
    #: CPUs one replica holds for its life
    num_cpus: float = Field(1, ge=0)
    #: CPUs of one frame-decoding task (construction: of one split/key-frame task)
    task_cpus: float = Field(1, ge=0)
    #: GPUs of the construction's detector actor (YOLO11)
    detect_gpus: float = Field(0, ge=0)
    #: times a video's unfinished turns are sent to a new replica after the replica running them died
    max_retries: int = Field(3, ge=0)
    #: seconds to join the cluster at ``--ray-address`` (and the instance started for the run, once it is up);
    #: then one error naming the address, exit 2, nothing written
    connect_timeout_s: float = Field(30, gt=0)
    #: seconds without any progress (an answer, a video's frames, a replica up) while work waits on the
    #: cluster: the waiting work is given up for this run (exit 3, INCOMPLETE, resumable), saying what waited
    stall_s: float = Field(300, gt=0)
    #: the Ray instance started for the run when there is no ``--ray-address``
    local: LocalRaySettings = Field(default_factory=LocalRaySettings)
