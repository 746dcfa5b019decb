"""What a run directory stores of its settings (the files are :class:`mtvbench.run.rundir.RunDirectory`'s,
which alone reads them), and how a stored run identity is compared with the current one.

- :data:`RUN_SCHEMA_VERSION`: the format of a run directory (store meta, config.yaml, benchmark.json);
  :data:`RECORD_KEYS`: what config.yaml records besides the settings;
- :func:`identity_differences`: the rule by which a stored run identity is compared with the current
  one. The keys of :data:`RECORDED_IDENTITY_KEYS` (the model's backend options that can change an
  answer) are recorded, not refused: a changed value is stored as the run directory's, and the
  fingerprints of its results ask again whatever it changed; a run directory made before they were
  recorded lacks them, which is "not recorded", filled in, never refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mtvbench.protocol import ProtocolName

#: version of the run-directory format (store meta, config.yaml, benchmark.json); bumped when a
#: stored field changes meaning or the store gains one, so a run directory of another format is refused, not
#: misread. 3: also the characters replaced in each response and verdict (``replaced_characters``) and an
#: ``authors`` judge reply stored once (``reply_from_raw``)
RUN_SCHEMA_VERSION = 3
#: keys a run directory's config.yaml carries besides the settings (so it can be passed to --config)
#: what a run directory's config.yaml records besides the settings (read back, never a setting):
#: the format, the version that wrote it, the base URL each role actually called, what the model was sent, and
#: why the data is not a real benchmark (:class:`mtvbench.data.schema.NotABenchmark`; null for a real one)
RECORD_KEYS = ("schema_version", "mtvbench_version", "endpoints", "inference_sent", "not_a_benchmark")
#: the protocol of a new run directory
DEFAULT_PROTOCOL: ProtocolName = "authors"
#: identity keys whose change is recorded, not refused (:meth:`mtvbench.config.RunConfig.identity`): the model's
#: backend options that can change an answer (after a server refused video parts the same run directory goes
#: on with ``--model-option video_part=false``; the turns are asked again). Absent in a run directory made
#: before they were recorded.
RECORDED_IDENTITY_KEYS = ("model_options",)


def identity_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The identity keys whose stored value differs from the current one (sorted): what makes a run directory
    one of other settings. The keys of :data:`RECORDED_IDENTITY_KEYS` never do (changed or not recorded yet)."""
    return [k for k in sorted(set(stored) | set(current))
            if stored.get(k) != current.get(k) and k not in RECORDED_IDENTITY_KEYS]
