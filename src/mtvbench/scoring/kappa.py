"""Chance-corrected agreement between raters: Cohen's kappa (two raters) and Fleiss' kappa (several).

Used by the judge-human agreement analysis (:mod:`mtvbench.analysis.agreement`) and by the review's
annotator agreement (:mod:`mtvbench.review.progress`); both import it from here, below them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items; ``None`` when undefined (chance
    agreement is 1, i.e. both raters used one and the same label throughout)."""
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
    number of raters per item, at least two). ``None`` when undefined."""
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


__all__ = ["cohen_kappa", "fleiss_kappa"]
