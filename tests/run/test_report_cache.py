"""The report cache (run.reportcache): a report of runs read before reads what it kept of them instead of
their stores, and says exactly what a report that read them whole says; any change to what produced an
entry (the bytes of config.yaml, benchmark.json, the store or its log, the bootstrap draws, the code) reads
the run whole again; an entry is never kept for a run that changed while it was read; a cache that cannot be
used only costs speed."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from mtvbench.analysis.report import build_report
from mtvbench.records import ProviderResource
from mtvbench.run import reportcache
from mtvbench.run.reportcache import ReportCache
from mtvbench.run.rescore import score_dir
from mtvbench.run.rundir import RunDirectory
from mtvbench.run.store import RunStore
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run

DRAWS = 40
TOKEN = re.compile(r'"[0-9a-f]{32}"')  # the page's random token, in every file beside it


@pytest.fixture
def run(tmp_path: Path) -> Path:
    data = make_dataset(tmp_path / "data")
    return make_store_run(data, tmp_path / "run", model="m", judge_runs=2, bootstrap=DRAWS,
                          flip=lambda tid, r, key: (hash((tid, r, key)) % 3) == 0)


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run directories read whole (their stores' rows read and scored) from now on."""
    seen: list[Path] = []
    real = RunDirectory.load

    def load(self: RunDirectory, *args, **kwargs):
        seen.append(self.path)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunDirectory, "load", load)
    return seen


def report(runs: list[Path], out: Path, draws: int = DRAWS) -> dict[str, str]:
    """Every file of the report (the page's random token left out) and the scores, as text."""
    res = build_report(runs, out, bootstrap=draws, thumbs=0)
    files = {str(p.relative_to(out)): TOKEN.sub("T", p.read_text()) for p in sorted(out.rglob("*"))
             if p.is_file() and p.suffix in (".js", ".csv", ".md", ".tex", ".json")}
    files["scores"] = "\n".join(s.model_dump_json(exclude={"left_on_server"}) for _, s in res.rows)
    return files


def read_whole(runs: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch, draws: int = DRAWS) -> dict[str, str]:
    """The report of ``runs`` with an empty cache (every run read whole)."""
    with monkeypatch.context() as m:
        m.setenv("MTVBENCH_CACHE", str(out.with_name(out.name + "-empty-cache")))
        return report(runs, out, draws)


def test_a_report_of_an_ended_run_reads_its_entry_and_says_the_same(run, tmp_path, whole_reads, monkeypatch):
    # the run ended as every run ends (score_dir, in make_store_run): its entry is kept
    ended = report([run], tmp_path / "r1")
    assert whole_reads == []
    assert ended == read_whole([run], tmp_path / "r2", monkeypatch)
    assert whole_reads == [run]


def test_a_report_keeps_the_entry_of_a_run_it_read_whole(run, tmp_path, whole_reads, monkeypatch):
    for entry in ReportCache().root.glob("*/*.json"):
        entry.unlink()
    first = report([run], tmp_path / "r1")
    assert whole_reads == [run]
    assert report([run], tmp_path / "r2") == first
    assert whole_reads == [run]  # not read whole again


def _edit_store_sql(run: Path) -> None:
    with sqlite3.connect(run / "store.sqlite") as db:
        db.execute("DELETE FROM verdicts WHERE rowid = (SELECT min(rowid) FROM verdicts)")


def _edit_store_bytes(run: Path) -> None:
    """An answer's bytes changed in the file itself, the length kept (no SQL: no trigger or counter sees it)."""
    with sqlite3.connect(run / "store.sqlite") as db:
        (text,) = db.execute("SELECT text FROM responses ORDER BY rowid LIMIT 1").fetchone()
    path = run / "store.sqlite"
    raw = path.read_bytes()
    old = text.encode()
    assert raw.count(old) >= 1 and len(old) > 4
    path.write_bytes(raw.replace(old, old[:-4] + b"XXXX", 1))


def _config_comment(run: Path) -> None:
    with (run / "config.yaml").open("a") as f:
        f.write("# edited\n")


def _snapshot_spaced(run: Path) -> None:
    path = run / "benchmark.json"
    path.write_text(path.read_text() + "\n")


