"""Aggregating ratings and preferences with per-item 95 % intervals.

Ratings (CxC's 0-5, a Likert scale): a latent-scale model with a per-worker affine use of the
scale, fitted by alternating weighted least squares (the EM of a Gaussian model whose item
values are fixed effects): worker w rates item i as a_w + b_w * mu_i + noise of variance
s_w^2. A lenient worker has a_w > 0, a central one b_w < 1, a careless one a large s_w. Worker
parameters are shrunk towards the plain use of the scale (a = 0, b = 1, s = the pooled noise)
with the weight of `prior` ratings, so a worker with few ratings is read as plain. The item
values are read back on the scale through the crowd's average offset and slope, and each
item's interval comes from the precision of its ratings (sum of b_w^2 / s_w^2), widened by the
item's own spread, its workers' parameter uncertainty and the scale's step (see
`rating_model`); the tests and the sweep measure its coverage. What it cannot cover is a bias
the whole crowd shares (a crowd that compresses the scale, ratings stopped at the scale's
ends): docs/quality.md.
Each worker is fitted against the other workers' values of its items (leave one out), which
keeps one worker from defining the values it is judged by. Written by
hand: Crowd-Kit has no ordinal model with per-worker scale use. The plain mean (CxC's
`agg_score`) stays the default; this estimate sits beside it.

Preferences: Bradley-Terry, P(i beats j) = 1 / (1 + exp(theta_j - theta_i)); the strengths
come from choix (`choix.opt_pairwise`, with a small ridge `alpha` so that an item that never
lost still has a finite strength), the intervals from the inverse Fisher information under
the sum-to-zero constraint (choix gives none).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pipeline.dense import unique_inverse as _unique
from pipeline.errors import InputError
from pipeline.t_quantile import t975

Z95 = 1.959963984540054
# Ratings' worth of prior on an item's spread being what its workers' noise says (set on the
# realistic population: 4 gave the nearest to 95 % coverage of 2, 4, 8 and 16).
ITEM_PRIOR = 4.0


@dataclass(frozen=True)
class RatingEstimate:
    items: np.ndarray  # item ids, ascending
    mean: np.ndarray  # the plain mean per item (CxC's agg_score)
    value: np.ndarray  # the model's estimate, on the scale
    low: np.ndarray  # 95 % interval of `value`
    high: np.ndarray
    workers: np.ndarray  # worker ids, ascending
    offset: np.ndarray  # a_w: > 0 lenient
    slope: np.ndarray  # b_w: < 1 central tendency
    noise: np.ndarray  # s_w
    iterations: int


def _check(items: np.ndarray, workers: np.ndarray, values: np.ndarray) -> None:
    if not (items.shape == workers.shape == values.shape) or items.ndim != 1:
        raise InputError(
            "items, workers and ratings must be 1-D and the same length", field="ratings"
        )
    if items.size == 0:
        raise InputError("no ratings to aggregate", field="ratings")


# Ratings per step of a pass over them: each of a step's temporaries is half a MB, where a
# whole pass's were 10 MB each at CxC's 1.3 million ratings (issue 32's memory limit).
CHUNK = 65_536


def _steps(size: int) -> Iterator[slice]:
    return (slice(lo, lo + CHUNK) for lo in range(0, size, CHUNK))


def _add(into: np.ndarray, at: np.ndarray, weights: np.ndarray | float) -> None:
    """`into[at] += weights`, one rating after another: summed over a pass's steps in order,
    the same floats as one `np.bincount` over all the ratings."""
    np.add.at(into, at, weights)


def _variance(y: np.ndarray, plain: np.ndarray, row: np.ndarray) -> float:
    """`np.var(y - plain[row])`, the same float, with one array as long as the ratings
    instead of three."""
    d = plain[row]
    np.subtract(y, d, out=d)
    d -= np.add.reduce(d) / d.size
    np.multiply(d, d, out=d)
    return float(np.add.reduce(d) / d.size)


def _as_float(ratings: np.ndarray) -> np.ndarray:
    """The ratings as given where float64 holds each exactly (CxC's int8: a byte a rating),
    else as float64."""
    y = np.asarray(ratings)
    exact = y.dtype.kind in "iu" and y.dtype.itemsize <= 4
    return y if exact or y.dtype == np.float64 else y.astype(np.float64)


def rating_model(
    items: np.ndarray,
    workers: np.ndarray,
    ratings: np.ndarray,
    *,
    low: float,
    high: float,
    prior: float = 5.0,
    iterations: int = 50,
    tolerance: float = 1e-6,
    resolution: float = 1.0,
) -> RatingEstimate:
    """Per-item values with 95 % intervals from ratings on the scale `low`..`high` whose
    points are `resolution` apart (0: ratings on a continuous scale).

    Each per-rating quantity is made a step of ratings at a time (`CHUNK`) and summed per
    item or worker in rating order: no array as long as the ratings but the ratings and
    their two indexes, and the same floats as arithmetic on whole arrays."""
    items, workers = np.asarray(items), np.asarray(workers)
    y = _as_float(ratings)
    _check(items, workers, y)
    ids, row = _unique(items, narrow=True)  # int32 indexes, made a step at a time
    wids, col = _unique(workers, narrow=True)
    n_items, n_workers = ids.size, wids.size
    count = np.bincount(row, minlength=n_items).astype(np.float64)
    plain = np.zeros(n_items)
    for at in _steps(y.size):
        _add(plain, row[at], y[at])
    plain /= count
    mu: np.ndarray = plain.copy()
    a = np.zeros(n_workers)
    b = np.ones(n_workers)
    pooled = max(_variance(y, plain, row), 0.05)
    s2 = np.full(n_workers, pooled)
    used = np.bincount(col, minlength=n_workers)
    precision, total = _item_sums(y, row, col, (a, b, s2), n_items)
    spare, gap = np.empty(n_items), np.empty(n_items)
    n = sx = sxx = np.zeros(n_workers)
    done = 0
    for step in range(1, iterations + 1):
        done = step
        # Workers: ridge regression of their ratings on their items' values from the *other*
        # workers' ratings (leave one out: against a value it helped make, a worker would
        # look less noisy than it is, gain weight, and pull the values further its way),
        # towards a=0, b=1.
        before = (a, b, s2)
        n, sx, sy, sxx, sxy = (np.zeros(n_workers) for _ in range(5))
        for at in _steps(y.size):
            yc, cc = y[at], col[at]
            x, divisor, wt = _others(yc, row[at], cc, before, precision, total)
            wx = wt * x
            _add(n, cc, wt)
            _add(sx, cc, wx)
            _add(sy, cc, wt * yc)
            _add(sxx, cc, wx * x)
            _add(sxy, cc, wx * yc)
        n += prior
        sxx += prior
        sxy += prior
        det = n * sxx - sx * sx
        b = np.clip((n * sxy - sx * sy) / np.where(det > 0, det, 1), 0.2, 3.0)
        a = (sy - b * sx) / n
        # Residual variance less the part the other workers' value brings itself: the values
        # made again from the round's starting fit (keeping them would take two arrays as
        # long as the ratings).
        squares = np.zeros(n_workers)
        for at in _steps(y.size):
            yc, cc = y[at], col[at]
            x, divisor, wt = _others(yc, row[at], cc, before, precision, total)
            bc = b[cc]
            residual = a[cc]
            np.subtract(yc, residual, out=residual)
            part = bc * x
            residual -= part
            np.square(residual, out=residual)
            np.square(bc, out=part)
            part /= divisor
            residual -= part
            np.maximum(residual, 0.0, out=residual)
            _add(squares, cc, wt * residual)
        s2 = np.maximum((squares + prior * pooled) / n, 0.01)
        # The model's unit is arbitrary (a_w + b_w mu_i is unchanged when mu moves by an affine
        # map and a, b move back): pin it to the crowd's average use of the scale, offset 0 and
        # slope 1 over the ratings, or it drifts a little each round and never settles.
        slope = float(np.average(b, weights=used))
        offset = float(np.average(a, weights=used))
        a, b = a - b * offset / slope, b / slope
        # Items: precision-weighted mean of the ratings read back through each worker.
        # Each round's item-long arrays made in the same buffers: a new one is fresh pages
        # from the system where large blocks are mapped on their own (an export's job:
        # services/release/memory.py), five a round of 2 MB each at CxC's 267,000 pairs.
        _item_sums(y, row, col, (a, b, s2), n_items, into=(precision, total))
        np.divide(total, precision, out=spare)
        change = float(np.abs(np.subtract(spare, mu, out=gap), out=gap).max())
        mu, spare = spare, mu
        if change < tolerance:
            break
    # Read the values through the crowd's average use of the scale (pinned to offset 0 and
    # slope 1 above, up to the last round's worker update), so a plain crowd gets its own
    # means back.
    slope = float(np.average(b, weights=used))
    value = float(np.average(a, weights=used)) + slope * mu
    # The interval: the ratings' precision, scaled by how far this item's ratings stray from
    # the model (hard items draw noisier ratings from everyone: a worker's noise alone is too
    # narrow there), shrunk towards 1 with the weight of `ITEM_PRIOR` ratings, plus the
    # uncertainty of its workers' fitted offsets and slopes, plus the rounding the ratings'
    # spread does not show: a rating is a value rounded to a point, which adds
    # resolution^2 / 12 to the ratings' variance when raters round independently; raters who
    # agree share their rounding error (up to half a point) and show less. Without this term,
    # pairs whose raters all gave the same point were most of the misses (issue 30,
    # docs/quality.md). A t quantile with the degrees of freedom of that spread.
    # (In place where an item-long array is done with: CxC has 267,000 pairs, 2 MB each.)
    del total, spare, gap
    strayed, spread = np.zeros(n_items), np.zeros(n_items)
    for at in _steps(y.size):
        yc, rc, cc = y[at], row[at], col[at]
        _add(strayed, rc, (yc - a[cc] - b[cc] * mu[rc]) ** 2 / s2[cc])
        _add(spread, rc, (yc - plain[rc]) ** 2)
    spread_df = ITEM_PRIOR + count - 1
    variance = strayed  # phi: the spread's scale, then the variance
    variance += ITEM_PRIOR
    variance /= spread_df
    variance /= precision
    del precision
    variance += _worker_part(row, col, y, (a, b, s2), (n, sx, sxx), n_items)
    hidden = spread
    hidden /= np.maximum(count - 1, 1)
    np.subtract(resolution * resolution / 12, hidden, out=hidden)
    np.maximum(hidden, 0.0, out=hidden)
    hidden /= count
    hidden /= slope * slope
    variance += hidden
    del hidden, spread
    half = t975(spread_df)
    del spread_df
    half *= slope
    half *= np.sqrt(variance, out=variance)
    del variance
    return RatingEstimate(
        items=ids,
        mean=plain,
        value=np.clip(value, low, high),
        low=np.clip(value - half, low, high),
        high=np.clip(value + half, low, high),
        workers=wids,
        offset=a,
        slope=b,
        noise=np.sqrt(s2),
        iterations=done,
    )


Workers = tuple[np.ndarray, np.ndarray, np.ndarray]  # a, b, s2: one value per worker each


def _item_weights(
    y: np.ndarray, a: np.ndarray, b: np.ndarray, s2: np.ndarray, col: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per rating, b^2 / s2 and b (y - a) / s2 of its worker, computed in place."""
    bc, s2c = b[col], s2[col]
    own = np.square(bc)
    own /= s2c
    pull = a[col]
    np.subtract(y, pull, out=pull)
    pull *= bc
    pull /= s2c
    return own, pull


def _item_sums(
    y: np.ndarray,
    row: np.ndarray,
    col: np.ndarray,
    fit: Workers,
    n_items: int,
    *,
    into: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per item, its ratings' precision (sum of b^2 / s2) and their sum read back through
    their workers' (a, b), weighted by it (`into`: summed in these two arrays, zeroed)."""
    if into is None:
        precision, total = np.zeros(n_items), np.zeros(n_items)
    else:
        precision, total = into
        precision.fill(0.0)
        total.fill(0.0)
    for at in _steps(y.size):
        own, pull = _item_weights(y[at], *fit, col[at])
        _add(precision, row[at], own)
        _add(total, row[at], pull)
    return precision, total


def _others(
    y: np.ndarray,
    row: np.ndarray,
    col: np.ndarray,
    fit: Workers,
    precision: np.ndarray,
    total: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a step of ratings: the item's value from its other workers' ratings, the
    precision that value has, and whether there are such ratings (1.0; 0.0 for a single
    rater, whose value is then 0 and precision 1)."""
    own, pull = _item_weights(y, *fit, col)
    others = precision[row]
    others -= own
    use = others > 1e-9
    divisor = np.where(use, others, 1)
    x = total[row]
    x -= pull
    x /= divisor
    return np.where(use, x, 0.0), divisor, use.astype(np.float64)


def _worker_part(
    row: np.ndarray,
    col: np.ndarray,
    y: np.ndarray,
    fit: Workers,
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_items: int,
) -> np.ndarray:
    """Per item, the variance its value takes from its workers' fitted offset and slope (delta
    method: the value is a weighted mean of (y - a_w) / b_w; each worker's (a_w, b_w) has the
    covariance of its ridge regression, s_w^2 times the inverse of its normal matrix)."""
    a, b, s2 = fit
    n, sx, sxx = sums
    det = n * sxx - sx * sx
    det = np.where(det > 0, det, np.inf)
    var_a, var_b, cov_ab = s2 * sxx / det, s2 * n / det, -s2 * sx / det
    weights = np.zeros(n_items)
    for at in _steps(y.size):
        cc = col[at]
        _add(weights, row[at], b[cc] ** 2 / s2[cc])
    part = np.zeros(n_items)
    for at in _steps(y.size):
        rc, cc = row[at], col[at]
        z = (y[at] - a[cc]) / b[cc]
        share = b[cc] ** 2 / s2[cc] / weights[rc]
        g = var_a[cc] + 2 * z * cov_ab[cc] + z * z * var_b[cc]
        _add(part, rc, (share / b[cc]) ** 2 * g)
    return part


@dataclass(frozen=True)
class PreferenceEstimate:
    items: np.ndarray  # item ids, ascending
    strength: np.ndarray  # theta, summing to 0
    low: np.ndarray  # 95 % interval of theta
    high: np.ndarray
    share: np.ndarray  # the plain share of comparisons won


def bradley_terry(
    winners: np.ndarray, losers: np.ndarray, *, alpha: float = 0.01
) -> PreferenceEstimate:
    """Strengths with 95 % intervals from (winner, loser) pairs of item ids."""
    import choix  # a small pure-Python dependency; imported here so the module loads without it

    winners, losers = np.asarray(winners), np.asarray(losers)
    if winners.shape != losers.shape or winners.ndim != 1 or winners.size == 0:
        raise InputError(
            "winners and losers must be 1-D, non-empty and the same length", field="preferences"
        )
    if np.any(winners == losers):
        raise InputError("an item cannot beat itself", field="preferences")
    ids, index = np.unique(np.concatenate([winners, losers]), return_inverse=True)
    w, lo = index[: winners.size], index[winners.size :]
    theta = np.asarray(choix.opt_pairwise(ids.size, list(zip(w, lo, strict=True)), alpha=alpha))
    theta = theta - theta.mean()
    # Fisher information of the penalised likelihood: sum over comparisons of p(1-p) on the
    # Laplacian of the comparison graph, plus the ridge; the constraint removes the common shift.
    p = 1 / (1 + np.exp(theta[lo] - theta[w]))
    q = p * (1 - p)
    info = np.zeros((ids.size, ids.size))
    np.add.at(info, (w, w), q)
    np.add.at(info, (lo, lo), q)
    np.add.at(info, (w, lo), -q)
    np.add.at(info, (lo, w), -q)
    # choix minimises alpha * sum(theta^2) - loglik, so the ridge adds 2 * alpha of curvature.
    info += 2 * alpha * np.eye(ids.size)
    centre = np.eye(ids.size) - 1 / ids.size
    cov = centre @ np.linalg.pinv(info) @ centre
    half = Z95 * np.sqrt(np.clip(np.diag(cov), 0, None))
    wins = np.bincount(w, minlength=ids.size)
    games = wins + np.bincount(lo, minlength=ids.size)
    return PreferenceEstimate(
        items=ids,
        strength=theta,
        low=theta - half,
        high=theta + half,
        share=wins / games,
    )
