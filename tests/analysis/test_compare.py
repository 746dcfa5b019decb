from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mtvbench.analysis.compare import DEFAULT_MIN_N, comparison_markdown, paired_bootstrap
from mtvbench.cli import app
from mtvbench.data.schema import TASKS
from mtvbench.scoring.aggregate import DialogueScore
from tests.support.datasets import make_dataset
from tests.support.runs import make_store_run


def _run(scores):
    return [DialogueScore(dialogue_id=f"{t.value}/v/{i}", task=t, score=s, turns=[])
            for t in TASKS for i, s in enumerate(scores)]


def test_identical_runs_have_zero_difference_and_p_one():
    a = _run([0.2, 0.5, 0.9, 0.4])
    c = paired_bootstrap(a, a, n_boot=500, seed=1, min_n=1)
    ov = c.rows[0]
    assert ov.name == "overall" and ov.diff == pytest.approx(0.0)
    assert ov.ci95 == pytest.approx((0.0, 0.0)) and ov.p_value == 1.0
    assert ov.n == 4 * len(TASKS)


def test_constant_shift_is_exact_and_significant():
    a = _run([0.2, 0.5, 0.6, 0.4])
    b = _run([0.3, 0.6, 0.7, 0.5])
    n = 999
    c = paired_bootstrap(a, b, n_boot=n, seed=0, min_n=1)
    for r in c.rows:
        assert r.diff == pytest.approx(10.0)
        assert r.ci95 == pytest.approx((10.0, 10.0))
        assert r.p_value == pytest.approx(2 / (n + 1))  # no draw <= 0: (0 + 1) / (n + 1), two-sided


def test_fixed_seed_is_reproducible_and_matches_hand_computation():
    rng = np.random.default_rng(7)
    base = rng.uniform(0, 1, 10).round(2).tolist()
    noise = rng.normal(0.05, 0.2, 10).round(2).tolist()
    a = _run(base)
    b = _run([min(1.0, max(0.0, x + e)) for x, e in zip(base, noise)])
    c1 = paired_bootstrap(a, b, n_boot=2000, seed=42)
    c2 = paired_bootstrap(a, b, n_boot=2000, seed=42)
    c3 = paired_bootstrap(a, b, n_boot=2000, seed=43)
    assert c1 == c2
    assert c1.rows[0].ci95 != c3.rows[0].ci95
    # hand computation of one task's bootstrap with the documented protocol
    va = np.array([d.score for d in a if d.task == TASKS[0]])
    vb = np.array([d.score for d in b if d.task == TASKS[0]])
    g = np.random.default_rng(42)
    idx = g.integers(0, 10, size=(2000, 10))
    d = (vb[idx] - va[idx]).mean(axis=1) * 100
    row = next(r for r in c1.rows if r.name == TASKS[0].value)
    assert row.diff == pytest.approx((vb.mean() - va.mean()) * 100)
    assert row.ci95 == pytest.approx((np.percentile(d, 2.5), np.percentile(d, 97.5)))
    p = min(1.0, 2 * min(np.sum(d <= 0) + 1, np.sum(d >= 0) + 1) / 2001)
    assert row.p_value == pytest.approx(p)
    assert row.ci95[0] <= row.diff <= row.ci95[1]


def test_unpaired_dialogues_are_left_out_and_counted():
    a = _run([0.5, 0.5])
    b = _run([0.5, 0.7])[:-1] + [DialogueScore(dialogue_id="x/y/z", task=TASKS[0], score=1.0, turns=[])]
    b[0] = DialogueScore(dialogue_id=b[0].dialogue_id, task=b[0].task, score=None, turns=[])
    c = paired_bootstrap(a, b, n_boot=100, seed=0, min_n=1)
    assert c.unpaired_a == 2 and c.unpaired_b == 1
    assert not c.complete
    md = comparison_markdown(c)
    assert "Left out" in md and "percentage points. INCOMPLETE" in md
    assert "INCOMPLETE: dialogues scored in one run only" in md


def test_two_dialogues_per_task_get_no_p_value_but_their_n():
    """The issue's case: 2 dialogues per task gave p = 0.0002. Now n is shown and p withheld."""
    a = _run([0.2, 0.3])
    b = _run([0.9, 1.0])
    c = paired_bootstrap(a, b, n_boot=9999, seed=0)
    assert c.min_n == DEFAULT_MIN_N == 10
    for r in c.rows:
        assert r.diff == pytest.approx(70.0)
        assert r.p_value is None and r.ci95 is None and r.n_min == 2
        assert r.withheld is not None and "too few dialogues" in r.withheld
    assert c.rows[0].n == 12
    md = comparison_markdown(c)
    assert "| Overall | 25.00 | 95.00 | 70.00 | – | – | 12 |" in md and "0.0002" not in md
    # why the cells are "–" is said once, under the table, not in every cell
    assert md.count("too few") == 1
    assert ("–: no CI or p-value for Overall, OR, MR, CS, AR, TS, PI, Perceptivity, Interactivity: too few paired "
            "dialogues (OR 2, MR 2, CS 2, AR 2, TS 2, PI 2; a CI needs 10 per task, --min-n).") in md
    shown = paired_bootstrap(a, b, n_boot=9999, seed=0, min_n=2)
    assert shown.rows[0].p_value == pytest.approx(2 / 10000) and shown.rows[0].withheld is None


