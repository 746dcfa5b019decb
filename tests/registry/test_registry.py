"""The registry mechanism every registry uses: unique names, lazy ``module:attr`` entries, entry points, suggestions."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from mtvbench.analysis.registry import ANALYSES
from mtvbench.construct.stages import STAGES, Stage, stage_names
from mtvbench.models.hf_families import FAMILIES
from mtvbench.models.registry import BACKENDS, Backend, UnknownModelError, create_backend, known_prefixes
from mtvbench.registry import DuplicateNameError, Registry, RegistryError, UnknownNameError


def test_a_name_is_taken_once() -> None:
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(DuplicateNameError, match="thing 'a' is registered twice"):
        reg.add("a", 2)
    with pytest.raises(DuplicateNameError, match="thing 'a' is registered twice"):
        reg.register("a")(lambda: None)
    assert reg.get("a") == 1


def test_references_load_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "regmod_lazy.py").write_text("LOADED = True\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[int] = Registry("number")
    reg.add("answer", "regmod_lazy:VALUE")
    assert "regmod_lazy" not in sys.modules and reg.names() == ["answer"]  # listing imports nothing
    assert reg.get("answer") == 42 and "regmod_lazy" in sys.modules


def test_a_module_that_registers_itself_while_loading_is_not_a_duplicate(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "regmod_self.py").write_text(
        "from tests.registry.test_registry import SELF_REG\n@SELF_REG.register('me')\ndef me():\n    return 'me'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    SELF_REG.add("me", "regmod_self:me")
    assert SELF_REG.get("me")() == "me"


SELF_REG: Registry = Registry("self-registering thing")


def test_a_module_imported_before_its_reference_loads_may_register_its_own_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "regmod_first.py").write_text(
        "from tests.registry.test_registry import FIRST_REG\n@FIRST_REG.register('mine')\ndef mine():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    FIRST_REG.add("mine", "regmod_first:mine")
    import regmod_first  # noqa: F401 - imported directly, as a program may do

    assert FIRST_REG.get("mine")() == 1
    with pytest.raises(DuplicateNameError, match="'mine' is registered twice"):  # another module may not take it
        FIRST_REG.add("mine", lambda: 2, origin="someone_else")


FIRST_REG: Registry = Registry("thing")


def test_unknown_names_get_suggestions() -> None:
    reg: Registry[int] = Registry("colour")
    for name in ("red", "green", "blue"):
        reg.add(name, 1)
    with pytest.raises(UnknownNameError, match=r"unknown colour 'gren' \(did you mean 'green'\?\)"):
        reg.get("gren")
    with pytest.raises(UnknownNameError, match="known: red, green, blue"):
        reg.get("purple")


def test_bad_references_and_entries_are_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "regmod_bad.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[int] = Registry("number", coerce=lambda x: x if isinstance(x, int) else (_ for _ in ()).throw(
        TypeError(f"not a number: {x!r}")))
    reg.add("broken", "regmod_bad:X")
    reg.add("missing", "regmod_nowhere_at_all:X")
    reg.add("noattr", "sys:no_such_attribute")
    reg.add("text", "sys:platform")
    with pytest.raises(RegistryError, match="number 'broken' .* failed to load: RuntimeError: boom"):
        reg.get("broken")
    with pytest.raises(RegistryError, match="ModuleNotFoundError"):
        reg.get("missing")
    with pytest.raises(RegistryError, match="has no attribute 'no_such_attribute'"):
        reg.get("noattr")
    with pytest.raises(RegistryError, match="number 'text': not a number"):
        reg.get("text")


def test_entry_points_are_listed_and_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import mtvbench.registry as registry

    eps = [EntryPoint(name="lazy-one", value="tests.registry.test_registry:SELF_REG", group="demo.group"),
           EntryPoint(name="red", value="os:sep", group="demo.group")]
    monkeypatch.setattr(registry, "entry_points", lambda group: [e for e in eps if e.group == group])
    reg: Registry = Registry("demo", group="demo.group")
    assert reg.names() == ["lazy-one", "red"]
    assert reg.get("lazy-one") is SELF_REG
    clash: Registry = Registry("demo", group="demo.group")
    with pytest.raises(DuplicateNameError, match="entry point 'os:sep'"):
        clash.add("red", 1)


def test_the_four_registries_hold_the_built_ins() -> None:
    assert set(known_prefixes()) >= {"openai", "gemini", "hf", "vllm", "oracle", "refuse"}
    assert isinstance(BACKENDS.get("hf"), Backend) and BACKENDS.get("hf").extra == "hf"
    assert "torch" not in BACKENDS.get("hf").factory  # still a reference: nothing heavy was imported
    assert set(FAMILIES.names()) >= {"internvl", "minicpm", "videochat_flash", "videollama3"}
    assert set(ANALYSES.names()) >= {"report", "compare", "agreement", "stats", "scenes", "sweep"}
    assert stage_names()[:10] == ("split", "caption", "merge", "keyframes", "detect", "objects", "crossscene",
                                  "suitability", "generate", "checklists")
    assert all(isinstance(STAGES.get(s), Stage) for s in stage_names())
    assert create_backend("oracle").name == "oracle"
    with pytest.raises(UnknownModelError, match=r"unknown model 'oracel:x'.*did you mean oracle"):
        create_backend("oracel:x")


def test_a_broken_stage_of_another_package_leaves_build_working(tmp_path: Path) -> None:
    import os
    import subprocess

    dist = tmp_path / "site" / "mtvbench_broken-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mtvbench-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mtvbench.stages]\nbroken = mtvbench_no_such_module:STAGE\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(root / "src")]),
           "COLUMNS": "200"}
    helped = subprocess.run([sys.executable, "-m", "mtvbench", "build", "--help"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert helped.returncode == 0 and "broken" in helped.stdout and "failed to load" in helped.stdout
    ran = subprocess.run([sys.executable, "-m", "mtvbench", "build", "broken", "-w", str(tmp_path / "ws")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 2 and "construction stage 'broken'" in ran.stderr and "Traceback" not in ran.stderr
    assert not (tmp_path / "ws").exists()  # nothing written
