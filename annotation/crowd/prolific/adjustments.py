"""Paying Prolific's adjustment: each counted participant topped up to the minimum hourly rate
at the study's median completion time (`pay.median_pay`), as bonuses of kind PAY_ADJUSTMENT.
Safe to repeat: an adjustment left unfinished is sent again as the same bonus (never paid twice,
`bonuses.py`), and what was paid before is subtracted from what the median asks."""

from __future__ import annotations

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.fees import currency
from annotation.crowd.prolific.pay import MedianPay, median_pay
from annotation.errors import ServiceError
from annotation.models import Batch, Bonus, BonusKind, EventAction
from annotation.services.events import event_record
from annotation.services.work.worker_actions import worker_bonus


def adjustment_reason(review: MedianPay) -> str:
    assert review.median_seconds is not None
    return (
        f"Pay adjustment: this study's median completion time was "
        f"{review.median_seconds / 60:.1f} minutes; this brings your reward to "
        f"{currency()} {review.minimum} per hour at that time."
    )


def prolific_pay_adjust(*, batch: Batch, client: ProlificClient) -> MedianPay:
    """Pay what the median asks; the review after paying (nothing left to pay)."""
    if batch.provider != "prolific" or not batch.provider_hit_type_id:
        raise ServiceError(f"batch {batch.pk} has no Prolific study")
    unfinished = Bonus.objects.filter(
        assignment__hit__batch=batch,
        kind=BonusKind.PAY_ADJUSTMENT,
        attempted_at__isnull=False,
        sent_at__isnull=True,
    ).select_related("assignment__hit__batch", "assignment__worker")
    for bonus in unfinished:
        worker_bonus(
            assignment=bonus.assignment,
            amount=bonus.amount,
            reason=bonus.reason,
            kind=BonusKind.PAY_ADJUSTMENT,
        )
    review = median_pay(batch=batch, client=client)
    if review.to_pay:
        reason = adjustment_reason(review)
        for assignment, amount in review.to_pay:
            worker_bonus(
                assignment=assignment, amount=amount, reason=reason, kind=BonusKind.PAY_ADJUSTMENT
            )
        event_record(
            action=EventAction.PROLIFIC_PAY_ADJUSTED,
            run=batch.run,
            batch=batch,
            data={
                "median_seconds": review.median_seconds,
                "per_participant": str(review.owed_each),
                "participants": len(review.to_pay),
                "total": str(review.total),
            },
        )
    return median_pay(batch=batch, client=client)
