"""The run store: one SQLite file per run, written as results arrive.

Every model response and every judge verdict is committed the moment it exists (WAL
mode), so a killed run loses at most the calls in flight, and the next run of the same
command asks only for what is missing.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from mtvbench.errors import RunDirError
from mtvbench.judge.checklist import JudgeVerdict
from mtvbench.models.base import GenerationResult, redact_secrets

#: response outcomes that are final (a resumed run does not ask again)
FINAL_OUTCOMES = ("ok", "blocked", "empty")
#: judge statuses that are final
FINAL_JUDGE = ("ok", "unparsed")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    turn_id TEXT PRIMARY KEY, prompt TEXT NOT NULL, text TEXT NOT NULL, raw_text TEXT NOT NULL,
    reasoning TEXT, outcome TEXT NOT NULL, error TEXT, usage TEXT NOT NULL, latency_s REAL,
    attempts INTEGER, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
    turn_id TEXT NOT NULL, run INTEGER NOT NULL, status TEXT NOT NULL, verdicts TEXT,
    raw TEXT NOT NULL, attempts INTEGER, error TEXT, created REAL NOT NULL,
    PRIMARY KEY (turn_id, run));
"""


class StoreMismatchError(RunDirError):
    pass


class RunStore:
    FILENAME = "store.sqlite"

    def __init__(self, run_dir: Path, create: bool = True):
        self.path = Path(run_dir) / self.FILENAME
        if not create and not self.path.exists():
            raise RunDirError(f"{self.path}: no run store here (is this a run directory?)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    # meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))
        self.db.commit()

    def check_identity(self, identity: dict[str, Any]) -> None:
        """A run directory belongs to one model/judge/context/frames setting."""
        stored = self.get_meta("identity")
        if stored is None:
            self.set_meta("identity", identity)
            return
        if stored != json.loads(json.dumps(identity, sort_keys=True)):
            diff = [k for k in sorted(set(stored) | set(identity)) if stored.get(k) != identity.get(k)]
            raise StoreMismatchError(
                f"{self.path.parent}: this run directory holds results for other settings "
                f"({', '.join(diff)} differ); use another --out or the original settings")

    # responses --------------------------------------------------------------------------
    def put_response(self, turn_id: str, prompt: str, res: GenerationResult) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (turn_id, prompt, res.text, res.raw_text, res.reasoning, res.outcome, redact_secrets(res.error),
             res.usage.model_dump_json(), res.latency_s, res.attempts, time.time()),
        )
        self.db.commit()

    def responses(self) -> dict[str, dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM responses")
        cols = [c[0] for c in cur.description]
        out = {}
        for row in cur.fetchall():
            rec = dict(zip(cols, row))
            rec["usage"] = json.loads(rec["usage"])
            out[rec["turn_id"]] = rec
        return out

    def final_responses(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.responses().items() if v["outcome"] in FINAL_OUTCOMES}

    # verdicts ---------------------------------------------------------------------------
    def put_verdict(self, turn_id: str, v: JudgeVerdict) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?)",
            (turn_id, v.run, v.status, json.dumps(v.verdicts) if v.verdicts is not None else None,
             json.dumps(v.raw), v.attempts, redact_secrets(v.error), time.time()),
        )
        self.db.commit()

    def delete_verdicts(self, turn_id: str) -> None:
        self.db.execute("DELETE FROM verdicts WHERE turn_id=?", (turn_id,))
        self.db.commit()

    def verdicts(self) -> dict[str, dict[int, JudgeVerdict]]:
        out: dict[str, dict[int, JudgeVerdict]] = {}
        for turn_id, run, status, verdicts, raw, attempts, error, _ in self.db.execute("SELECT * FROM verdicts"):
            out.setdefault(turn_id, {})[run] = JudgeVerdict(
                run=run, status=status, verdicts=json.loads(verdicts) if verdicts else None,
                raw=json.loads(raw), attempts=attempts or 0, error=error)
        return out

    def final_verdicts(self) -> dict[str, dict[int, JudgeVerdict]]:
        out: dict[str, dict[int, JudgeVerdict]] = {}
        for tid, runs in self.verdicts().items():
            kept = {r: v for r, v in runs.items() if v.status in FINAL_JUDGE}
            if kept:
                out[tid] = kept
        return out
