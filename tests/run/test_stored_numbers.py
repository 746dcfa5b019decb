"""Numbers and records read back from a run store are checked like input (issue 25, point 4): a negative or
non-numeric token count or latency, a broken JSON column, a meta row of the wrong shape is one error naming the
file, the table, the row and the column, for every reader (`score`, `estimate --from-run`, `run` resuming), never
an internal error or a negative usage. The store is edited with SQLite directly, as another program would."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from mtvbench.run.evaluate import evaluate
from tests.support.openai_server import LoopbackServer
from tests.support.run_helpers import cfg_for, cli, cli_run, settings


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(dataset, run directory) of a run against a loopback server, made once; each test edits a copy."""
    from tests.support.datasets import make_dataset

    base = tmp_path_factory.mktemp("stored")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MTVBENCH_CACHE", str(base / "user-cache"))
        data = make_dataset(base / "data")
        with LoopbackServer() as srv:
            evaluate(cfg_for(data, base / "run", srv.url, base / "cache", judge_runs=1))
    return data, base / "run"


@pytest.fixture
def run(finished: tuple[Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(finished[1], tmp_path / "run"))


#: (table, column, stored value, what it is said not to be): negative, text, non-finite, broken JSON, wrong shape
BAD = [
    ("calls", "completion_tokens", -39_000_000, "a count"),
    ("calls", "prompt_tokens", "many", "a count"),
    ("calls", "requests", -1, "a count"),
    ("calls", "cached_tokens", 2.5, "a count"),
    ("calls", "latency_s", -5, "a number of seconds"),
    ("calls", "latency_s", "slow", "a number of seconds"),
    ("calls", "latency_s", float("inf"), "a number of seconds"),
    ("calls", "created", "yesterday", "a time"),
    ("calls", "role", "modle", "one of model, judge"),
    ("calls", "outcome", "fine", "one of ok"),
    ("sessions", "started", "noon", "a time"),
    ("sessions", "ended", float("-inf"), "a time"),
    ("responses", "usage", '{"prompt_tokens": -3}', "the tokens of a call"),
    ("responses", "usage", "not json", "JSON"),
    ("responses", "parts", "[1, 2]", "JSON of a mapping"),
    ("responses", "latency_s", "abc", "a number of seconds"),
    ("responses", "attempts", -2, "a count"),
    ("responses", "text", sqlite3.Binary(b"\xff\xfe"), "text"),
    ("responses", "outcome", "maybe", "one of ok"),
    ("verdicts", "raw", "{", "JSON"),
    ("verdicts", "run", -1, "a count"),
    ("verdicts", "usage", '{"completion_tokens": -1}', "the tokens of a call"),
    ("verdicts", "verdicts", '{"A1": "perhaps"}', "a stored judge run"),
    ("verdicts", "latency_s", "x", "a number of seconds"),
]


def _set(run: Path, table: str, column: str, value: object) -> int:
    with sqlite3.connect(run / "store.sqlite") as db:
        (rowid,) = db.execute(f"SELECT rowid FROM {table} ORDER BY rowid LIMIT 1").fetchone()
        db.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (value, rowid))
    return rowid


@pytest.mark.parametrize(("table", "column", "value", "what"), BAD,
                         ids=[f"{t}.{c}={bytes(v) if isinstance(v, memoryview) else v!r}" for t, c, v, _ in BAD])
def test_a_bad_stored_value_is_one_error_naming_its_row_and_column(run: Path, table: str, column: str,
                                                                   value: object, what: str) -> None:
    rowid = _set(run, table, column, value)
    res = cli("score", str(run))
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert f"store.sqlite: table {table}, row {rowid}, column {column}:" in text and f"is not {what}" in text, text
    assert "internal error" not in text and "Traceback" not in text


def test_a_report_refused_by_a_bad_row_leaves_no_folder_it_made_and_keeps_one_that_was_there(run: Path,
                                                                                           tmp_path: Path) -> None:
    _set(run, "verdicts", "run", -1)
    res = cli("report", str(run), "--out", str(tmp_path / "new"), "--thumbnails", "0")
    assert res.exit_code == 2 and "column run:" in " ".join(res.output.split()), res.output
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("mine")
    res = cli("report", str(run), "--out", str(kept), "--thumbnails", "0")
    assert res.exit_code == 2 and (kept / "mine.txt").read_text() == "mine"


@pytest.mark.parametrize("raw", ["[1, 2]", '[null]', '["fine", {"A1": "yes"}]'])
def test_a_reply_read_again_from_a_raw_reply_that_is_not_text_is_the_raw_columns_error(run: Path, raw: str) -> None:
    """A judge reply stored once is read again from the last raw reply: a raw reply that is not text is the raw
    column's error (not a TypeError from the reading)."""
    rowid = _set(run, "verdicts", "raw", raw)
    with sqlite3.connect(run / "store.sqlite") as db:
        db.execute("UPDATE verdicts SET reply_from_raw=1, reply=NULL WHERE rowid=?", (rowid,))
    res = cli("score", str(run))
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert f"store.sqlite: table verdicts, row {rowid}, column raw:" in text, text
    assert "internal error" not in text and "Traceback" not in text


@pytest.mark.parametrize(("column", "value"), [("completion_tokens", -39_000_000), ("latency_s", -5),
                                               ("completion_tokens", "lots"), ("latency_s", "NaN-ish")])
def test_estimate_from_run_refuses_bad_stored_numbers(finished: tuple[Path, Path], run: Path, column: str,
                                                      value: object) -> None:
    data = finished[0]
    rowid = _set(run, "calls", column, value)
    res = cli("estimate", "--data", str(data), "--model", "openai:test-model", "--judge", "offline",
              "--from-run", str(run))
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert f"table calls, row {rowid}, column {column}:" in text, text
    assert "internal error" not in text and "Estimate" not in text  # no table with the stored numbers in it


def test_estimate_from_a_good_store_still_works(finished: tuple[Path, Path], run: Path) -> None:
    res = cli("estimate", "--data", str(finished[0]), "--model", "openai:test-model", "--judge", "offline",
              "--from-run", str(run), "--format", "json")
    assert res.exit_code == 0, res.output
    assert '"completion_source": "from-run"' in res.output


@pytest.mark.parametrize(("key", "value"), [("dataset", '"a string"'), ("dataset", '{"root": 3}'),
                                            ("identity", "[1]"), ("dataset", "{not json")])
def test_a_meta_row_of_the_wrong_shape_is_named(finished: tuple[Path, Path], run: Path, key: str, value: str) -> None:
    with sqlite3.connect(run / "store.sqlite") as db:
        db.execute("UPDATE meta SET value=? WHERE key=?", (value, key))
    # resuming with the run's own settings reads the meta rows back
    res = cli_run(settings(finished[0], run, "http://127.0.0.1:9/v1", run.parent / "cache", judge_runs=1))
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert f"table meta, row '{key}', column value:" in text and "internal error" not in text, text
