"""`np.unique(values, return_inverse=True)` without its sort where the values are integers
in a range not much wider than their count (row ids, rater ids): the aggregations of CxC's
1.3 million ratings group by them many times."""

from __future__ import annotations

import numpy as np


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values and each value's index among them, as `np.unique` gives
    them."""
    if values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * values.size:
            present = np.zeros(high - low + 1, dtype=bool)
            present[values - low] = True
            rank = np.cumsum(present) - 1
            return np.flatnonzero(present).astype(values.dtype) + low, rank[values - low]
    return np.unique(values, return_inverse=True)
