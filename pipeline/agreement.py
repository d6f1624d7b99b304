"""Inter-rater agreement for graded ratings: Krippendorff's alpha (interval metric) and the
mean pairwise Spearman correlation between raters over the items both rated."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import spearmanr


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
