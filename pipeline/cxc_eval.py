"""Evaluating a model against CxC ratings: rank correlation of model similarity with the
mean human rating (SIS, STS, SITS), with a bootstrap interval, and retrieval with CxC
positives.

Bootstrap: each draw resamples the examples with replacement and takes one pair per drawn
example, uniformly among the pairs it appears in first (CxC's one pair per example, so no
example weighs more than another), and computes Spearman's rho on that sample; the interval
is the 2.5th-97.5th percentile over the draws. The point estimate is rho over all pairs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError
from pipeline.neighbours import normalize_rows

POSITIVE_THRESHOLD = 3.0  # a CxC pair rated 3 or more is a positive (as ECCV Caption uses it)


@dataclass(frozen=True)
class Correlation:
    pairs: int
    spearman: float
    kendall_tau_b: float
    ci_low: float
    ci_high: float
    draws: int


def correlation(
    model: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    groups: Sequence[int],
    *,
    draws: int = 1000,
    seed: int = 0,
) -> Correlation:
    from scipy.stats import kendalltau, spearmanr  # loaded when used: slow to import

    m = np.asarray(model, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if m.shape != h.shape or m.ndim != 1 or len(groups) != m.size:
        raise InputError("model scores, ratings and groups must be the same length", field="model")
    if m.size < 3:
        raise InputError(f"need at least 3 rated pairs, got {m.size}", field="pairs")
    if not np.isfinite(m).all():
        raise InputError("model similarities hold NaN or infinite values", field="model")
    rho = float(spearmanr(m, h).statistic)
    tau = float(kendalltau(m, h, variant="b").statistic)
    by_group: dict[int, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        by_group[int(group)].append(index)
    members = list(by_group.values())
    rng = np.random.default_rng(seed)
    values: list[float] = []
    if len(members) >= 3:
        for _ in range(draws):
            examples = rng.integers(len(members), size=len(members))
            picked = np.fromiter(
                (members[e][int(rng.integers(len(members[e])))] for e in examples),
                dtype=np.int64,
                count=len(members),
            )
            r = spearmanr(m[picked], h[picked]).statistic
            if np.isfinite(r):
                values.append(float(r))
    low, high = (
        (float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5)))
        if values
        else (float("nan"), float("nan"))
    )
    return Correlation(
        pairs=int(m.size),
        spearman=rho,
        kendall_tau_b=tau,
        ci_low=low,
        ci_high=high,
        draws=len(values),
    )


def cosine_pairs(
    left: np.ndarray, right: np.ndarray, left_rows: Sequence[int], right_rows: Sequence[int]
) -> np.ndarray:
    a = normalize_rows(np.asarray(left, dtype=np.float32))
    b = normalize_rows(np.asarray(right, dtype=np.float32))
    return np.einsum("ij,ij->i", a[list(left_rows)], b[list(right_rows)]).astype(np.float64)


def recall_at_k(
    queries: np.ndarray,
    gallery: np.ndarray,
    positives: Mapping[int, set[int]],
    *,
    ks: Sequence[int] = (1, 5, 10),
    exclude_self: bool = False,
) -> dict[str, float]:
    """Recall@K over the query rows that have a positive: the share whose top K (by cosine)
    holds one. `positives` maps a query row to gallery rows; with `exclude_self` a query never
    retrieves its own row (t2t, i2i)."""
    rows = sorted(q for q, p in positives.items() if p)
    if not rows:
        return {f"R@{k}": float("nan") for k in ks} | {"queries": 0}
    q = normalize_rows(np.asarray(queries, dtype=np.float32))[rows]
    g = normalize_rows(np.asarray(gallery, dtype=np.float32))
    sims = q @ g.T
    if exclude_self:
        sims[np.arange(len(rows)), rows] = -np.inf
    order = np.argsort(-sims, axis=1, kind="stable")
    out: dict[str, float] = {"queries": float(len(rows))}
    for k in ks:
        hits = [bool(set(order[n, :k].tolist()) & positives[r]) for n, r in enumerate(rows)]
        out[f"R@{k}"] = round(100.0 * float(np.mean(hits)), 2)
    return out
