"""Moved: ``--executor ray``, for ``run`` and ``build``, is :mod:`mtvbench.dispatch.ray`
(``RayDispatcher``). The names that kept their meaning work from here for one release, with a
DeprecationWarning."""

from mtvbench.util.moved import moved_names

__getattr__ = moved_names(__name__, dict.fromkeys(
    ("LOCAL_ENGINES", "RayExecutorError", "RemoteEngine", "connect", "decode_frames", "default_replicas",
     "driver_model", "lost_errors", "replica_class", "replica_options", "require_ray", "start_error", "task_error"),
    "mtvbench.dispatch.ray"))
