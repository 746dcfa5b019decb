"""Chance-corrected agreement between raters: Cohen's kappa (two raters), Fleiss' kappa (the same
number of raters per item) and Krippendorff's alpha for nominal labels (any number of raters, missing
ratings allowed).

Used by the judge-human agreement analysis (:mod:`mtvbench.analysis.agreement`) and by the review's
annotator agreement (:mod:`mtvbench.review.progress`); both import it from here, below them. Every
function returns ``None`` when the statistic is undefined (no pairable rating, or a single label used
throughout, so that chance agreement is 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import permutations


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items (``a[i]`` and ``b[i]`` rate item ``i``)."""
    if len(a) != len(b):
        raise ValueError("raters must rate the same items")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa; ``ratings[i]`` holds the labels the raters gave item ``i`` (the same
    number of raters per item, at least two)."""
    items = [list(r) for r in ratings]
    if not items:
        return None
    m = len(items[0])
    if m < 2 or any(len(r) != m for r in items):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings per item")
    cats = sorted({x for r in items for x in r}, key=str)
    n = len(items)
    counts = [Counter(r) for r in items]
    p_i = [(sum(c[k] ** 2 for k in cats) - m) / (m * (m - 1)) for c in counts]
    p_bar = sum(p_i) / n
    p_j = [sum(c[k] for c in counts) / (n * m) for k in cats]
    pe = sum(p * p for p in p_j)
    if pe >= 1.0:
        return None
    return (p_bar - pe) / (1.0 - pe)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha for nominal labels; ``units[i]`` holds the labels the raters who rated
    unit ``i`` gave it (any number; a unit with fewer than two labels is not pairable and left out).

    ``alpha = 1 - (n - 1) * sum(o[c][k], c != k) / sum(n[c] * n[k], c != k)`` with the coincidence
    matrix ``o`` (every ordered pair of labels within a unit, weighted ``1 / (m_u - 1)``) and its
    marginals ``n[c]`` (Krippendorff 2011, "Computing Krippendorff's alpha-reliability")."""
    coincide: Counter[tuple[Hashable, Hashable]] = Counter()
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        for x, y in permutations(unit, 2):
            coincide[(x, y)] += 1.0 / (m - 1)
    marginal: Counter[Hashable] = Counter()
    for (x, _), w in coincide.items():
        marginal[x] += w
    n = sum(marginal.values())
    disagree = sum(w for (x, y), w in coincide.items() if x != y)
    expected = sum(marginal[x] * marginal[y] for x in marginal for y in marginal if x != y)
    if n < 2 or expected <= 0:
        return None
    return 1.0 - (n - 1) * disagree / expected


__all__ = ["cohen_kappa", "fleiss_kappa", "krippendorff_alpha_nominal"]
