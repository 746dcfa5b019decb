"""Runs of one benchmark read together validate their dialogues once (run.rundir.SnapshotMemo), and a run of
other dialogues never gets another run's (the report reads 24 runs this way)."""

from __future__ import annotations

import json

from mtvbench.analysis.report import build_report
from mtvbench.run.rundir import RunDirectory, SnapshotMemo
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run


def test_equal_dialogues_are_shared_and_other_dialogues_are_not(tmp_path):
    data = make_dataset(tmp_path / "data")
    a = make_store_run(data, tmp_path / "a", model="a")
    b = make_store_run(data, tmp_path / "b", model="b")
    edited = tmp_path / "edited"  # the same files but one question edited
    edited.mkdir()
    for sub in ("mtqa", "checklist", "videos"):
        (edited / sub).mkdir()
        for f in (data / sub).iterdir():
            (edited / sub / f.name).write_bytes(f.read_bytes())
    mtqa = edited / "mtqa" / "summary.json"
    mtqa.write_text(mtqa.read_text().replace("?", "? (edited)", 1))
    c = make_store_run(edited, tmp_path / "c", model="c")

    memo = SnapshotMemo()
    sa, sb, sc = (RunDirectory(d).snapshot(memo) for d in (a, b, c))
    assert sb.dialogues is sa.dialogues  # validated once
    assert sc.dialogues is not sa.dialogues
    assert sc.dialogues == RunDirectory(c).snapshot().dialogues and sb.dialogues == RunDirectory(b).snapshot().dialogues
    assert sb.turn_keys == RunDirectory(b).snapshot().turn_keys != sa.turn_keys  # the rest is each run's own
    assert any("(edited)" in r.user for d in sc.dialogues for r in d.rounds)
    assert not any("(edited)" in r.user for d in sa.dialogues for r in d.rounds)

    # the report over the three: each run's scores and explorer file as when reported alone
    together = build_report([a, b, c], tmp_path / "rep", bootstrap=0, thumbs=0)
    for i, d in enumerate((a, b, c)):
        alone = build_report([d], tmp_path / f"alone-{i}", bootstrap=0, thumbs=0)
        assert together.rows[i][1].model_dump() == alone.rows[0][1].model_dump()
        mine = (together.out / "explorer" / f"run-{i}.js").read_text().split(", ", 2)[2]
        theirs = (alone.out / "explorer" / "run-0.js").read_text().split(", ", 2)[2]
        assert json.loads(mine[:-3]) == json.loads(theirs[:-3])