def test_overall_over_fewer_than_six_tasks_is_labelled_partial():
    a = [d for d in _run([0.2] * 12) if d.task != TASKS[-1]]
    c = paired_bootstrap(a, a, n_boot=100, seed=0)
    assert c.rows[0].label == "Overall (partial, 5/6 tasks)"
    assert next(r for r in c.rows if r.name == "interactivity").label == "Interactivity (partial, 2/3 tasks)"


def test_markdown_escapes_run_names():
    a = _run([0.5] * 10)
    c = paired_bootstrap(a, a, n_boot=10, seed=0, name_a="evil|model\n[x](y)", name_b="**b**")
    md = comparison_markdown(c)
    assert "A = evil\\|model<br>\\[x\\](y); B = \\*\\*b\\*\\*." in md  # one line, nothing parsed


# ------------------------------------------------------------------------------ two run directories

def _answer_wrong_on_round_5(did: str, k: int, golden: str) -> str:
    return "I cannot tell." if k == 5 else golden


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("cmp")
    data = make_dataset(tmp / "data")
    out = {"a": make_store_run(data, tmp / "a", model="model-a"),
           "b": make_store_run(data, tmp / "b", model="model-b", answer=_answer_wrong_on_round_5),
           "b2": make_store_run(data, tmp / "b2", model="model-b", judge_runs=2, context="self")}
    other = make_dataset(tmp / "data-v2")
    f = other / "mtqa" / "summary.json"
    f.write_text(f.read_text().replace("Question 3 about", "A reworded question 3 about"))
    out["v2"] = make_store_run(other, tmp / "v2", model="model-c")
    fewer = make_dataset(tmp / "data-5")
    (fewer / "mtqa" / "topic_shifting.json").unlink()
    (fewer / "checklist" / "topic_shifting_CheckList.json").unlink()
    out["fewer"] = make_store_run(fewer, tmp / "fewer", model="model-d")
    return out


def test_compare_cli_states_n_and_withholds_p_for_tiny_runs(runs: dict[str, Path], tmp_path: Path):
    r = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["b"]), "--bootstrap", "500",
                                 "--json", str(tmp_path / "c.json")])
    assert r.exit_code == 0, r.output
    assert "n (paired dialogues)" in r.output and "too few paired dialogues (OR 1" in r.output
    assert r.output.count("too few") == 1 and "– (" not in r.output  # the reason once, not in each cell
    saved = json.loads((tmp_path / "c.json").read_text())
    assert saved["rows"][0]["n"] == 6 and saved["rows"][0]["p_value"] is None and saved["caveats"] == []
    shown = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["b"]), "--bootstrap", "500",
                                     "--min-n", "1"])
    assert shown.exit_code == 0 and "too few" not in shown.output


def test_compare_refuses_runs_over_different_questions(runs: dict[str, Path]):
    r = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["v2"])])
    assert r.exit_code == 2, r.output
    assert "evaluated on different dialogues" in r.output
    assert "content_summary/vid0/2: round 3: question" in r.output and "Traceback" not in r.output


def test_compare_refuses_different_dialogue_sets_unless_common_only(runs: dict[str, Path]):
    r = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["fewer"])])
    assert r.exit_code == 2
    assert "1 dialogue(s) only in A (e.g. topic_shifting/vid0/4)" in r.output and "--common-only" in r.output
    ok = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["fewer"]), "--common-only",
                                  "--bootstrap", "100"])
    assert ok.exit_code == 3, ok.output  # run B lacks a task: the comparison is marked incomplete
    assert "compared on the 5 dialogues both runs share" in ok.output
    assert "INCOMPLETE: run B is incomplete: 1 of 6 tasks without a score (TS)" in ok.output
    assert "Overall (partial, 5/6 tasks)" in ok.output


def test_compare_flags_different_judge_runs_and_context(runs: dict[str, Path]):
    r = CliRunner().invoke(app, ["compare", str(runs["a"]), str(runs["b2"]), "--bootstrap", "100"])
    assert r.exit_code == 0, r.output
    assert "Caveat: the runs differ in judge runs per turn (A: 1, B: 2)" in r.output
    assert "Caveat: the runs differ in context (A: golden, B: self)" in r.output
