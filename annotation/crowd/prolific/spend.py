"""Prolific money before it is committed: the batch's cost with Prolific's fees, the
commitments of the last 24 hours (the installation's daily cap), and every check publishing
passes: the workspace's currency is the installation's (never converted), the hourly reward at
the expected time is over the project's minimum and Prolific's, the daily cap, the budget and
the workspace's available balance."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from annotation.crowd import CostEstimate
from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.fees import (
    PROLIFIC_MINIMUM_HOURLY,
    currency,
    estimate_cost,
    minimum_hourly,
)
from annotation.errors import ServiceError
from annotation.models import Assignment, Batch
from annotation.selectors.counting import counted
from annotation.selectors.pay import pay_estimate
from annotation.services.spend import budget_check, daily_cap_check
from pipeline.errors import InputError

PROVIDER = "prolific"


def prolific_cost_estimate(*, batch: Batch, unpublished_only: bool = False) -> CostEstimate:
    hits = batch.hits.all()
    if unpublished_only:
        hits = hits.filter(provider_hit_id="")
    return estimate_cost(
        hits=hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )


def workspace_balance(client: ProlificClient) -> tuple[str, Decimal]:
    """The workspace's currency and available balance (major units)."""
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE
    if not workspace:
        raise InputError(
            "CROWDVL_PROLIFIC_WORKSPACE is not set: the id of the Prolific workspace studies "
            "are paid from",
            field="CROWDVL_PROLIFIC_WORKSPACE",
        )
    body = client.call("GET", f"workspaces/{workspace}/balance/")
    return str(body.get("currency_code", "")).upper(), Decimal(
        int(body.get("available_balance", 0))
    ) / 100


def currency_check(client: ProlificClient) -> Decimal:
    """Refuse a workspace whose currency is not the installation's; its available balance."""
    ours = currency()
    theirs, available = workspace_balance(client)
    if theirs != ours:
        raise ServiceError(
            f"the Prolific workspace holds {theirs or 'an unknown currency'} but this "
            f"installation's amounts are in {ours} (CROWDVL_CURRENCY): set CROWDVL_CURRENCY to "
            f"the workspace's currency and the rewards in it; nothing is converted"
        )
    return available


PILOT_PLACES = 10  # a study this small is a pilot
PILOT_SUBMISSIONS = 5  # what a pilot must bring back before a full study (its median time)


def pilot_check(batch: Batch) -> None:
    """A full study of a stage only after a pilot: an earlier Prolific batch of the same run and
    stage with at least PILOT_SUBMISSIONS counted submissions, whose median time then sets the
    expected hourly pay (`pay_estimate`); unless the batch is a pilot itself (at most
    PILOT_PLACES places) or was created with `skip_pilot`."""
    if batch.options.get("skip_pilot") is True:
        return
    if sum(h.capacity for h in batch.hits.all()) <= PILOT_PLACES:
        return
    piloted = (
        Assignment.objects.filter(
            counted(),
            hit__batch__run=batch.run,
            hit__batch__stage=batch.stage,
            hit__batch__provider=PROVIDER,
        )
        .exclude(hit__batch=batch)
        .count()
    )
    if piloted < PILOT_SUBMISSIONS:
        raise ServiceError(
            f"batch {batch.pk} would be a full Prolific study before a pilot: publish a batch "
            f"of this stage with at most {PILOT_PLACES} places first (e.g. --limit), let "
            f"{PILOT_SUBMISSIONS} participants finish it (its median time sets the expected "
            "hourly pay), or create the batch with --skip-pilot"
        )


def prolific_cost_check(*, batch: Batch, client: ProlificClient) -> CostEstimate:
    """Refuse what Prolific or this project's limits would refuse (see the module)."""
    pilot_check(batch)
    available = currency_check(client)
    estimate = prolific_cost_estimate(batch=batch, unpublished_only=True)
    pay = pay_estimate(batch=batch)
    floor = PROLIFIC_MINIMUM_HOURLY[currency()]
    if pay.hourly < floor:  # what Prolific enforces: no option goes under it
        raise ServiceError(
            f"batch {batch.pk} pays {currency()} {pay.hourly}/h at the expected time, under "
            f"Prolific's enforced minimum of {currency()} {floor}/h: {pay.describe()}; raise "
            "the reward"
        )
    minimum = minimum_hourly()
    if pay.hourly < minimum and batch.options.get("allow_low_pay") is not True:
        raise ServiceError(
            f"batch {batch.pk} pays {currency()} {pay.hourly}/h at the expected time, under the "
            f"project's minimum of {currency()} {minimum}/h (CROWDVL_MIN_HOURLY_PAY): "
            f"{pay.describe()}; raise the reward, or create the batch with --allow-low-pay"
        )
    daily_cap_check(amount=estimate.total, what=f"publishing batch {batch.pk}")
    budget_check(batch=batch, estimate=estimate)
    if estimate.total > available:
        raise ServiceError(
            f"batch {batch.pk} would cost {currency()} {estimate.total} but the Prolific "
            f"workspace has {currency()} {available} available: {estimate.describe()}"
        )
    return estimate
