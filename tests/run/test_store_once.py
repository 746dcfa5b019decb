"""A judge reply is stored once: the ``authors`` reading of a reply (its keys and values) is not a second copy
of the reply in the run store (a 3 MB reply made a 6 MB row), and the format says so (run store format 3)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mtvbench.config import RUN_SCHEMA_VERSION
from mtvbench.records import JudgeVerdict
from mtvbench.run.identity import ResultKey
from mtvbench.run.store import RunStore
from tests.support.datasets import make_dataset
from tests.support.openai_server import LoopbackServer, ServerState, judge_reply
from tests.support.run_helpers import cli, cli_run, scores_of, settings

BIG = 1 << 20


def _judge_appending(size: int):  # noqa: ANN202
    def reply(prompt: str) -> str:
        obj = json.loads(judge_reply(prompt).split("```json\n")[1].split("\n```")[0])
        first = next(iter(obj))
        obj[first] = obj[first] + " " + "x" * size  # eval.py compares the whole value: a miss, however long
        return "Here:\n```json\n" + json.dumps(obj) + "\n```"

    return reply


def test_a_large_judge_reply_is_stored_once_and_scored_the_same(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "data")
    with LoopbackServer(ServerState(judge_reply=_judge_appending(BIG))) as srv:
        res = cli_run(settings(data, tmp_path / "run", srv.url, tmp_path / "cache", judge_runs=1))
    assert res.exit_code == 0, res.output
    with LoopbackServer(ServerState(judge_reply=_judge_appending(1))) as srv:
        short = cli_run(settings(data, tmp_path / "short", srv.url, tmp_path / "cache", judge_runs=1))
    assert short.exit_code == 0, short.output
    with sqlite3.connect(tmp_path / "run" / "store.sqlite") as db:
        n, raw, reply, once = db.execute("SELECT COUNT(*), SUM(LENGTH(raw)), SUM(LENGTH(reply)), SUM(reply_from_raw) "
                                         "FROM verdicts").fetchone()
        version = json.loads(db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    assert n == 12 and raw > n * BIG and not reply and once == n  # the reply text once per verdict, in raw
    assert version == RUN_SCHEMA_VERSION == 3
    lines = [json.loads(x) for x in (tmp_path / "run" / "responses.jsonl").read_text().splitlines()]
    replies = [r["reply"] for x in lines for r in x["judge_runs"]]
    assert len(replies) == n and all(len(r) == 5 and len(r[0][1]) > BIG for r in replies)  # read back whole
    s = scores_of(tmp_path / "run")
    again = cli("score", tmp_path / "run", "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["overall"] == s["overall"]
    assert s["tasks"] == scores_of(tmp_path / "short")["tasks"]  # scored as the same reply with a short value


def test_a_reply_that_is_not_the_reading_of_the_raw_reply_is_stored_as_it_is(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    key = ResultKey(fingerprint="f", parts={})
    read = JudgeVerdict(run=0, status="ok", verdicts={"A1": "Yes"}, reply=[("A1", "Yes")], raw=['{"A1": "Yes"}'])
    own = JudgeVerdict(run=1, status="ok", verdicts={"A1": "No"}, reply=[("A1", "No")], raw=["A1 is no"])
    for v in (read, own):
        store.put_verdict("t#1", v, key)
    rows = {r["run"]: r["verdict"] for r in store.verdict_rows()}
    assert rows[0].reply == read.reply and rows[1].reply == own.reply
    stored = dict(store.db.execute("SELECT run, reply_from_raw FROM verdicts").fetchall())
    assert stored == {0: 1, 1: 0}
    store.close()
