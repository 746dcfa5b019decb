"""What a run directory stores of its settings, and how what was stored before is read now.

- :data:`RUN_SCHEMA_VERSION`: the format of a run directory (store meta, config.yaml, benchmark.json);
  :data:`RECORD_KEYS`: what config.yaml records besides the settings;
- :func:`stored_protocol`: a run directory keeps its protocol;
- :func:`identity_differences`: the rule by which a stored run identity is compared with the current
  one. The keys of :data:`RECORDED_IDENTITY_KEYS` (the model's backend options that can change an
  answer) are recorded, not refused: a changed value is stored as the run directory's, and the
  fingerprints of its results ask again whatever it changed; a run directory made before they were
  recorded lacks them, which is "not recorded", filled in, never refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mtvbench.config.loading import MAX_CONFIG_BYTES
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


def stored_protocol(out: Path | str | None) -> ProtocolName | None:
    """The protocol of the run directory ``out`` from its config.yaml, None when ``out`` is no run directory (yet),
    records none or is unreadable."""
    if out is None:
        return None
    path = Path(out) / "config.yaml"
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None  # reading the run directory later says what is wrong with it
    if not isinstance(data, dict):
        return None
    found = data.get("protocol")
    return found if found in ("authors", "paper") else None  # type: ignore[return-value]


def identity_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The identity keys whose stored value differs from the current one (sorted): what makes a run directory
    one of other settings. The keys of :data:`RECORDED_IDENTITY_KEYS` never do (changed or not recorded yet)."""
    return [k for k in sorted(set(stored) | set(current))
            if stored.get(k) != current.get(k) and k not in RECORDED_IDENTITY_KEYS]
