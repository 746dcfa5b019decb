"""Redaction happens once, where a record is made: every error text a result or a verdict holds has its
API keys removed, so the run store writes what the record holds (and never a key)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mtvbench.records import GenerationResult, JudgeVerdict
from mtvbench.run.identity import ResultKey
from mtvbench.run.store import RunStore
from mtvbench.util.secrets import register_secret

SECRET = "cred-7f3a9b1c2d4e5f60"


@pytest.fixture(autouse=True)
def a_key_was_read() -> None:
    register_secret(SECRET)  # as a backend does when it reads its key


def test_a_verdict_and_a_result_hold_their_error_redacted() -> None:
    v = JudgeVerdict(run=0, status="error", error=f"401: bad key {SECRET}; also sk-live-0123456789abc")
    assert v.error == "401: bad key ***; also ***"
    r = GenerationResult(outcome="error", error=f"bad key {SECRET}")
    assert r.error == "bad key ***" and JudgeVerdict(run=1, status="ok").error is None


def test_the_store_writes_what_the_record_holds(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    key = ResultKey(fingerprint="f" * 32, parts={})
    store.put_verdict("t1", JudgeVerdict(run=0, status="error", error=f"judge said {SECRET}"), key)
    store.put_response("t1", "prompt", GenerationResult(outcome="error", error=f"model said {SECRET}"), key)
    store.close()
    with sqlite3.connect(tmp_path / RunStore.FILENAME) as db:
        errors = sorted(e for (e,) in db.execute("SELECT error FROM verdicts UNION ALL SELECT error FROM responses"))
    assert errors == ["judge said ***", "model said ***"]
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f
