from __future__ import annotations

import pytest

from mtvbench.data.schema import ChecklistItem, Dialogue, Round, Task
from mtvbench.protocol import get_protocol
from mtvbench.records import JudgeVerdict
from mtvbench.scoring.aggregate import bootstrap_ci, compute_scores, overall, task_means, turn_score

ITEMS = [ChecklistItem(key=f"Q{i}", question="q", expected="Yes" if i < 5 else "No") for i in range(1, 6)]


def v(run: int, answers: str, status: str = "ok") -> JudgeVerdict:
    verdicts = {f"A{i + 1}": ("Yes" if c == "Y" else "No") for i, c in enumerate(answers)} if status == "ok" else None
    return JudgeVerdict(run=run, status=status, verdicts=verdicts)


def test_overall_formula_matches_table2_gemini_pro() -> None:
    row = dict(zip(Task, [71.63, 72.45, 93.71, 57.74, 89.67, 76.50]))
    assert round(overall(row), 2) == 76.95
    row = dict(zip(Task, [53.20, 54.48, 90.25, 44.87, 73.45, 61.49]))  # Qwen3-VL-8B-Instruct
    assert round(overall(row), 2) == 62.96


RND = Round(index=1, user="u", assistant="a", model_turn=True, checklist=ITEMS)


def test_turn_score_by_key_and_unscored_runs() -> None:
    paper = get_protocol("paper")
    ts = turn_score(RND, {0: v(0, "YYYYN"), 1: v(1, "YYYNN"), 2: v(2, "", status="unparsed")}, paper)
    assert ts.per_run == {0: 1.0, 1: 0.8}
    assert ts.score == pytest.approx(0.9)
    assert ts.unscored_runs == 1  # left out of the mean, never counted as wrong
    assert turn_score(RND, {0: v(0, "", "error")}, paper).score is None


def _dialogue(task: Task, n: int, scored: list[int]) -> Dialogue:
    rounds = [Round(index=k, user="u", assistant="a", model_turn=True, checklist=ITEMS if k in scored else None)
              for k in range(1, n + 1)]
    return Dialogue(task=task, video="v", event=str(n), rounds=rounds)


def test_aggregation_without_rounding() -> None:
    d1 = _dialogue(Task.OBJECT_REFERENCE, 3, [1, 2, 3])
    d2 = _dialogue(Task.OBJECT_REFERENCE, 2, [1])
    responses = {d1.turn_id(k): {} for k in (1, 2, 3)} | {d2.turn_id(1): {}}
    verdicts = {
        d1.turn_id(1): {0: v(0, "YYYYN")},  # 1.0
        d1.turn_id(2): {0: v(0, "NNNNN")},  # 0.2
        d1.turn_id(3): {0: v(0, "YNNNN")},  # 0.4
        d2.turn_id(1): {0: v(0, "YYNNY")},  # 0.4
    }
    scores, dscores = compute_scores([d1, d2], responses, verdicts, model="m", judge="j", judge_runs=1,
                                     bootstrap=0)
    # d1 = (1 + .2 + .4)/3 = 0.5333..., d2 = 0.4 -> task = 0.46666... (authors' rounding would differ)
    assert dscores[0].score == pytest.approx(1.6 / 3)
    assert scores.tasks["object_reference"] == pytest.approx(100 * (1.6 / 3 + 0.4) / 2)
    # only one task present: no paper Overall, a partial one over 1/6 tasks, and the run is INCOMPLETE
    assert scores.overall is None and scores.tasks_scored == 1
    assert scores.overall_partial == pytest.approx(scores.tasks["object_reference"])
    assert not scores.complete and "5 of 6 tasks without a score" in scores.incomplete_reasons[0]
    assert scores.overall_label().startswith("partial, 1/6 tasks: ")
    assert scores.counts.scored_turns == 4 and scores.counts.unscored_judge_runs == 0


def test_missing_and_unscored_are_counted_not_zero() -> None:
    d = _dialogue(Task.MEMORY_RECALL, 3, [1, 2, 3])
    responses = {d.turn_id(1): {}, d.turn_id(2): {}}
    verdicts = {d.turn_id(1): {0: v(0, "YYYYN"), 1: v(1, "YYYYN")},
                d.turn_id(2): {0: v(0, "", "unparsed"), 1: v(1, "", "error")}}
    scores, _ = compute_scores([d], responses, verdicts, model="m", judge="j", judge_runs=2, bootstrap=0)
    assert scores.tasks["memory_recall"] == pytest.approx(100.0)
    c = scores.counts
    assert (c.missing_responses, c.unscored_turns, c.unscored_judge_runs, c.scored_turns) == (1, 1, 2, 1)
    assert scores.complete is False


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    ds = [_dialogue(t, 1, [1]) for t in Task for _ in range(1)]
    dialogues, responses, verdicts = [], {}, {}
    for i, t in enumerate(Task):
        for j in range(6):
            d = Dialogue(task=t, video="v", event=f"{i}-{j}", rounds=ds[0].rounds)
            dialogues.append(d)
            responses[d.turn_id(1)] = {}
            verdicts[d.turn_id(1)] = {0: v(0, ["YYYYN", "NNNNN", "YYNNN"][j % 3])}
    s1, dsc = compute_scores(dialogues, responses, verdicts, model="m", judge="j", judge_runs=1, seed=7)
    s2, _ = compute_scores(dialogues, responses, verdicts, model="m", judge="j", judge_runs=1, seed=7)
    assert s1.ci95 == s2.ci95
    lo, hi = s1.ci95["overall"]
    assert lo < s1.overall < hi and hi - lo < 60
    assert bootstrap_ci(dsc, n=200, seed=1) != bootstrap_ci(dsc, n=200, seed=2)
    assert set(task_means(dsc)) == set(Task)
