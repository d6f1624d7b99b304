"""CxC reads: every counted rating, aggregated per pair, and agreement between raters."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from annotation.flows.cxc.services.sampling import METHODS_OF
from annotation.models import Answer, Item, ItemKind, Run, Stage
from annotation.selectors.counting import counted
from pipeline.agreement import krippendorff_alpha_interval, mean_pairwise_spearman


def _counted() -> Q:
    """Ratings that count: counted work not waiting in (or failed by) review."""
    return counted("assignment__") & (
        Q(assignment__review__isnull=True)
        | Q(assignment__review__status__in=("approved", "auto_approved"))
    )


@dataclass(frozen=True)
class Rating:
    item_id: int
    stage: str
    worker_id: int
    worker: str  # provider:external id (pseudonymised on export)
    assignment_id: int
    value: int
    gold: bool


def cxc_ratings(*, run: Run) -> list[Rating]:
    rows = (
        Answer.objects.filter(_counted(), question__item__run=run)
        .filter(question__hit__batch__stage__in=list(METHODS_OF))
        .values_list(
            "question__item_id",
            "question__hit__batch__stage",
            "assignment__worker_id",
            "assignment__worker__provider",
            "assignment__worker__external_id",
            "assignment_id",
            "label",
            "question__item__kind",
        )
        .order_by("question__item_id", "assignment_id")
    )
    return [
        Rating(
            item_id=item,
            stage=stage,
            worker_id=worker_pk,
            worker=f"{provider}:{external}",
            assignment_id=assignment,
            value=int(label),
            gold=kind == ItemKind.GOLD_RATING,
        )
        for item, stage, worker_pk, provider, external, assignment, label, kind in rows
    ]


def cxc_pair_scores(*, run: Run) -> dict[int, list[int]]:
    """Every non-gold rated pair's ratings, by item pk."""
    scores: dict[int, list[int]] = defaultdict(list)
    for r in cxc_ratings(run=run):
        if not r.gold:
            scores[r.item_id].append(r.value)
    return dict(scores)


def cxc_agreement(ratings: list[Rating]) -> dict[str, Any]:
    """Per stage: Krippendorff's alpha (interval) over pairs with two or more ratings, and
    the mean pairwise Spearman between raters over the pairs both rated; gold pairs left out
    (each is rated by many workers across HITs and would weigh more than the others)."""
    out: dict[str, Any] = {}
    for stage in (Stage.CXC_SIS, Stage.CXC_STS, Stage.CXC_SITS):
        units: dict[int, dict[int, int]] = defaultdict(dict)
        for r in ratings:
            if r.stage == stage and not r.gold:
                units[r.item_id][r.worker_id] = r.value
        per_pair = [len(u) for u in units.values()]
        rho, pairs = mean_pairwise_spearman(units)
        out[stage] = {
            "pairs_rated": len(units),
            "ratings": sum(per_pair),
            "raters_per_pair": {
                "min": min(per_pair) if per_pair else 0,
                "median": statistics.median(per_pair) if per_pair else 0,
                "max": max(per_pair) if per_pair else 0,
            },
            "krippendorff_alpha_interval": _round(
                krippendorff_alpha_interval([list(u.values()) for u in units.values()])
            ),
            "mean_pairwise_spearman": _round(rho),
            "rater_pairs_in_spearman": pairs,
        }
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def cxc_items(*, run: Run, item_ids: list[int]) -> dict[int, Item]:
    return Item.objects.select_related("positive", "negative", "caption", "caption2").in_bulk(
        item_ids
    )
