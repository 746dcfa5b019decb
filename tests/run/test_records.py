"""Self-describing run directories: format versions, clear errors for other formats and corrupt files,
no half-made directory after an early error."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from mtvbench import __version__
from mtvbench.config import RUN_SCHEMA_VERSION
from mtvbench.run.store import STORE_FORMAT
from tests.support.run_helpers import cli


@pytest.fixture
def run(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    res = cli("run", "--data", dataset, "--model", "oracle", "--judge", "offline", "--out", out, "--judge-runs", "1",
              "--quiet")
    assert res.exit_code == 0, res.output
    return out


def test_every_record_names_its_format_and_version(run: Path) -> None:
    with sqlite3.connect(run / "store.sqlite") as c:
        meta = {k: json.loads(v) for k, v in c.execute("SELECT key, value FROM meta")}
    assert meta["schema_version"] == STORE_FORMAT and meta["mtvbench_version"] == __version__
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["schema_version"] == RUN_SCHEMA_VERSION and cfg["mtvbench_version"] == __version__
    snap = json.loads((run / "benchmark.json").read_text())
    assert snap["schema_version"] == RUN_SCHEMA_VERSION and snap["turn_keys"] and snap["video_keys"]
    scores = json.loads((run / "scores.json").read_text())
    assert scores["schema_version"] >= 2 and scores["mtvbench_version"] == __version__
    assert cli("score", run).exit_code == 0
    # a run directory's config.yaml can be passed back to `run --config` as is
    res = cli("run", "--config", run / "config.yaml", "--quiet")
    assert res.exit_code == 0, res.output


def _one_clear_error(res, *needles: str) -> None:  # noqa: ANN001 - click's Result
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert out.startswith("error:") and out.count("error:") == 1 and "Traceback" not in out
    for n in needles:
        assert n in out, (n, out)


def test_store_of_another_format_is_refused_not_misread(run: Path, dataset: Path) -> None:
    with sqlite3.connect(run / "store.sqlite") as c:  # what a store of the first format looks like
        c.execute("DELETE FROM meta WHERE key IN ('schema_version', 'mtvbench_version')")
    for args in (["score", run], ["run", "--data", dataset, "--model", "oracle", "--judge", "offline", "--out", run,
                                  "--judge-runs", "1"]):
        _one_clear_error(cli(*args), "store.sqlite", "run-store format 1", f"reads format {STORE_FORMAT}")


@pytest.mark.parametrize("found", [1, 99])
def test_config_of_another_format_is_refused(run: Path, found: int) -> None:
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["schema_version"] = found
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    _one_clear_error(cli("score", run), "config.yaml", f"run-directory format {found}",
                     f"reads format {RUN_SCHEMA_VERSION}")


@pytest.mark.parametrize(("name", "content"), [
    ("store.sqlite", b"this is not a database, it has been overwritten" * 100),
    ("config.yaml", b"model: [unclosed\n  : :"),
    ("benchmark.json", b'{"schema_version": 2, "dialogues": [{"task": '),
    ("benchmark.json", b'{"schema_version": 2, "dialogues": [{"task": "nope"}], "videos": {}}'),
])
def test_corrupt_file_is_one_line_naming_it(run: Path, name: str, content: bytes) -> None:
    (run / name).write_bytes(content)
    for suffix in ("-wal", "-shm"):
        (run / f"store.sqlite{suffix}").unlink(missing_ok=True)
    _one_clear_error(cli("score", run), str(run / name))
    _one_clear_error(cli("report", run, "--out", run.parent / "rep"), str(run / name))


def test_out_that_is_a_file_is_an_error(dataset: Path, tmp_path: Path) -> None:
    f = tmp_path / "results.txt"
    f.write_text("keep me")
    _one_clear_error(cli("run", "--data", dataset, "--model", "oracle", "--judge", "offline",
                         "--out", f), str(f), "is a file")
    _one_clear_error(cli("score", f), str(f), "is a file")
    assert f.read_text() == "keep me"


def test_early_errors_leave_no_run_directory(dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "run"
    _one_clear_error(cli("run", "--data", dataset, "--model", "openai:gpt-x", "--judge", "offline",
                         "--out", out), "OPENAI_API_KEY")
    _one_clear_error(cli("run", "--data", tmp_path / "nowhere", "--model", "oracle", "--judge", "offline",
                         "--out", out), "does not exist")
    _one_clear_error(cli("run", "--data", dataset, "--model", "oracle", "--judge", "nosuch:judge", "--out", out),
                     "unknown model")
    assert not out.exists()


def test_config_records_the_base_url_actually_used(dataset: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.openai_server import LoopbackServer

    with LoopbackServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)  # the URL comes from the environment, not a flag
        res = cli("run", "--data", dataset, "--model", "openai:m", "--judge", "offline", "--out", tmp_path / "r",
                  "--frames", "2", "--judge-runs", "1", "--quiet", "--tasks", "OR")
        assert res.exit_code == 0, res.output
        cfg = yaml.safe_load((tmp_path / "r" / "config.yaml").read_text())
        assert cfg["endpoints"] == {"model": srv.url, "judge": None}  # the offline judge calls nothing
        assert cfg["model_settings"]["base_url"] is None  # the setting stays as given
        assert cli("score", tmp_path / "r").exit_code == 0  # the record is read back, not taken for a setting
        monkeypatch.delenv("OPENAI_BASE_URL")
        res = cli("run", "--data", dataset, "--model", "openai:m", "--judge", "openai:j", "--judge-base-url", srv.url,
                  "--model-base-url", srv.url, "--out", tmp_path / "r2", "--frames", "2", "--judge-runs", "1",
                  "--quiet", "--tasks", "OR")
        assert res.exit_code == 0, res.output
    assert yaml.safe_load((tmp_path / "r2" / "config.yaml").read_text())["endpoints"] == {"model": srv.url,
                                                                                           "judge": srv.url}
