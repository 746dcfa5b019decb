"""One owner of the run directory (issue 26, point 2): one rule says whether a folder is a run directory, and
every reader gives the same answer; config.yaml is read in one module; validating the run settings reads no
file (the protocol of an existing ``--out`` is given where the settings are made); one record of a loaded run."""

from __future__ import annotations

import ast
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from mtvbench.analysis.sweep import points_from_dirs
from mtvbench.config import RunConfig
from mtvbench.errors import MtvbenchError
from mtvbench.review.source import open_source
from tests.support.datasets import make_dataset
from tests.support.run_helpers import cli
from tests.support.runs import make_store_run
from tests.support.source import parsed

SRC = Path(__file__).resolve().parents[2] / "src" / "mtvbench"
RUN_FILES = ("config.yaml", "benchmark.json", "store.sqlite")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("rundir")
    data = make_dataset(tmp / "data")
    return data, make_store_run(data, tmp / "whole", model="oracle")


def _partial(finished: tuple[Path, Path], tmp_path: Path, dropped: tuple[str, ...]) -> Path:
    """A copy of a finished run directory without the files ``dropped``, alone in a folder of its own."""
    run = tmp_path / "sweep" / "partial"
    shutil.copytree(finished[1], run)
    for name in dropped:
        (run / name).unlink()
    return run


def _error_line(thunk) -> str:  # noqa: ANN001
    with pytest.raises(MtvbenchError) as e:
        thunk()
    return e.value.message


#: every way to have some of a run directory's files but not all: the first file missing is the one named
PARTIAL = [("benchmark.json",), ("config.yaml",), ("store.sqlite",), ("config.yaml", "store.sqlite"),
           ("benchmark.json", "store.sqlite"), ("config.yaml", "benchmark.json")]


@pytest.mark.parametrize("dropped", PARTIAL, ids=["-".join(d) for d in PARTIAL])
def test_a_partial_run_directory_is_the_same_error_in_every_reader(finished: tuple[Path, Path], tmp_path: Path,
                                                                   dropped: tuple[str, ...]) -> None:
    run = _partial(finished, tmp_path, dropped)
    first = next(name for name in RUN_FILES if name in dropped)
    expected = f"{run / first}: missing (is {run} a run directory?)"
    assert _error_line(lambda: points_from_dirs(run.parent)) == expected  # sweep, re-read from its folder
    assert _error_line(lambda: open_source(run)) == expected  # the review app's run source
    for args in (("report", run, "--out", tmp_path / "rep", "--thumbnails", "0"), ("stats", run, "--no-per-task"),
                 ("score", run), ("compare", run, finished[1])):
        res = cli(*args)
        assert res.exit_code == 2, (args, res.output)
        assert expected in " ".join(res.output.split()) and "Traceback" not in res.output, (args, res.output)
    assert not (tmp_path / "rep").exists()  # a refused report makes no --out folder


def test_a_whole_run_directory_is_one_everywhere_and_a_folder_of_none_is_none(finished: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    data, whole = finished
    assert open_source(whole).kind == "run"
    res = cli("stats", whole, "--no-per-task")
    assert res.exit_code == 0 and "\t30\t" in res.output, res.output  # its benchmark.json: 30 QAs
    folder = tmp_path / "sweep"
    shutil.copytree(whole, folder / "a")
    (folder / "frame-cache").mkdir()  # a folder with none of the files is no run directory: left out
    (folder / "notes.txt").write_text("not a run")
    points = points_from_dirs(folder)
    assert {p.run_dir.name for p in points} == {"a"} and {p.axis for p in points} == {"frames", "max_side", "context"}
    assert open_source(data).kind == "dataset"  # a dataset has none of the files: another kind of folder


def test_config_yaml_is_read_in_one_module() -> None:
    """The file names of a run directory are spelled in code (not prose) in run/rundir.py only."""
    spelled: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        tree = parsed(path)
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and node.value in ("config.yaml", "benchmark.json")
                    and id(node) not in docstrings):
                spelled.setdefault(node.value, set()).add(str(path.relative_to(SRC)))
    assert spelled == {"config.yaml": {"run/rundir.py"}, "benchmark.json": {"run/rundir.py"}}
    readers = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
               if "config.yaml" in p.read_text(encoding="utf-8") and "safe_load" in p.read_text(encoding="utf-8")}
    assert readers == {"run/rundir.py"}


