"""No file-level import cycle in ``mtvbench.construct``: a stage module imports the stage registry and the
artifacts of the stages before it, the build settings are assembled from the registry, and nothing the
registry or the settings import leads back to a stage module.

Imports are counted as tests/test_import_graph.py counts them (every import: inside functions and under
``if TYPE_CHECKING:`` too); ``from PACKAGE import NAME`` counts as an import of the module ``PACKAGE.NAME``
when there is one.
"""

from __future__ import annotations

from tests.test_import_graph import cycles, file_edges


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_stage_modules_are_seen() -> None:
    graph = file_edges("mtvbench.construct")
    assert "mtvbench.construct.stages" in graph["mtvbench.construct.stages.caption"]
    assert "mtvbench.construct.stages.split" in graph["mtvbench.construct.stages.caption"]
    assert "mtvbench.construct.stages" in graph["mtvbench.construct.config"]


def test_no_file_level_import_cycle_in_construct() -> None:
    found = cycles(file_edges("mtvbench.construct"))
    assert not found, "modules of mtvbench.construct that import each other (directly or through others):\n" + \
        "\n".join(" <-> ".join(c) for c in found)