def _log_not_in_file(run: Path) -> None:
    """A committed call in the store's write-ahead log, not yet in the file: a connection left open keeps it
    there (closed at the end of the session)."""
    db = sqlite3.connect(run / "store.sqlite")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("INSERT INTO calls (session, role, turn_id, outcome, requests, prompt_tokens, completion_tokens, "
               "latency_s, created) VALUES (NULL, 'judge', 'x', 'ok', 1, 12345, 6, 0.5, ?)", (time.time(),))
    db.commit()
    _open.append(db)
    assert (run / "store.sqlite-wal").stat().st_size > 0


_open: list[sqlite3.Connection] = []


@pytest.fixture(autouse=True)
def _close_left_open():
    yield
    while _open:
        _open.pop().close()


@pytest.mark.parametrize("change", [_edit_store_sql, _edit_store_bytes, _config_comment, _snapshot_spaced,
                                    _log_not_in_file],
                         ids=["store-row-deleted-with-sqlite3", "store-bytes-edited", "config-comment-added",
                              "snapshot-bytes-changed", "committed-write-in-the-log"])
def test_any_change_to_what_produced_an_entry_reads_the_run_whole(change, run, tmp_path, whole_reads, monkeypatch):
    report([run], tmp_path / "before")
    change(run)
    whole_reads.clear()
    after = report([run], tmp_path / "after")
    assert whole_reads == [run]
    assert after == read_whole([run], tmp_path / "fresh", monkeypatch)
    assert report([run], tmp_path / "again") == after  # and that state's entry is kept
    assert whole_reads == [run, run]  # after, and the report with an empty cache; not "again"


def test_a_changed_store_changes_the_numbers(run, tmp_path):
    before = report([run], tmp_path / "before")
    _edit_store_sql(run)
    assert report([run], tmp_path / "after")["scores"] != before["scores"]


def test_other_draws_and_another_mtvbench_are_other_keys(run, tmp_path, whole_reads, monkeypatch):
    report([run], tmp_path / "a")
    report([run], tmp_path / "b", draws=DRAWS + 1)
    assert whole_reads == [run]
    report([run], tmp_path / "c")  # the run's own number of draws: its entry is still there
    report([run], tmp_path / "d", draws=DRAWS + 1)
    assert whole_reads == [run]
    monkeypatch.setattr(reportcache, "_code_digest", lambda: "an edited mtvbench")
    report([run], tmp_path / "e")
    assert whole_reads == [run, run]


def test_no_entry_is_kept_for_a_run_that_changed_while_it_was_read(run, tmp_path, whole_reads, monkeypatch):
    real = RunDirectory.load

    def load_then_write(self: RunDirectory, *args, **kwargs):
        got = real(self, *args, **kwargs)
        with sqlite3.connect(self.path / "store.sqlite") as db:  # a run writes right after the read
            db.execute("INSERT INTO calls (session, role, turn_id, outcome, requests, prompt_tokens, "
                       "completion_tokens, latency_s, created) VALUES (NULL, 'model', 'x', 'ok', 1, 777, 7, 0.5, 1)")
        return got

    _config_comment(run)  # a state no entry was kept for
    with monkeypatch.context() as m:
        m.setattr(RunDirectory, "load", load_then_write)
        report([run], tmp_path / "during")
    whole_reads.clear()
    after = report([run], tmp_path / "after")
    assert whole_reads == [run]  # nothing was kept for the state read while it changed
    assert after == read_whole([run], tmp_path / "fresh", monkeypatch)


def _entry_file(run: Path) -> Path:
    files = list(ReportCache().root.glob("*/*.json"))
    mine = [f for f in files if str(run.resolve()) in f.read_text()]
    assert len(mine) == 1
    return mine[0]


