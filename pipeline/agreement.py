"""Inter-rater agreement for graded ratings: Krippendorff's alpha (interval metric) and the
mean pairwise Spearman correlation between raters over the items both rated."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np


def krippendorff_alpha_interval(units: Sequence[Sequence[float]]) -> float | None:
    """Alpha with the interval (squared difference) metric. `units` holds each rated item's
    values (any number of raters, missing ones simply absent); items with fewer than two
    values are not pairable and are left out. None when nothing is pairable or every value is
    the same (no expected disagreement)."""
    pairable = [np.asarray(u, dtype=np.float64) for u in units if len(u) >= 2]
    if not pairable:
        return None
    n = sum(len(u) for u in pairable)
    observed = sum(_squared_pairs(u) / (len(u) - 1) for u in pairable) / n
    every = np.concatenate(pairable)
    expected = _squared_pairs(every) / (n * (n - 1))
    if expected == 0:
        return None
    return float(1.0 - observed / expected)


def _squared_pairs(values: np.ndarray) -> float:
    """Sum over ordered pairs i != j of (v_i - v_j)^2 = 2 (m sum v^2 - (sum v)^2)."""
    m = len(values)
    return float(2.0 * (m * np.sum(values**2) - np.sum(values) ** 2))


def mean_pairwise_spearman(
    ratings: Mapping[object, Mapping[object, float]], *, min_common: int = 3
) -> tuple[float | None, int]:
    """The mean Spearman rho over rater pairs, each over the items both rated (at least
    `min_common`, with variation on both sides); `ratings` is item -> rater -> value.
    Returns (mean, number of rater pairs used)."""
    from scipy.stats import spearmanr  # loaded when used: it is slow to import

    by_rater: dict[object, dict[object, float]] = {}
    for item, row in ratings.items():
        for rater, value in row.items():
            by_rater.setdefault(rater, {})[item] = float(value)
    rhos: list[float] = []
    for a, b in itertools.combinations(sorted(by_rater, key=str), 2):
        common = sorted(set(by_rater[a]) & set(by_rater[b]), key=str)
        if len(common) < min_common:
            continue
        x = [by_rater[a][i] for i in common]
        y = [by_rater[b][i] for i in common]
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue
        rho = float(spearmanr(x, y).statistic)
        if math.isfinite(rho):
            rhos.append(rho)
    return (float(np.mean(rhos)) if rhos else None), len(rhos)


def krippendorff_alpha_interval_arrays(units: np.ndarray, values: np.ndarray) -> float | None:
    """`krippendorff_alpha_interval` on flat arrays (one entry per rating: its unit id and
    value), for millions of ratings: sums per unit instead of lists."""
    u = np.asarray(units)
    v = np.asarray(values, dtype=np.float64)
    if u.size == 0:
        return None
    _, inverse, counts = np.unique(u, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=v)
    squares = np.bincount(inverse, weights=v * v)
    pairable = counts >= 2
    if not pairable.any():
        return None
    m = counts[pairable].astype(np.float64)
    n = float(m.sum())
    observed = float(np.sum(2.0 * (m * squares[pairable] - sums[pairable] ** 2) / (m - 1))) / n
    kept = v[pairable[inverse]]
    expected = 2.0 * (n * float(np.sum(kept * kept)) - float(np.sum(kept)) ** 2) / (n * (n - 1))
    if expected == 0:
        return None
    return 1.0 - observed / expected


def mean_pairwise_spearman_arrays(
    units: np.ndarray, raters: np.ndarray, values: np.ndarray, *, min_common: int = 3
) -> tuple[float | None, int]:
    """`mean_pairwise_spearman` on flat arrays: every pair of raters of each unit, grouped by
    rater pair without Python dictionaries per rating."""
    from scipy.stats import spearmanr

    u = np.asarray(units, dtype=np.int64)
    r = np.asarray(raters, dtype=np.int64)
    v = np.asarray(values, dtype=np.float64)
    order = np.lexsort((r, u))
    u, r, v = u[order], r[order], v[order]
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    sizes = np.diff(np.r_[starts, u.size])
    left, right = [], []
    for size in np.unique(sizes):
        if size < 2:
            continue
        first = starts[sizes == size]
        i, j = np.triu_indices(int(size), k=1)
        left.append((first[:, None] + i[None, :]).ravel())
        right.append((first[:, None] + j[None, :]).ravel())
    if not left:
        return None, 0
    a, b = np.concatenate(left), np.concatenate(right)
    key = r[a] * (int(r.max()) + 1) + r[b]
    by = np.argsort(key, kind="stable")
    key, xa, xb = key[by], v[a][by], v[b][by]
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    rhos: list[float] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi - lo < min_common:
            continue
        x, y = xa[lo:hi], xb[lo:hi]
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        rho = float(spearmanr(x, y).statistic)
        if math.isfinite(rho):
            rhos.append(rho)
    return (float(np.mean(rhos)) if rhos else None), len(rhos)
