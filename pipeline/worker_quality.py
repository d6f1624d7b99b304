"""Worker quality from agreement with the crowd on non-gold items, not from gold alone.

A gold-aware cheater answers the few gold questions with care and the rest at random: gold says
it is good. What gives it away is that its other answers agree with everybody else's less
often than a careful worker's do. Each non-gold answer is compared with the *other* workers'
answers on the same item (leave one out: the worker never votes on its own yardstick): for
choices, whether it equals their majority (items whose others tie are skipped); for ratings,
whether it lies within `tolerance` of their mean. A worker is held for review once it has
`min_answers` compared answers and the upper end of the 95 % Wilson interval of its agreement
falls below `threshold` (so a worker is held only when the evidence says it agrees less than
that, not on a bad streak), in the order its answers came (`held_after`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.expectation import wilson


def others_majority_agrees(items: np.ndarray, labels: np.ndarray, *, k: int) -> np.ndarray:
    """Per answer: 1.0 if it equals the majority of the other answers on its item, 0.0 if
    not, NaN where the others are none or tie."""
    items, labels = np.asarray(items), np.asarray(labels)
    ids, row = np.unique(items, return_inverse=True)
    table = np.zeros((ids.size, k))
    np.add.at(table, (row, labels), 1.0)
    others = table[row].copy()
    others[np.arange(labels.size), labels] -= 1
    top = others.max(axis=1)
    ties = (others == top[:, None]).sum(axis=1) > 1
    agree = (others.argmax(axis=1) == labels).astype(np.float64)
    return np.where((top > 0) & ~ties, agree, np.nan)


def others_mean_close(items: np.ndarray, ratings: np.ndarray, *, tolerance: float) -> np.ndarray:
    """Per rating: 1.0 if within `tolerance` of the other ratings' mean on its item, else 0.0;
    NaN where no other rating exists."""
    items, y = np.asarray(items), np.asarray(ratings, dtype=np.float64)
    ids, row = np.unique(items, return_inverse=True)
    total = np.bincount(row, weights=y, minlength=ids.size)
    count = np.bincount(row, minlength=ids.size)
    n = count[row] - 1
    mean = (total[row] - y) / np.where(n > 0, n, 1)
    return np.where(n > 0, (np.abs(y - mean) <= tolerance).astype(np.float64), np.nan)


def _wilson_upper(hits: np.ndarray, total: np.ndarray, z: float = 1.96) -> np.ndarray:
    """Upper ends of Wilson intervals, element by element (`pipeline.expectation.wilson`)."""
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return np.minimum(1.0, centre + half)


@dataclass(frozen=True)
class WorkerAgreement:
    worker: int
    agreed: int
    compared: int
    held_after: int | None  # answers compared when the hold came; None: not held

    @property
    def share(self) -> float | None:
        return self.agreed / self.compared if self.compared else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.agreed, self.compared)


def worker_agreement(
    workers: Sequence[int] | np.ndarray,
    agrees: np.ndarray,
    *,
    threshold: float = 0.7,
    min_answers: int = 10,
) -> dict[int, WorkerAgreement]:
    """Per worker: agreement on its compared answers (in the order given) and when, if ever,
    the hold rule of the module docstring fired."""
    workers, agrees = np.asarray(workers), np.asarray(agrees, dtype=np.float64)
    out: dict[int, WorkerAgreement] = {}
    for worker in np.unique(workers):
        mine = agrees[(workers == worker) & ~np.isnan(agrees)]
        upper = _wilson_upper(np.cumsum(mine), np.arange(1, mine.size + 1))
        fired = np.flatnonzero((upper < threshold) & (np.arange(1, mine.size + 1) >= min_answers))
        held = int(fired[0]) + 1 if fired.size else None
        out[int(worker)] = WorkerAgreement(
            worker=int(worker), agreed=int(mine.sum()), compared=int(mine.size), held_after=held
        )
    return out
