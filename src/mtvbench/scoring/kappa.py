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

import numpy as np


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


def label_counts(units: Sequence[Sequence[Hashable]]) -> np.ndarray:
    """The count matrix of ``units``: row ``i``, column ``k`` holds how often unit ``i`` got the ``k``-th
    label (labels in order of first appearance; equal labels are one column, as a ``Counter`` counts them).
    One pass over the labels: the statistics below are linear in raters x items."""
    codes: dict[Hashable, int] = {}
    flat: list[int] = []
    lengths: list[int] = []
    for unit in units:
        before = len(flat)
        flat.extend(codes.setdefault(x, len(codes)) for x in unit)
        lengths.append(len(flat) - before)
    n, k = len(lengths), max(len(codes), 1)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    cells = np.bincount(rows * k + np.asarray(flat, dtype=np.int64), minlength=n * k)
    return cells.reshape(n, k).astype(np.float64)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa; ``ratings[i]`` holds the labels the raters gave item ``i`` (the same
    number of raters per item, at least two).

    ``P_i = (sum_k n_ik^2 - m) / (m (m - 1))``, ``p_k = sum_i n_ik / (N m)``,
    ``kappa = (mean P_i - sum_k p_k^2) / (1 - sum_k p_k^2)`` over the count matrix ``n_ik``
    (:func:`label_counts`; Fleiss 1971)."""
    if not ratings:
        return None
    m = len(ratings[0])
    if m < 2 or any(len(r) != m for r in ratings):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings per item")
    counts = label_counts(ratings)
    n = counts.shape[0]
    p_bar = float(((counts**2).sum(axis=1) - m).sum()) / (m * (m - 1)) / n
    p_k = counts.sum(axis=0) / (n * m)
    pe = float((p_k * p_k).sum())
    if pe >= 1.0:
        return None
    return (p_bar - pe) / (1.0 - pe)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha for nominal labels; ``units[i]`` holds the labels the raters who rated
    unit ``i`` gave it (any number; a unit with fewer than two labels is not pairable and left out).

    ``alpha = 1 - (n - 1) * sum(o[c][k], c != k) / sum(n[c] * n[k], c != k)`` with the coincidence
    matrix ``o`` (every ordered pair of labels within a unit, weighted ``1 / (m_u - 1)``) and its
    marginals ``n[c]`` (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"). Computed
    from the count matrix ``n_uc`` (:func:`label_counts`) without listing the pairs: a unit's
    off-diagonal coincidences sum to ``(m_u^2 - sum_c n_uc^2) / (m_u - 1)``, ``n[c] = sum_u n_uc`` over
    the pairable units, so ``sum(n[c] n[k], c != k) = n^2 - sum_c n[c]^2``."""
    counts = label_counts(units)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    counts, m_u = counts[pairable], m_u[pairable]
    marginal = counts.sum(axis=0)
    n = float(marginal.sum())
    disagree = float(((m_u * m_u - (counts * counts).sum(axis=1)) / (m_u - 1)).sum())
    expected = n * n - float((marginal * marginal).sum())
    if n < 2 or expected <= 0:
        return None
    return 1.0 - (n - 1) * disagree / expected


__all__ = ["cohen_kappa", "fleiss_kappa", "krippendorff_alpha_nominal", "label_counts"]
