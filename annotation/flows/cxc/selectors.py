"""CxC reads: every counted rating as flat arrays (CxC has 1.3 million of them), and the
agreement between raters computed on those arrays."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Case, Value, When

from annotation.flows.cxc.services.sampling import METHODS_OF
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Answer, Assignment, GoldItemKind, Item, Run, Worker
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.int_arrays import id_dtype, int_arrays
from pipeline.agreement import krippendorff_alpha_interval_arrays, mean_pairwise_spearman_arrays

STAGES = (CxcStage.SIS, CxcStage.STS, CxcStage.SITS)


def _rated(run: Run):  # type: ignore[no-untyped-def]
    return Answer.objects.filter(counted_reviewed(), question__item__run=run).filter(
        question__hit__batch__stage__in=list(METHODS_OF)
    )


def cxc_has_ratings(*, run: Run) -> bool:
    return _rated(run).exclude(question__item__kind=GoldItemKind.RATING).exists()


@dataclass(frozen=True)
class RatingArrays:
    item: np.ndarray
    stage: np.ndarray  # index into STAGES
    worker: np.ndarray
    assignment: np.ndarray
    value: np.ndarray
    gold: np.ndarray


def cxc_rating_arrays(*, run: Run) -> RatingArrays:
    """Every counted rating as flat arrays, ordered by pair and assignment (packed by
    PostgreSQL and read by numpy: CxC's 1.3 million ratings make no Python object each).
    The pair's table is not joined: the run is the batch's, gold is marked from the run's few
    gold pairs. Ids in 4 bytes where they fit (`id_dtype`)."""
    stage = Case(
        *(When(question__hit__batch__stage=s, then=Value(n)) for n, s in enumerate(STAGES)),
        default=Value(-1),
    )
    rated = Answer.objects.filter(
        counted_reviewed(),
        question__hit__batch__run=run,
        question__hit__batch__stage__in=list(METHODS_OF),
    )
    cols = int_arrays(
        rated,
        {
            "item": ("question__item_id", id_dtype(Item)),
            "stage": (stage, np.int8),
            "worker": ("assignment__worker_id", id_dtype(Worker)),
            "assignment": ("assignment_id", id_dtype(Assignment)),
            "value": ("label", np.int8),
        },
    )
    order = _by_pair_then_assignment(cols["item"], cols["assignment"])
    for name in cols:  # one column at a time: at most one extra copy alive
        cols[name] = cols[name][order]
    del order
    gold_items = np.fromiter(
        Item.objects.filter(run=run, kind=GoldItemKind.RATING).values_list("pk", flat=True),
        dtype=np.int64,
    )
    return RatingArrays(
        item=cols["item"],
        stage=cols["stage"],
        worker=cols["worker"],
        assignment=cols["assignment"],
        value=cols["value"],
        gold=np.isin(cols["item"], gold_items),
    )


def _by_pair_then_assignment(item: np.ndarray, assignment: np.ndarray) -> np.ndarray:
    """`np.lexsort((assignment, item))`: one stable sort of a combined key (ids span far less
    than 62 bits) instead of lexsort's two passes."""
    if not item.size:
        return np.zeros(0, dtype=np.intp)
    low = int(assignment.min())
    span = int(assignment.max()) - low + 1
    if span * (int(item.max()) - int(item.min()) + 1) >= 2**62:
        return np.lexsort((assignment, item))
    key = item.astype(np.int64)
    key -= int(item.min())
    key *= span
    key += assignment
    key -= low
    return np.argsort(key, kind="stable")


def cxc_agreement(ratings: RatingArrays) -> dict[str, Any]:
    """Per task: Krippendorff's alpha (interval) over pairs with two or more ratings, and
    the mean pairwise Spearman between raters over the pairs both rated; gold pairs left out
    (each is rated by many workers across HITs and would weigh more than the others)."""
    out: dict[str, Any] = {}
    for n, stage in enumerate(STAGES):
        keep = (ratings.stage == n) & ~ratings.gold
        items, values, workers = ratings.item[keep], ratings.value[keep], ratings.worker[keep]
        per_pair = np.unique(items, return_counts=True)[1] if items.size else np.zeros(0, int)
        rho, pairs = (
            mean_pairwise_spearman_arrays(items, workers, values) if items.size else (None, 0)
        )
        alpha = krippendorff_alpha_interval_arrays(items, values)
        out[stage] = {
            "pairs_rated": int(per_pair.size),
            "ratings": int(items.size),
            "raters_per_pair": {
                "min": int(per_pair.min()) if per_pair.size else 0,
                "median": statistics.median(per_pair.tolist()) if per_pair.size else 0,
                "max": int(per_pair.max()) if per_pair.size else 0,
            },
            "krippendorff_alpha_interval": None if alpha is None else round(alpha, 4),
            "mean_pairwise_spearman": None if rho is None else round(rho, 4),
            "rater_pairs_in_spearman": pairs,
        }
    return out
