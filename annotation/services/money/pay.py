"""Topping up workers whose effective hourly pay fell below the minimum, with bonuses."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from annotation.models import Assignment, Batch, Worker
from annotation.money import symbol
from annotation.selectors.counting import COUNTED_STATES
from annotation.selectors.money.pay import CENT, effective_pay, min_hourly_pay
from annotation.services.work.worker_actions import worker_bonus


def batch_pay_top_up(*, batch: Batch, hourly: Decimal | None = None) -> dict[str, str]:
    """A bonus for each worker of `batch` paid below `hourly` (default the minimum) for their
    active time, bringing them up to it; paid once (the bonus token is per amount and
    reason), on the worker's last counted assignment. Returns worker id -> amount."""
    target = hourly if hourly is not None else min_hourly_pay()
    report = effective_pay(batch=batch)
    paid: dict[str, str] = {}
    for worker_pk, row in report["per_worker"].items():
        owed = (target * Decimal(str(row["seconds"])) / 3600 - Decimal(row["paid"])).quantize(
            CENT, rounding=ROUND_CEILING
        )
        if owed < CENT:
            continue
        last = (
            Assignment.objects.filter(
                hit__batch=batch, worker_id=worker_pk, state__in=COUNTED_STATES, confirmed=True
            )
            .order_by("-submitted_at")
            .first()
        )
        if last is None:
            continue
        worker_bonus(
            assignment=last,
            amount=owed,
            reason=f"Top-up to {symbol()}{target}/h for your work on this batch. Thank you!",
        )
        paid[Worker.objects.get(pk=worker_pk).external_id] = str(owed)
    return paid
