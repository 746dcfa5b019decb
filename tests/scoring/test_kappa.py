"""The agreement statistics against hand-computed values and published worked examples."""

from __future__ import annotations

import pytest

from mtvbench.scoring.kappa import cohen_kappa, krippendorff_alpha_nominal


def test_cohen_kappa_published_example() -> None:
    """Wikipedia's "Cohen's kappa" example: 50 proposals, both yes 20, A yes / B no 5, A no / B yes 10,
    both no 15: po = 0.7, pe = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4."""
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)  # symmetric in the two raters


def test_cohen_kappa_by_hand_and_undefined() -> None:
    # po = 3/4; pe = (2*1 + 1*2 + 1*1) / 16 = 5/16; kappa = (12/16 - 5/16) / (11/16) = 7/11
    assert cohen_kappa(["a", "a", "r", "v"], ["a", "r", "r", "v"]) == pytest.approx(7 / 11)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None and cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="raters must rate the same items"):
        cohen_kappa(["a"], [])


def test_krippendorff_alpha_published_example() -> None:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the nominal example with
    four observers, twelve units and missing values: alpha = 0.743."""
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[o[u] for o in observers if o[u] is not None] for u in range(12)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_by_hand() -> None:
    # two coders, units (a,a) (a,b) (b,b): o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (n_a n_b + n_b n_a) = 1 - 5 * 2 / 18 = 4/9
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "b"], ["b", "b"]]) == pytest.approx(4 / 9)
    # a unit rated once is not pairable; one label throughout is undefined
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "b"], ["b", "b"], ["a"]]) == pytest.approx(4 / 9)
    assert krippendorff_alpha_nominal([["a", "a"], ["a"]]) is None
    assert krippendorff_alpha_nominal([]) is None
