from __future__ import annotations

import pytest

from mtvbench.analysis.breakdowns import (
    LENGTH_BINS,
    SCENE_BINS,
    all_breakdowns,
    breakdown,
    breakdown_markdown,
    length_bin,
    scene_bin,
    turn_bin,
)
from mtvbench.analysis.metadata import DialogueMeta
from mtvbench.data.schema import Dialogue, Round, Task
from mtvbench.scoring.aggregate import DialogueScore


@pytest.mark.parametrize("n,label", [(None, None), (0, None), (1, "1-5"), (5, "1-5"), (6, "6-10"), (10, "6-10"),
                                     (11, "11-15"), (15, "11-15"), (16, "16-20"), (20, "16-20"), (21, ">20"),
                                     (400, ">20")])
def test_scene_bin_edges(n, label):
    assert scene_bin(n) == label


@pytest.mark.parametrize("secs,label", [(None, None), (0.0, None), (-3.0, None), (float("nan"), None),
                                        (1.0, "(0,5]"), (300.0, "(0,5]"), (300.01, "(5,10]"), (600.0, "(5,10]"),
                                        (600.5, "(10,15]"), (900.0, "(10,15]"), (1200.0, "(15,20]"),
                                        (1200.001, ">20"), (7200.0, ">20")])
def test_length_bin_edges(secs, label):
    assert length_bin(secs) == label


def test_turn_bin():
    assert [turn_bin(n) for n in (3, 5, 6, 7, 8, 9)] == ["<5", "5", "6", "7", "8", ">8"]


def _ds(did, task, score):
    return DialogueScore(dialogue_id=did, task=task, score=score, turns=[])


def test_breakdown_means_counts_and_unknown():
    ds = [_ds("a", Task.MEMORY_RECALL, 0.5), _ds("b", Task.MEMORY_RECALL, 1.0), _ds("c", Task.OBJECT_REFERENCE, 0.0),
          _ds("d", Task.OBJECT_REFERENCE, 0.9), _ds("e", Task.OBJECT_REFERENCE, None)]
    key = {"a": "1-5", "b": "1-5", "c": ">20", "d": None, "e": "1-5"}
    b = breakdown(ds, key, SCENE_BINS, name="scenes", title="t", run="r", extra_labels=False)
    rows = {r.label: r for r in b.rows}
    assert [r.label for r in b.rows] == list(SCENE_BINS)  # empty bins kept, in order
    assert rows["1-5"].n == 2 and rows["1-5"].score == pytest.approx(75.0)  # e is unscored: not counted
    assert rows["1-5"].tasks["memory_recall"] == pytest.approx(75.0) and rows["1-5"].task_n["object_reference"] == 0
    assert rows[">20"].score == pytest.approx(0.0) and rows[">20"].n == 1
    assert rows["6-10"].n == 0 and rows["6-10"].score is None
    assert b.unknown == 1  # d


def test_all_breakdowns_from_metadata():
    def dlg(task, video, event, n_rounds):
        return Dialogue(task=task, video=video, event=event,
                        rounds=[Round(index=k, user="q", assistant="a") for k in range(1, n_rounds + 1)])

    d1, d2, d3 = dlg(Task.TOPIC_SHIFTING, "v", "0", 5), dlg(Task.TOPIC_SHIFTING, "v", "1", 8), \
        dlg(Task.ANSWER_REFUSAL, "w", "0", 6)
    meta = {d1.id: DialogueMeta(dialogue_id=d1.id, video="v", event="0", scenes=3, duration_s=100, category="Sports"),
            d2.id: DialogueMeta(dialogue_id=d2.id, video="v", event="1", scenes=25, duration_s=100, category="Sports"),
            d3.id: DialogueMeta(dialogue_id=d3.id, video="w", event="0", duration_s=1500)}
    ds = [_ds(d1.id, d1.task, 0.8), _ds(d2.id, d2.task, 0.4), _ds(d3.id, d3.task, 0.6)]
    out = {b.name: b for b in all_breakdowns([d1, d2, d3], ds, meta, run="m")}
    sc = {r.label: r for r in out["scenes"].rows}
    assert sc["1-5"].score == pytest.approx(80.0) and sc[">20"].score == pytest.approx(40.0)
    assert out["scenes"].unknown == 1
    tu = {r.label: r for r in out["turns"].rows}
    assert (tu["5"].n, tu["6"].n, tu["7"].n, tu["8"].n) == (1, 1, 0, 1)
    ln = {r.label: r for r in out["length"].rows}
    assert [r.label for r in out["length"].rows] == list(LENGTH_BINS)
    assert ln["(0,5]"].n == 2 and ln[">20"].n == 1
    cat = {r.label: r for r in out["category"].rows}
    assert cat["Sports"].score == pytest.approx(60.0) and out["category"].unknown == 1
    md = breakdown_markdown([out["scenes"]])
    assert "| m | 80.00 (1) |" in md and "TS" in md
