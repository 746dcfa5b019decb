"""Names renamed so that each word means one thing (issue 17 item 8; the glossary in docs/architecture.md) keep
working for one release: the old module or keyword gives the same object, with a DeprecationWarning that names
the new spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtvbench.construct.stages import STAGES, register_stage
from mtvbench.registry import RegistryError

OLD_WS = Path(__file__).resolve().parent / "fixtures" / "workspaces" / "main-af4e2a6-offline"

def test_no_stage_may_take_the_stored_name_of_a_renamed_one() -> None:
    with pytest.raises(RegistryError, match="'score': the artifacts of the built-in stage 'suitability'"):
        register_stage("score", STAGES.get("suitability"))
