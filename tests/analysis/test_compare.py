from __future__ import annotations

import numpy as np
import pytest

from mtvbench.analysis.compare import comparison_markdown, paired_bootstrap
from mtvbench.data.schema import TASKS
from mtvbench.scoring.aggregate import DialogueScore


def _run(scores):
    return [DialogueScore(dialogue_id=f"{t.value}/v/{i}", task=t, score=s, turns=[])
            for t in TASKS for i, s in enumerate(scores)]


def test_identical_runs_have_zero_difference_and_p_one():
    a = _run([0.2, 0.5, 0.9, 0.4])
    c = paired_bootstrap(a, a, n_boot=500, seed=1)
    ov = c.rows[0]
    assert ov.name == "overall" and ov.diff == pytest.approx(0.0)
    assert ov.ci95 == pytest.approx((0.0, 0.0)) and ov.p_value == 1.0
    assert ov.n == 4 * len(TASKS)


def test_constant_shift_is_exact_and_significant():
    a = _run([0.2, 0.5, 0.6, 0.4])
    b = _run([0.3, 0.6, 0.7, 0.5])
    n = 999
    c = paired_bootstrap(a, b, n_boot=n, seed=0)
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
    c = paired_bootstrap(a, b, n_boot=100, seed=0)
    assert c.unpaired_a == 2 and c.unpaired_b == 1
    assert "Left out" in comparison_markdown(c)
