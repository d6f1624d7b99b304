"""Inter-rater agreement for graded ratings: Krippendorff's alpha (interval metric) and the
mean pairwise Spearman correlation between raters over the items both rated."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from pipeline.dense import unique_inverse

# Whatever names items and raters (ids, strings): mappings are invariant in their keys.
ItemKey = TypeVar("ItemKey", bound=Hashable)
RaterKey = TypeVar("RaterKey", bound=Hashable)


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
    ratings: Mapping[ItemKey, Mapping[RaterKey, float]], *, min_common: int = 3
) -> tuple[float | None, int]:
    """The mean Spearman rho over rater pairs, each over the items both rated (at least
    `min_common`, with variation on both sides); `ratings` is item -> rater -> value.
    Returns (mean, number of rater pairs used)."""
    from scipy.stats import spearmanr  # loaded when used: it is slow to import

    by_rater: dict[RaterKey, dict[ItemKey, float]] = {}
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
    if u.size == 0:
        return None
    applies, alpha = _alpha_grouped_whole(u, np.asarray(values))
    if applies:
        return alpha
    v = np.asarray(values, dtype=np.float64)
    _, inverse = unique_inverse(u)
    counts = np.bincount(inverse)
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


def _alpha_grouped_whole(u: np.ndarray, v: np.ndarray) -> tuple[bool, float | None]:
    """`krippendorff_alpha_interval_arrays` where the units ascend (CxC's ratings, ordered
    by pair) and the ratings are whole numbers: runs summed as integers, no index per rating
    and no float copy (CxC's 445,000 ratings a task made 15 MB of temporaries). The same
    floats: every sum of whole numbers here is exact either way. (False, None) where it
    does not apply."""
    if v.dtype.kind not in "iu" or u.dtype.kind not in "iu" or v.dtype.itemsize > 4:
        return False, None
    if not (u[1:] >= u[:-1]).all():  # units ascending: runs in the order bincount sums
        return False, None
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    counts = np.diff(np.r_[starts, u.size])
    square: np.ndarray = v.astype(np.int32 if v.dtype.itemsize <= 2 else np.int64)
    np.multiply(square, square, out=square)  # (in that width: no overflow)
    sums = np.add.reduceat(v, starts, dtype=np.int64).astype(np.float64)
    squares = np.add.reduceat(square, starts, dtype=np.int64).astype(np.float64)
    pairable = counts >= 2
    if not pairable.any():
        return True, None
    m = counts[pairable].astype(np.float64)
    n = float(m.sum())
    observed = float(np.sum(2.0 * (m * squares[pairable] - sums[pairable] ** 2) / (m - 1))) / n
    kept = np.repeat(pairable, counts)
    total = float(v[kept].sum(dtype=np.int64))
    total_squares = float(square[kept].sum(dtype=np.int64))
    expected = 2.0 * (n * total_squares - total**2) / (n * (n - 1))
    return True, (None if expected == 0 else 1.0 - observed / expected)


def mean_pairwise_spearman_arrays(
    units: np.ndarray, raters: np.ndarray, values: np.ndarray, *, min_common: int = 3
) -> tuple[float | None, int]:
    """`mean_pairwise_spearman` on flat arrays: every pair of raters of each unit, grouped by
    rater pair without Python dictionaries per rating."""
    u, r = (np.asarray(x) for x in (units, raters))  # ids stay in their width (CxC's int32)
    u, r = (x if x.dtype.kind in "iu" else x.astype(np.int64) for x in (u, r))
    v = np.asarray(values)
    if v.dtype.kind not in "iu":  # whole-number ratings stay narrow: only their order counts
        v = v.astype(np.float64)
    order = _lexorder(u, r)
    u, r, v = u[order], r[order], v[order]
    del order
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    sizes = np.diff(np.r_[starts, u.size])
    # Positions of each unit's two raters, in 4 bytes each where the ratings allow.
    width = np.int32 if u.size < 2**31 else np.int64
    del u
    pairs_of = sizes * (sizes - 1) // 2  # a unit's rater pairs
    total = int(pairs_of.sum())
    if not total:
        return None, 0
    # Rater pairs numbered in the order of (first rater, second rater): raters as dense
    # codes (same order) keep the pair codes within a range counted without a sort.
    _, dense = unique_inverse(r, narrow=True)
    del r
    distinct = int(dense.max()) + 1
    if distinct * distinct >= 2**31:  # pair codes in 4 bytes where they fit (CxC's do)
        dense = dense.astype(np.int64)
    # Each pair's code and two values filled in place, sizes ascending, a block of units
    # at a time: the two raters' positions are never held for every pair (CxC's 890,000
    # pairs a task: 7 MB).
    codes = np.empty(total, dtype=dense.dtype)
    x, y = np.empty(total, dtype=v.dtype), np.empty(total, dtype=v.dtype)
    at = 0
    for size in np.unique(sizes):
        if size < 2:
            continue
        units = starts[sizes == size].astype(width)
        i, j = (k.astype(width) for k in np.triu_indices(int(size), k=1))
        block = max(1, STEP // i.size)
        for lo in range(0, units.size, block):
            first = units[lo : lo + block, None]
            a, b = (first + i[None, :]).ravel(), (first + j[None, :]).ravel()
            part = slice(at, at + a.size)
            np.multiply(dense[a], distinct, out=codes[part])
            codes[part] += dense[b]
            x[part], y[part] = v[a], v[b]
            at += a.size
    del starts, sizes, dense
    group = unique_inverse(codes, narrow=True)[1]
    del codes
    rho = _spearman_in_steps(group, x, y, min_common=min_common)
    rhos = rho[np.isfinite(rho)]
    return (float(np.mean(rhos)) if rhos.size else None), int(rhos.size)


def _lexorder(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """`np.lexsort((then, first))`: by `first`, then `then`, ties in their order. Where both
    hold whole numbers whose combination fits 62 bits, one stable sort of the combined key
    gives the same order at about half the cost of two sorting passes."""
    if first.size and np.array_equal(then, np.round(then)) and np.isfinite(then).all():
        low, high = float(then.min()), float(then.max())
        f_low, f_high = int(first.min()), int(first.max())
        span = int(high - low) + 1
        if span * (f_high - f_low + 1) < 2**62:
            key = (first.astype(np.int64) - f_low) * span + (then - low).astype(np.int64)
            return np.argsort(key, kind="stable")
    return np.lexsort((then, first))


def _grouped_ranks(group: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based, ties sharing their mean rank) of `x` within each group, and
    whether `x` is constant within each group."""
    counted = _counted_ranks(group, x)
    if counted is not None:
        return counted
    order = _lexorder(group, x)
    g, xs = group[order], x[order]
    new_group = np.r_[True, g[1:] != g[:-1]]
    firsts = np.flatnonzero(new_group)
    lasts = np.r_[firsts[1:], xs.size] - 1
    constant = np.ones(int(group.max()) + 1, dtype=bool)
    constant[g[firsts]] = xs[firsts] == xs[lasts]
    run_starts = np.flatnonzero(new_group | np.r_[True, xs[1:] != xs[:-1]])
    run_ends = np.r_[run_starts[1:], xs.size]  # exclusive
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(xs.size), 0))
    # A tie run at positions [s, e) shares the mean of the ranks s+1 .. e of its group.
    mean_pos = (run_starts + run_ends - 1) / 2.0
    ranks = np.empty(xs.size)
    ranks[order] = np.repeat(mean_pos, run_ends - run_starts) - group_start + 1.0
    return ranks, constant


