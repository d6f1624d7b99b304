"""Each worker's agreement with the other workers on a stage's non-gold questions, and the
hold it leads to (`pipeline/worker_quality.py`): gold catches a worker who guesses on gold; this
catches one who answers gold with care and guesses on the rest."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
from django.db.models import Subquery

from annotation.models import GOLD_KINDS, Answer, Assignment, Batch, Run
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.reviews.gold import _number, worker_gold_tally
from pipeline.worker_quality import (
    WorkerAgreement,
    others_majority_agrees,
    others_mean_close,
    worker_agreement,
)

THRESHOLD = 0.7  # hold when the 95 % upper bound of agreement is below this
MIN_ANSWERS = 10  # compared answers before anyone is held
RATING_TOLERANCE = 1.0  # a rating agrees within a point of the others' mean
GOLD_PASSED = 0.75  # the hold is for workers gold does not catch
POLICY = "disagrees_with_crowd"  # a held review's reason names its policy


def stage_worker_agreement(
    *, run: Run, stage: str, ratings: bool, workers: Collection[int] | None = None
) -> dict[int, WorkerAgreement]:
    """Per worker (Worker pk) of `stage` in `run`: agreement of its counted non-gold answers
    with the other workers', in the order the answers were stored. With `workers`, only the
    items those workers answered are read (the others' agreement there is partial)."""
    answers = Answer.objects.filter(
        counted_reviewed(""), question__item__run=run, question__hit__batch__stage=stage
    ).exclude(question__item__kind__in=GOLD_KINDS)
    if workers is not None:
        theirs = answers.filter(assignment__worker_id__in=list(workers)).values("question__item_id")
        answers = answers.filter(question__item_id__in=Subquery(theirs))
    rows = list(
        answers.order_by("pk").values_list("question__item_id", "assignment__worker_id", "label")
    )
    if ratings:
        rows = [r for r in rows if _number(r[2]) is not None]
    if not rows:
        return {}
    items = np.array([r[0] for r in rows])
    workers = np.array([r[1] for r in rows])
    if ratings:
        values = np.array([_number(r[2]) for r in rows], dtype=np.float64)
        agrees = others_mean_close(items, values, tolerance=RATING_TOLERANCE)
    else:
        codes, labels = np.unique(np.array([r[2] for r in rows]), return_inverse=True)
        agrees = others_majority_agrees(items, labels, k=codes.size)
    return worker_agreement(workers, agrees, threshold=THRESHOLD, min_answers=MIN_ANSWERS)


def agreement_hold_reasons(
    *, batch: Batch, assignments: list[Assignment], ratings: bool
) -> dict[int, list[dict[str, Any]]]:
    """Waiting assignments of workers who pass gold but disagree with the crowd on the rest,
    with the reason (off with the batch option `"agreement_hold": false`)."""
    if not batch.options.get("agreement_hold", True) or not assignments:
        return {}
    found = stage_worker_agreement(
        run=batch.run,
        stage=batch.stage,
        ratings=ratings,
        workers={a.worker_id for a in assignments},
    )
    gold = worker_gold_tally(batch.run)
    held: dict[int, list[dict[str, Any]]] = {}
    for assignment in assignments:
        agreement = found.get(assignment.worker_id)
        if agreement is None or agreement.held_after is None:
            continue
        right, seen = gold.get(assignment.worker_id, (0, 0))
        if seen and right / seen < GOLD_PASSED:
            continue  # gold's own review catches it
        held[assignment.pk] = [
            {
                "policy": POLICY,
                "agreed": agreement.agreed,
                "compared": agreement.compared,
                "upper95": round(agreement.interval[1], 4),
                "limit": THRESHOLD,
                "gold_right": right,
                "gold_seen": seen,
            }
        ]
    return held
