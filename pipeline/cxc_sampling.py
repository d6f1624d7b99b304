"""Crisscrossed Captions' indirect sampling: which pairs people are asked to rate.

Each example (an image and its co-captions) has an *image* representation (an image
embedding) and a *caption* representation (the mean of its co-captions' text encodings).
Pairs of one modality are chosen by the similarity of the *other* modality: image pairs
(`i2i_csim`) from examples whose captions are similar, caption pairs (`c2c_isim`) from
examples whose images are similar, so the chosen pairs do not depend on a model of their own
modality. Candidates are each example's nearest examples plus random examples, put into
similarity bins; each bin gives its share of the pairs, most to the high bins but some to the
low ones, so the ratings span the scale (the bins are this project's, not CxC's: see
`cxc_bins`). Intermodal pairs (`c2i_intrasim`) come afterwards from the intramodal pairs
people rated highest, plus the original pairs (`c2i_original`); caption pairs of one example
are `c2c_cocaption`. Everything is seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.cxc_bins import DEFAULT_BINS, DEFAULT_SHARES
from pipeline.errors import InputError
from pipeline.neighbours import normalize_rows, top_k

I2I_CSIM = "i2i_csim"
C2C_ISIM = "c2c_isim"
C2C_COCAPTION = "c2c_cocaption"
C2I_INTRASIM = "c2i_intrasim"
C2I_ORIGINAL = "c2i_original"
METHODS = (I2I_CSIM, C2C_ISIM, C2C_COCAPTION, C2I_INTRASIM, C2I_ORIGINAL)


@dataclass(frozen=True)
class SampledPair:
    """Two example rows (i < j) and the similarity that chose them."""

    i: int
    j: int
    similarity: float


BIN_EDGES = (-1.5, 1.5)  # cosines lie within [-1, 1]; an edge a little outside holds the end


def check_bins(bins: Sequence[float], shares: Sequence[float]) -> None:
    low, high = BIN_EDGES
    # NaN fails every bound (it would pass the increasing check below); True is 1 to Python.
    if any(
        isinstance(b, bool) or not isinstance(b, int | float) or not low <= b <= high for b in bins
    ):
        raise InputError(f"must be cosine edges from {low} to {high}", field="bins")
    if any(isinstance(s, bool) for s in shares):
        raise InputError("must be numbers", field="shares")
    if len(bins) < 2 or any(b >= c for b, c in zip(bins, bins[1:], strict=False)):
        raise InputError("must be increasing cosine edges, at least two", field="bins")
    if len(shares) != len(bins) - 1:
        raise InputError(f"needs {len(bins) - 1} shares, one per bin", field="shares")
    if any(not np.isfinite(s) or s < 0 for s in shares) or sum(shares) <= 0:
        raise InputError("must be non-negative with a positive sum", field="shares")


def binned_pairs(
    vectors: np.ndarray,
    *,
    n_pairs: int,
    seed: int,
    neighbours: int = 10,
    random_per_example: int = 5,
    bins: Sequence[float] = DEFAULT_BINS,
    shares: Sequence[float] = DEFAULT_SHARES,
) -> list[SampledPair]:
    """`n_pairs` distinct unordered example pairs chosen by the cosine of `vectors` (one row
    per example): candidates are each row's `neighbours` nearest rows and
    `random_per_example` random rows; each bin contributes round(n_pairs x share) pairs (a bin
    short of candidates passes its remainder to the bins above it, then below)."""
    check_bins(bins, shares)
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InputError("need at least two examples with vectors", field="vectors")
    if not np.isfinite(x).all():
        raise InputError("vectors hold NaN or infinite values", field="vectors")
    n = x.shape[0]
    unit = normalize_rows(x)
    rng = np.random.default_rng(seed)
    k = min(neighbours, n - 1)
    idx, _ = top_k(unit, unit, k, exclude=np.arange(n, dtype=np.int64))
    r = min(random_per_example, n - 1)
    rows = np.repeat(np.arange(n, dtype=np.int64), k + r)
    cols = np.concatenate([idx, rng.integers(n, size=(n, r))], axis=1).ravel()
    keep = rows != cols
    pairs = np.unique(
        np.stack([np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]], axis=1), axis=0
    )
    sims = np.einsum("ij,ij->i", unit[pairs[:, 0]], unit[pairs[:, 1]]).astype(np.float64)
    which = np.digitize(sims, bins[1:-1])  # bin index per candidate
    wanted = _bin_counts(n_pairs, shares)
    chosen: list[int] = []
    spare = 0
    order = list(range(len(wanted) - 1, -1, -1))  # high bins first take the spare
    pools = {b: rng.permutation(np.flatnonzero(which == b)).tolist() for b in range(len(wanted))}
    for b in order:
        take = wanted[b] + spare
        got = pools[b][:take]
        pools[b] = pools[b][take:]
        chosen += got
        spare = take - len(got)
    for b in order:  # anything still short comes from whatever is left, high bins first
        if spare <= 0:
            break
        got = pools[b][:spare]
        chosen += got
        spare -= len(got)
    chosen.sort()
    return [
        SampledPair(i=int(pairs[c, 0]), j=int(pairs[c, 1]), similarity=round(float(sims[c]), 6))
        for c in chosen
    ]


def _bin_counts(n_pairs: int, shares: Sequence[float]) -> list[int]:
    total = float(sum(shares))
    counts = [int(n_pairs * s / total) for s in shares]
    for b in np.argsort([-s for s in shares], kind="stable")[: n_pairs - sum(counts)]:
        counts[int(b)] += 1
    return counts


def cocaption_pairs(
    captions_per_example: Sequence[Sequence[int]], *, n_pairs: int, seed: int
) -> list[tuple[int, int]]:
    """`n_pairs` distinct pairs of two captions of one example (`c2c_cocaption`), seeded."""
    rng = np.random.default_rng(seed)
    options = [
        (a, b) for caps in captions_per_example for x, a in enumerate(caps) for b in caps[x + 1 :]
    ]
    if not options:
        return []
    take = rng.choice(len(options), size=min(n_pairs, len(options)), replace=False)
    return sorted(options[int(t)] for t in take)


def pick(options: Sequence[int], rng: np.random.Generator) -> int:
    return int(options[int(rng.integers(len(options)))])


def bin_histogram(similarities: Sequence[float], bins: Sequence[float] = DEFAULT_BINS) -> list[int]:
    """How many chosen pairs fall in each bin (for the manifest)."""
    which = np.digitize(np.asarray(similarities, dtype=np.float64), bins[1:-1])
    return [int((which == b).sum()) for b in range(len(bins) - 1)]
