"""`np.unique(values, return_inverse=True)` without its sort where the values are integers
in a range not much wider than their count (row ids, rater ids): the aggregations of CxC's
1.3 million ratings group by them many times."""

from __future__ import annotations

import numpy as np

STEP = 65_536  # values per step of a narrow index: no array of 8 bytes a value


def unique_inverse(values: np.ndarray, *, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values and each value's index among them, as `np.unique` gives
    them. `narrow`: the index in int32 where it fits (half the memory), made a step of values
    at a time (CxC's 1.3 million ratings: no 10 MB temporary)."""
    narrow = narrow and values.size < 2**31
    if values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * values.size:
            present = np.zeros(high - low + 1, dtype=bool)
            if not narrow:
                present[values - low] = True
                rank = np.cumsum(present) - 1
                return np.flatnonzero(present).astype(values.dtype) + low, rank[values - low]
            for lo in range(0, values.size, STEP):
                present[values[lo : lo + STEP] - low] = True
            rank = np.cumsum(present, dtype=np.int32)
            rank -= 1
            steps = np.empty(values.size, dtype=np.int32)
            for lo in range(0, values.size, STEP):
                steps[lo : lo + STEP] = rank[values[lo : lo + STEP] - low]
            return np.flatnonzero(present).astype(values.dtype) + low, steps
    ids, index = np.unique(values, return_inverse=True)
    return ids, index.astype(np.int32) if narrow else index


def distinct_ints(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` of an integer array, by a sort: numpy 2.4's `np.unique` asked for
    the values alone takes a hash table, 10-50 times slower here (0.07-0.18 s against 3-7 ms
    for ECCV's 250,000 proposals)."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    if not ordered.size:
        return ordered
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])]
