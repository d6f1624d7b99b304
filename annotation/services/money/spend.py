"""Spend limits over every paid crowd provider: the per-batch budget (CROWDVL_BUDGET) and the
money committed per rolling 24 hours (CROWDVL_DAILY_CAP). Each provider counts its own
commitments (`CrowdProvider.committed_since`); the limits are the installation's."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import Batch, Bonus, Hit, SlotsAdded
from annotation.money import symbol
from annotation.providers import CostEstimate, CrowdProvider, providers

DAY = timedelta(hours=24)

# The new-batch form's switch for pay under CROWDVL_MIN_HOURLY_PAY (`allow_low_pay`), and what a
# refusal tells a console page to do (the command line names its --allow-low-pay instead).
ALLOW_LOW_PAY_LABEL = "Allow pay under the minimum hourly rate"
LOW_PAY_PAGE = (
    f'raise the reward, or discard this draft and create the batch again with "{ALLOW_LOW_PAY_LABEL}" '
    "ticked"
)


def platform_committed_since(*, provider: CrowdProvider, since: datetime) -> Decimal:
    """What a paying platform holds committed since `since`, by its own prices
    (`slot_cost`, `bonus_cost`): the slots each HIT was offered with, slots added to HITs
    (by hand or in place of rejected or excluded work; counted from their own rows, when they
    were added), and bonuses sent."""
    total = Decimal("0.00")
    offered = (
        Hit.objects.filter(batch__provider=provider.name, create_attempted_at__gte=since)
        .exclude(provider_hit_id="")
        .select_related("batch")
    )
    for hit in offered:
        # Slots added later raise the HIT's extra_assignments: their SlotsAdded rows count them.
        offered_with = hit.capacity - hit.extra_assignments
        total += offered_with * provider.slot_cost(batch=hit.batch)
    added = SlotsAdded.objects.filter(
        hit__batch__provider=provider.name, created_at__gte=since
    ).select_related("hit__batch")
    for row in added:
        total += row.added * provider.slot_cost(batch=row.hit.batch)
    bonuses = Bonus.objects.filter(
        assignment__hit__batch__provider=provider.name, sent_at__gte=since
    ).values_list("amount", flat=True)
    for amount in bonuses:
        total += provider.bonus_cost(amount=amount)
    return total


def committed_last_day(*, now: datetime | None = None) -> Decimal:
    """Money committed at every provider in the last 24 hours (rewards, fees, bonuses)."""
    since = (now or timezone.now()) - DAY
    return sum((p.committed_since(since=since) for p in providers()), Decimal("0.00"))


def daily_cap_reason(*, amount: Decimal, what: str, now: datetime | None = None) -> str | None:
    """Why `what` (costing `amount`) would take the last 24 hours' commitments over
    CROWDVL_DAILY_CAP, or None."""
    cap = settings.CROWDVL_DAILY_CAP
    if cap is None:
        return None
    committed = committed_last_day(now=now)
    if committed + amount > Decimal(cap):
        return (
            f"{what} would commit {symbol()}{amount} more; {symbol()}{committed} was committed in the last 24 "
            f"hours and the daily cap is {symbol()}{cap} (CROWDVL_DAILY_CAP)"
        )
    return None


def daily_cap_check(*, amount: Decimal, what: str, now: datetime | None = None) -> None:
    """Refuse `what` (costing `amount`) if it would go over CROWDVL_DAILY_CAP."""
    reason = daily_cap_reason(amount=amount, what=what, now=now)
    if reason:
        raise ServiceError(reason)


def budget_check(*, batch: Batch, estimate: CostEstimate) -> None:
    """Refuse a batch whose cost is over CROWDVL_BUDGET (a per-batch budget)."""
    budget = settings.CROWDVL_BUDGET
    if budget is not None and estimate.total > Decimal(budget):
        raise ServiceError(
            f"batch {batch.pk} would cost {symbol()}{estimate.total}, over the budget of {symbol()}{budget} "
            f"(CROWDVL_BUDGET): {estimate.describe()}"
        )