@pytest.mark.parametrize("spoil", ["garbage", "truncated", "another-run", "another-format"])
def test_an_entry_that_cannot_be_used_is_read_whole(spoil, run, tmp_path, whole_reads, monkeypatch):
    first = report([run], tmp_path / "first")
    entry = _entry_file(run)
    text = entry.read_text()
    if spoil == "garbage":
        entry.write_bytes(b"\x00not json")
    elif spoil == "truncated":
        entry.write_text(text[: len(text) // 2])
    elif spoil == "another-run":
        entry.write_text(text.replace(str(run.resolve()), str(run.resolve()) + "-other"))
    else:
        entry.write_text(text.replace('"format":1', '"format":99'))
    whole_reads.clear()
    assert report([run], tmp_path / "second") == first
    assert whole_reads == [run]


def test_a_cache_that_cannot_be_written_costs_only_speed(run, tmp_path, whole_reads, monkeypatch):
    blocked = tmp_path / "not-a-folder"  # where the entries would be
    blocked.write_text("a file where the cache would be")
    monkeypatch.setenv("MTVBENCH_CACHE", str(blocked))
    first = report([run], tmp_path / "a")
    assert report([run], tmp_path / "b") == first
    assert whole_reads == [run, run]
    assert blocked.read_text() == "a file where the cache would be"


def test_the_end_of_a_run_keeps_its_entry(run, tmp_path, whole_reads, monkeypatch):
    for entry in ReportCache().root.glob("*/*.json"):
        entry.unlink()
    _config_comment(run)  # a new state, never scored
    score_dir(run, lock=False)  # what every run does at its end
    whole_reads.clear()
    ended = report([run], tmp_path / "a")
    assert whole_reads == []
    assert ended == read_whole([run], tmp_path / "fresh", monkeypatch)


def test_what_is_left_on_a_server_is_read_fresh(run, tmp_path, whole_reads, monkeypatch):
    now = time.time()
    store = RunStore(run)
    try:
        store.record_resource(ProviderResource(token="t1", kind="context cache", backend="gemini",
                                               url="https://example.invalid", name="cachedContents/abc",
                                               created=now, expires=now + 100))
    finally:
        store.close()
    first = build_report([run], tmp_path / "a", bootstrap=DRAWS, thumbs=0)
    assert [r.name for r in first.rows[0][1].left_on_server] == ["cachedContents/abc"]
    monkeypatch.setattr(time, "time", lambda: now + 200)  # it expired meanwhile
    second = build_report([run], tmp_path / "b", bootstrap=DRAWS, thumbs=0)
    assert len(whole_reads) == 1  # the first report read the new state whole, the second its entry
    assert second.rows[0][1].left_on_server == []


def test_cache_info_and_clear_know_the_report_cache(run, tmp_path, whole_reads, monkeypatch):
    from typer.testing import CliRunner

    from mtvbench.cli import app

    monkeypatch.setenv("MTVBENCH_CACHE", str(tmp_path / "cache"))
    report([run], tmp_path / "first")
    root = ReportCache().root
    (root / "notes.txt").write_text("not ours")
    listed = CliRunner().invoke(app, ["cache", "info", "--format", "plain"])
    assert listed.exit_code == 0, listed.output
    line = next(ln for ln in listed.output.splitlines() if ln.startswith("reports")).split("\t")
    assert line[1:3] == [str(root), "1"]
    assert "unrecognised name(s) left alone, e.g. notes.txt" in listed.output
    cleared = CliRunner().invoke(app, ["cache", "clear", "--keep-frames", "--keep-scenes"])
    assert cleared.exit_code == 0, cleared.output
    assert "reports: removed 1 entries" in cleared.output
    assert (root / "notes.txt").exists() and not list(root.glob("*/*.json"))
    report([run], tmp_path / "after")
    assert whole_reads == [run, run]  # read whole again, and kept
    kept = CliRunner().invoke(app, ["cache", "clear", "--keep-frames", "--keep-scenes", "--keep-reports"])
    assert "reports" not in kept.output and len(list(root.glob("*/*.json"))) == 1


@pytest.mark.parametrize("where", ["store.sqlite-wal", "config.yaml"])
def test_a_file_that_is_not_one_gives_no_key(where, run, tmp_path, whole_reads, monkeypatch):
    """Something that is not a regular file where a run directory's file would be is never read as one for the
    key (a FIFO would block the read): no entry is read or kept, and the run is read as always."""
    path = run / where
    keep = path.read_bytes() if path.exists() else None
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    try:
        assert reportcache.run_key(run.resolve(), DRAWS) is None
        assert ReportCache().get(run.resolve(), DRAWS, None) is None
    finally:
        path.unlink()
        if keep is not None:
            path.write_bytes(keep)
