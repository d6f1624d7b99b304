"""CxC reads: every counted rating as flat arrays (CxC has 1.3 million of them), and the
agreement between raters computed on those arrays."""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotation.flows.cxc.services.sampling import METHODS_OF
from annotation.models import Answer, ItemKind, Run, Stage
from annotation.selectors.counting import counted_reviewed
from pipeline.agreement import (
    krippendorff_alpha_interval_arrays,
    mean_pairwise_spearman_arrays,
)

STAGES = (Stage.CXC_SIS, Stage.CXC_STS, Stage.CXC_SITS)


def _rated(run: Run):  # type: ignore[no-untyped-def]
    return Answer.objects.filter(counted_reviewed(), question__item__run=run).filter(
        question__hit__batch__stage__in=list(METHODS_OF)
    )


def cxc_has_ratings(*, run: Run) -> bool:
    return _rated(run).exclude(question__item__kind=ItemKind.GOLD_RATING).exists()


@dataclass(frozen=True)
class RatingArrays:
    item: np.ndarray
    stage: np.ndarray  # index into STAGES
    worker: np.ndarray
    assignment: np.ndarray
    value: np.ndarray
    gold: np.ndarray


def cxc_rating_arrays(
    *, run: Run, each: Callable[[int, str, int, int, int, bool], None] | None = None
) -> RatingArrays:
    """Every counted rating, streamed from the database in chunks (ordered by pair and
    assignment); `each(item, stage, worker, assignment, value, gold)` sees every row as it
    passes (the export writes its JSONL there)."""
    code = {stage: n for n, stage in enumerate(STAGES)}
    cols: dict[str, array[int]] = {k: array("q") for k in ("item", "worker", "assignment")}
    stage_col, value_col, gold_col = array("b"), array("b"), array("b")
    rows = (
        _rated(run)
        .values_list(
            "question__item_id",
            "question__hit__batch__stage",
            "assignment__worker_id",
            "assignment_id",
            "label",
            "question__item__kind",
        )
        .order_by("question__item_id", "assignment_id")
        .iterator(chunk_size=50_000)
    )
    for item, stage, worker, assignment, label, kind in rows:
        value, gold = int(label), kind == ItemKind.GOLD_RATING
        cols["item"].append(item)
        cols["worker"].append(worker)
        cols["assignment"].append(assignment)
        stage_col.append(code[stage])
        value_col.append(value)
        gold_col.append(gold)
        if each is not None:
            each(item, stage, worker, assignment, value, gold)
    return RatingArrays(
        item=np.frombuffer(cols["item"], dtype=np.int64),
        stage=np.frombuffer(stage_col, dtype=np.int8),
        worker=np.frombuffer(cols["worker"], dtype=np.int64),
        assignment=np.frombuffer(cols["assignment"], dtype=np.int64),
        value=np.frombuffer(value_col, dtype=np.int8),
        gold=np.frombuffer(gold_col, dtype=np.int8).astype(bool),
    )


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