def _paper_run(finished: tuple[Path, Path], tmp_path: Path) -> Path:
    run = tmp_path / "paper-run"
    shutil.copytree(finished[1], run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["protocol"] = "paper"
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def test_validating_run_settings_reads_no_file(finished: tuple[Path, Path], tmp_path: Path) -> None:
    run = _paper_run(finished, tmp_path)
    opened: list[str] = []
    watching = [True]

    def hook(event: str, args: tuple) -> None:
        if watching[0] and event == "open" and isinstance(args[0], (str, Path)) and str(run) in str(args[0]):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # an audit hook cannot be removed: it stops watching at the end
    try:
        cfg = RunConfig.model_validate({"data": finished[0], "model": "oracle", "judge": "offline", "out": run})
        again = RunConfig(data=finished[0], model="oracle", judge="offline", out=run)
    finally:
        watching[0] = False
    assert opened == []
    assert cfg.protocol == again.protocol == "authors"  # not the run directory's: the edge gives that
    with pytest.raises(Exception, match="frozen"):
        cfg.protocol = "paper"  # type: ignore[misc]  # one immutable spec


@pytest.mark.parametrize("recorded", ["paper", "authors"])
def test_the_edge_keeps_an_existing_runs_protocol(finished: tuple[Path, Path], tmp_path: Path,
                                                  recorded: str) -> None:
    import mtvbench

    run = _paper_run(finished, tmp_path)
    if recorded == "authors":
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["protocol"] = "authors"
        (run / "config.yaml").write_text(yaml.safe_dump(config))
    values = {"data": finished[0], "model": "oracle", "judge": "offline", "out": run}
    assert mtvbench.build_config(values).protocol == recorded
    other = "authors" if recorded == "paper" else "paper"
    assert mtvbench.build_config({**values, "protocol": other}).protocol == other  # a given one wins
    assert mtvbench.build_config({**values, "out": tmp_path / "new"}).protocol == "authors"  # a new one: default
    (run / "config.yaml").write_text("model: [unclosed\n  : :")  # unreadable: the run says so, under its lock
    assert mtvbench.build_config(values).protocol == "authors"


def test_one_record_of_a_loaded_run(finished: tuple[Path, Path]) -> None:
    """Loading a run directory gives one record, whoever loads it, and no other record in src holds a run's
    scores with its per-dialogue scores."""
    from mtvbench.run.rundir import RunData, RunDirectory

    _, whole = finished
    run = RunDirectory.open(whole).load(details=True)
    assert type(run) is RunData
    assert json.loads(run.scores.model_dump_json()) == json.loads((whole / "scores.json").read_text())
    assert run.dialogues is run.snapshot.dialogues and set(run.videos) == set(run.snapshot.videos)
    assert run.dialogue_score.keys() == run.dialogue_by_id.keys() == {d.id for d in run.dialogues}
    records = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ClassDef):
                fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                          and isinstance(s.target, ast.Name)}
                if {"scores", "dscores", "responses"} <= fields:
                    records.append(f"{path.relative_to(SRC)}:{node.name}")
    assert records == ["run/rundir.py:RunData"]


def test_evaluate_async_holds_what_it_opens_on_one_exit_stack() -> None:
    """No try statement in ``evaluate_async``: the dispatcher, the backends, the lock and the store session are
    released by one exit stack (the guarantees themselves: tests/run/test_evaluate_async.py, test_signals.py)."""
    tree = parsed(SRC / "run" / "evaluate.py")
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef) and n.name == "evaluate_async")
    assert not [n for n in ast.walk(fn) if isinstance(n, ast.Try)]
    assert any(isinstance(n, ast.AsyncWith) for n in ast.walk(fn))
