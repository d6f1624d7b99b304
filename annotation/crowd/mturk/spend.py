"""MTurk money before it is committed: what a batch would cost, what MTurk commitments the last
24 hours hold (for the installation's daily cap), and every check publishing passes (pay, cap,
budget, balance, the closure of production)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from annotation.crowd.mturk.fees import estimate_cost
from annotation.crowd.mturk.provider import MTurkProvider
from annotation.errors import ServiceError
from annotation.models import Batch, BlockQualification
from annotation.providers import CostEstimate, provider_for
from annotation.selectors.money.pay import pay_estimate
from annotation.services.money.spend import LOW_PAY_PAGE, budget_check, daily_cap_check

PROVIDER = "mturk"


def mturk_provider() -> MTurkProvider:
    provider = provider_for(PROVIDER)
    assert isinstance(provider, MTurkProvider)
    return provider


def mturk_block_qualification(*, environment: str, create: bool) -> str | None:
    """The project-block qualification of `environment` (created on first use when `create`)."""
    found = BlockQualification.objects.filter(provider=PROVIDER, environment=environment).first()
    if found is not None or not create:
        return found.qualification_id if found else None
    qualification_id = mturk_provider().create_block_qualification(environment=environment)
    found, _ = BlockQualification.objects.get_or_create(
        provider=PROVIDER, environment=environment, defaults={"qualification_id": qualification_id}
    )
    return found.qualification_id


def mturk_cost_estimate(*, batch: Batch, unpublished_only: bool = False) -> CostEstimate:
    hits = batch.hits.all()
    if unpublished_only:
        hits = hits.filter(provider_hit_id="")
    return estimate_cost(
        hits=hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
    )


def mturk_daily_cap_check(*, amount: Decimal, what: str, now: datetime | None = None) -> None:
    """`daily_cap_check` (every paid provider's commitments count)."""
    daily_cap_check(amount=amount, what=what, now=now)


def mturk_cost_check(
    *, batch: Batch, provider: MTurkProvider, unpublished_only: bool
) -> CostEstimate:
    """Refuse a batch that would pay below the minimum hourly rate, or exceed the daily cap,
    the budget or the account balance."""
    estimate = mturk_cost_estimate(batch=batch, unpublished_only=unpublished_only)
    pay = pay_estimate(batch=batch)
    if pay.below_minimum and batch.options.get("allow_low_pay") is not True:
        raise ServiceError(
            f"batch {batch.pk} pays below the minimum hourly rate (CROWDVL_MIN_HOURLY_PAY): "
            f"{pay.describe()}; raise the reward, or create the batch with --allow-low-pay",
            page=f"batch {batch.pk} pays below the minimum hourly rate (CROWDVL_MIN_HOURLY_PAY): "
            f"{pay.describe()}; {LOW_PAY_PAGE}",
        )
    mturk_daily_cap_check(amount=estimate.total, what=f"publishing batch {batch.pk}")
    budget_check(batch=batch, estimate=estimate)
    balance = provider.account_balance()
    if estimate.total > balance:
        raise ServiceError(
            f"batch {batch.pk} would cost ${estimate.total} but the MTurk account holds "
            f"${balance}: {estimate.describe()}"
        )
    return estimate
