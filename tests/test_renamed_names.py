"""Names renamed so that each word means one thing (issue 17 item 8; the glossary in docs/architecture.md) keep
working for one release: the old module or keyword gives the same object, with a DeprecationWarning that names
the new spelling."""

from __future__ import annotations

import importlib

import pytest

#: (old module, a name in it, the module it moved to)
MOVED_MODULES = [
    ("mtvbench.construct.records", "Artifact", "mtvbench.construct.artifacts"),
    ("mtvbench.construct.records", "VideoRecord", "mtvbench.construct.artifacts"),
    ("mtvbench.construct.llm", "StageModel", "mtvbench.construct.calls"),
    ("mtvbench.construct.llm", "text_check", "mtvbench.construct.calls"),
    ("mtvbench.review.model", "ReviewItem", "mtvbench.review.decisions"),
    ("mtvbench.review.model", "status_of", "mtvbench.review.decisions"),
    ("mtvbench.util.tables", "csv_records", "mtvbench.util.rowfiles"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED_MODULES)
def test_a_moved_module_still_gives_its_names_with_a_warning(old: str, name: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} is now {new}.{name}"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_stage_run_is_now_make() -> None:
    from pydantic import BaseModel

    from mtvbench import Stage

    async def make(ctx: object, v: object) -> BaseModel:
        return BaseModel()

    new = Stage(make=make, artifact=BaseModel, help="h")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match=r"Stage.run is now Stage.make"):
        old = Stage(run=make, artifact=BaseModel, help="h")  # type: ignore[arg-type]
    assert old == new and old.make is make
    with pytest.warns(DeprecationWarning, match=r"Stage.run is now Stage.make"):
        assert new.run is make
