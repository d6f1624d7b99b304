"""BISON stage 1 from nearest neighbours to pairs, and a health check of the vector space.

The paper pairs every nearest-neighbour edge in both directions: an image is the positive of
its own nearest neighbour and of every image whose nearest neighbour it is (67,564 ordered
pairs = 2 x 33,782 distinct edges from 40,504 val2014 images).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# A space whose random image pairs are this similar cannot tell images apart: neighbours would
# be decided by float32 rounding (FastText trained for too few epochs on captions does this).
DEGENERATE_RANDOM_MEDIAN = 0.99


@dataclass(frozen=True)
class PairGraph:
    """Both orders of every distinct nearest-neighbour edge, as (positive, negative) rows."""

    ordered: np.ndarray  # (2 * edges, 2) int64 row indices, sorted
    edges: int
    mutual: int  # edges whose two images are each other's nearest neighbour


def pairs_both_orders(nn: np.ndarray) -> PairGraph:
    """`nn[i]` is image i's nearest neighbour (-1: none). Every edge {i, nn[i]} gives the
    ordered pairs (i, nn[i]) and (nn[i], i), each once."""
    nn = np.asarray(nn, dtype=np.int64)
    if nn.ndim != 1:
        raise ValueError("nn must be a vector of neighbour indices")
    if nn.size and (nn.max() >= nn.size or nn.min() < -1):
        raise ValueError("nn holds an index outside the images")
    rows = np.flatnonzero(nn >= 0)
    if np.any(nn[rows] == rows):
        raise ValueError("an image is its own nearest neighbour")
    low = np.minimum(rows, nn[rows])
    high = np.maximum(rows, nn[rows])
    edges = np.unique(np.stack([low, high], axis=1), axis=0).reshape(-1, 2)
    ordered = np.concatenate([edges, edges[:, ::-1]])
    ordered = ordered[np.lexsort((ordered[:, 1], ordered[:, 0]))]
    mutual = int(np.sum(nn[nn[rows]] == rows)) // 2
    return PairGraph(ordered=ordered, edges=len(edges), mutual=mutual)


@dataclass(frozen=True)
class CosineSummary:
    """Percentiles (5, 50, 95) of nearest-neighbour and of random-pair cosines."""

    nn_p5: float
    nn_median: float
    nn_p95: float
    random_p5: float
    random_median: float
    random_p95: float
    random_pairs: int
    degenerate: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def warning(self) -> str | None:
        if not self.degenerate:
            return None
        return (
            f"degenerate vector space: random image pairs have median cosine "
            f"{self.random_median:.6f} (>= {DEGENERATE_RANDOM_MEDIAN}), so nearest neighbours "
            "are decided by rounding; use pretrained vectors (.vec/.bin) or train longer"
        )


def cosine_summary(
    unit: np.ndarray,
    nn_similarities: np.ndarray,
    *,
    valid: np.ndarray | None = None,
    samples: int = 10_000,
    seed: int = 0,
) -> CosineSummary:
    """Summarise how spread the unit-normalised image vectors are (seeded random pairs)."""
    unit = np.asarray(unit, dtype=np.float32)
    rows = np.flatnonzero(valid) if valid is not None else np.arange(len(unit))
    nn_sims = np.asarray(nn_similarities, dtype=np.float64)
    nn_sims = nn_sims[np.isfinite(nn_sims)]
    rng = np.random.default_rng(seed)
    if len(rows) >= 2:
        a = rng.choice(rows, size=samples)
        b = rng.choice(rows, size=samples)
        keep = a != b
        random_sims = np.einsum(
            "ij,ij->i", unit[a[keep]].astype(np.float64), unit[b[keep]].astype(np.float64)
        )
    else:
        random_sims = np.zeros(0)

    def pct(x: np.ndarray, q: float) -> float:
        return round(float(np.percentile(x, q)), 6) if x.size else float("nan")

    random_median = pct(random_sims, 50)
    return CosineSummary(
        nn_p5=pct(nn_sims, 5),
        nn_median=pct(nn_sims, 50),
        nn_p95=pct(nn_sims, 95),
        random_p5=pct(random_sims, 5),
        random_median=random_median,
        random_p95=pct(random_sims, 95),
        random_pairs=int(random_sims.size),
        degenerate=bool(random_sims.size and random_median >= DEGENERATE_RANDOM_MEDIAN),
    )