def _counted_ranks(group: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`_grouped_ranks` without sorting, where `x` holds integers of a narrow range (a
    rating scale): per group, the count of each value; a value's mean rank is the count
    below it plus (its own count + 1) / 2, the same half-integer the sorted runs give.
    None where it does not apply."""
    if x.dtype.kind not in "iu" or not x.size:
        return None
    low = int(x.min())
    span = int(x.max()) - low + 1
    groups = int(group.max()) + 1
    if span > 64 or groups * span > 4 * x.size + 1024:
        return None
    cell = group.astype(np.int64) * span + (x - low)
    counts = np.bincount(cell, minlength=groups * span).reshape(groups, span)
    below = np.cumsum(counts, axis=1) - counts
    ranks = below.ravel()[cell] + (counts.ravel()[cell] + 1) / 2.0
    return ranks, np.count_nonzero(counts, axis=1) <= 1


STEP = 65_536  # entries per step of `_spearman_in_steps`: its temporaries a few MB each


def _spearman_in_steps(
    group: np.ndarray, x: np.ndarray, y: np.ndarray, *, min_common: int
) -> np.ndarray:
    """`_grouped_spearman`, whole groups a step of about `STEP` entries at a time (CxC's
    900,000 rater pairs a task made a dozen arrays of 7 MB at once). A step takes the groups
    of a range of codes, found by a scan (no sort, no index of every entry): each group's
    entries keep their order, so each group's sums, and rho, are the same floats."""
    if group.size <= STEP:
        return _grouped_spearman(group, x, y, min_common=min_common)
    ends = np.bincount(group)  # every code is some entry's: unique_inverse's
    np.cumsum(ends, out=ends)
    rho = np.empty(ends.size)
    first = 0
    while first < ends.size:
        start = int(ends[first - 1]) if first else 0
        last = max(int(np.searchsorted(ends, start + STEP, side="right")), first + 1)
        inside = group >= first
        inside &= group < last
        at = np.flatnonzero(inside)
        del inside
        part = group[at]
        part -= first
        rho[first:last] = _grouped_spearman(part, x[at], y[at], min_common=min_common)
        first = last
    return rho


def _grouped_spearman(
    group: np.ndarray, x: np.ndarray, y: np.ndarray, *, min_common: int
) -> np.ndarray:
    """Spearman's rho of (x, y) within each group (Pearson's r of the average ranks, as
    scipy's `spearmanr` computes it); NaN for groups smaller than `min_common` or where x or y
    is constant. One pass of numpy over all groups, no call per group."""
    if not group.size:
        return np.zeros(0)
    (rx, x_constant), (ry, y_constant) = _grouped_ranks(group, x), _grouped_ranks(group, y)
    n = np.bincount(group).astype(np.float64)
    dx = rx - (np.bincount(group, weights=rx) / n)[group]
    dy = ry - (np.bincount(group, weights=ry) / n)[group]
    sxx = np.bincount(group, weights=dx * dx)
    syy = np.bincount(group, weights=dy * dy)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.bincount(group, weights=dx * dy) / np.sqrt(sxx * syy)
    rho[(n < min_common) | x_constant | y_constant] = np.nan
    return np.clip(rho, -1.0, 1.0)
