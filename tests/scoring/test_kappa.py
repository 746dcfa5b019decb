"""The agreement statistics against hand-computed values and published worked examples."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable
from itertools import permutations

import pytest

from mtvbench.scoring.kappa import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, label_counts


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


def test_fleiss_kappa_published_example() -> None:
    """Wikipedia's "Fleiss' kappa" worked example: 10 subjects, 14 raters, 5 categories; kappa = 0.210
    (P-bar = 0.378, P_e = 0.213)."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = [[c for c, k in enumerate(row) for _ in range(k)] for row in table]
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)


# the pairwise definitions, as mtvbench computed them before the statistics were counted with numpy: the
# reference the counted ones must equal on any data ------------------------------------------------------------

def _fleiss_by_pairs(ratings: list[list[Hashable]]) -> float | None:
    m, n = len(ratings[0]), len(ratings)
    cats = {x for r in ratings for x in r}
    counts = [Counter(r) for r in ratings]
    p_bar = sum((sum(c[k] ** 2 for k in cats) - m) / (m * (m - 1)) for c in counts) / n
    pe = sum((sum(c[k] for c in counts) / (n * m)) ** 2 for k in cats)
    return None if pe >= 1.0 else (p_bar - pe) / (1.0 - pe)


def _alpha_by_pairs(units: list[list[Hashable]]) -> float | None:
    coincide: Counter = Counter()
    for unit in units:
        if len(unit) >= 2:
            for x, y in permutations(unit, 2):
                coincide[(x, y)] += 1.0 / (len(unit) - 1)
    marginal: Counter = Counter()
    for (x, _), w in coincide.items():
        marginal[x] += w
    n = sum(marginal.values())
    disagree = sum(w for (x, y), w in coincide.items() if x != y)
    expected = sum(marginal[x] * marginal[y] for x in marginal for y in marginal if x != y)
    return None if n < 2 or expected <= 0 else 1.0 - (n - 1) * disagree / expected


@pytest.mark.parametrize("seed", range(40))
def test_the_counted_statistics_equal_the_pairwise_definitions(seed: int) -> None:
    rng = random.Random(seed)
    labels = rng.choice([["Yes", "No"], ["a", "b", "c"], [1, 2, 3, 4, 5], ["Yes", "No", 0, 1.5]])
    skew = rng.random()  # some data sets almost all one label (kappa near 0, or undefined)
    pick = lambda: labels[0] if rng.random() < skew else rng.choice(labels)  # noqa: E731
    m, items = rng.randint(2, 9), rng.randint(1, 60)
    ratings = [[pick() for _ in range(m)] for _ in range(items)]
    assert _equal(fleiss_kappa(ratings), _fleiss_by_pairs(ratings))
    units = [[pick() for _ in range(rng.randint(0, 9))] for _ in range(items)]  # missing ratings, lone ones
    assert _equal(krippendorff_alpha_nominal(units), _alpha_by_pairs(units))


def test_undefined_cases_match_too() -> None:
    for ratings in ([["Y", "Y"], ["Y", "Y"]], [["Y", "N"]], [[1, 1, 1]]):
        assert _equal(fleiss_kappa(ratings), _fleiss_by_pairs(ratings))
    for units in ([], [["a"]], [["a", "a"], ["a", "a", "a"]], [["a", "b"]], [[], ["x", "y", "x"]]):
        assert _equal(krippendorff_alpha_nominal(units), _alpha_by_pairs(units))
    assert fleiss_kappa([]) is None
    assert label_counts([]).shape == (0, 1) and label_counts([["a", "b", "a"], []]).tolist() == [[2, 1], [0, 0]]


def _equal(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12,
                                                                                       abs_tol=1e-12))
