"""Prolific money before it is committed: the batch's cost with Prolific's fees, the
commitments of the last 24 hours (the installation's daily cap), and every check publishing
passes, all reported at once: a pilot first, the workspace's currency is the installation's
(never converted), the hourly rate Prolific computes from the declared time (`pay.py`) is over
the project's minimum and Prolific's (its API's rates where given), the daily cap, the budget
and the workspace's available balance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from django.conf import settings
from django.core.cache import cache

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.fees import CENT, PROLIFIC_MINIMUM_HOURLY, currency, estimate_cost
from annotation.crowd.prolific.pay import PROLIFIC_RECOMMENDED_HOURLY, declared_pay
from annotation.errors import Reason, Refused, ServiceError, page_message
from annotation.models import Assignment, Batch
from annotation.providers import CostEstimate
from annotation.selectors.counting import counted
from annotation.services.money.spend import LOW_PAY_PAGE, budget_check, daily_cap_check
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
    body = client.call("GET", f"workspaces/{workspace_id()}/balance/")
    return str(body.get("currency_code", "")).upper(), Decimal(
        int(body.get("available_balance", 0))
    ) / 100


def workspace_id() -> str:
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE
    if not workspace:
        raise InputError(
            "CROWDVL_PROLIFIC_WORKSPACE is not set: the id of the Prolific workspace studies "
            "are paid from (24 characters, in the workspace's address at app.prolific.com)",
            field="CROWDVL_PROLIFIC_WORKSPACE",
        )
    return str(workspace)


def currency_refusal(theirs: str) -> str | None:
    ours = currency()
    if theirs == ours:
        return None
    return (
        f"the Prolific workspace holds {theirs or 'an unknown currency'} but this "
        f"installation's amounts are in {ours} (CROWDVL_CURRENCY): set CROWDVL_CURRENCY to "
        f"the workspace's currency and the rewards in it; nothing is converted"
    )


ADVICE_SECONDS = 3600


@dataclass(frozen=True)
class RewardAdvice:
    """Prolific's hourly rates for the workspace (`GET reward-recommendations/`), per hour."""

    minimum: Decimal
    recommended: Decimal
    source: str  # "Prolific's API" or "Prolific's help centre"


def reward_advice(client: ProlificClient | None) -> RewardAdvice:
    """Prolific's own minimum and recommended hourly rates where its API gives them, else
    the published ones (£6 / $8 minimum, £9 / $12 recommended). The batch page asks on every
    view (its refusals and its pay row): an answer is kept an hour, as rates change rarely."""
    published = RewardAdvice(
        minimum=PROLIFIC_MINIMUM_HOURLY[currency()],
        recommended=PROLIFIC_RECOMMENDED_HOURLY[currency()],
        source="Prolific's help centre",
    )
    if client is None:
        return published
    try:
        key = f"prolific-reward-advice:{client.base_url}:{workspace_id()}:{currency()}"
        kept = cache.get(key)
        if isinstance(kept, RewardAdvice):
            return kept
        rows = client.call(
            "GET",
            "reward-recommendations/",
            params={"workspace_id": workspace_id(), "currency": currency()},
        )
        first = rows[0]
        advice = RewardAdvice(
            minimum=(Decimal(int(first["min_reward_per_hour"])) / 100).quantize(CENT),
            recommended=(Decimal(int(first["recommended_reward_per_hour"])) / 100).quantize(CENT),
            source="Prolific's API",
        )
    except (ServiceError, InputError, LookupError, TypeError, ValueError):
        return published  # no answer, or not the reference's shape
    cache.set(key, advice, ADVICE_SECONDS)
    return advice


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
        pilot = (
            f"batch {batch.pk} would be a full Prolific study before a pilot: publish a batch "
            f"of this stage with at most {PILOT_PLACES} places first"
        )
        finish = (
            f"let {PILOT_SUBMISSIONS} participants finish it (its median time sets the expected "
            "hourly pay), or create the batch"
        )
        raise ServiceError(
            f"{pilot} (e.g. --limit), {finish} with --skip-pilot",
            page=f'{pilot} ("At most this many items" on the new-batch form), {finish} through '
            "the API or the command line, which may skip the pilot",
        )


def prolific_refusals(
    *, batch: Batch, client: ProlificClient | None
) -> tuple[list[str], CostEstimate]:
    """Everything Prolific or this project's limits would refuse, each with what to do (all of
    them, not the first), and the cost publishing would commit. `client` None: no token."""
    reasons: list[str] = []

    def check(step: Callable[[], None]) -> None:
        try:
            step()
        except (ServiceError, InputError) as exc:
            reasons.append(Reason(str(exc), page=page_message(exc)))

    check(lambda: pilot_check(batch))
    estimate = prolific_cost_estimate(batch=batch, unpublished_only=True)
    available: list[Decimal] = []

    def workspace() -> None:
        if client is None:
            return
        theirs, money = workspace_balance(client)
        available.append(money)
        reason = currency_refusal(theirs)
        if reason:
            raise ServiceError(reason)

    check(workspace)
    declared = declared_pay(batch)
    advice = reward_advice(client)
    floor = max(advice.minimum, PROLIFIC_MINIMUM_HOURLY[currency()])
    if declared.hourly < floor:  # what Prolific enforces: no option goes under it
        needed = (floor * declared.minutes / 60).quantize(CENT, ROUND_CEILING)
        reasons.append(
            f"batch {batch.pk} pays {currency()} {declared.hourly}/h as Prolific computes it "
            f"({declared.describe()}), under Prolific's enforced minimum of {currency()} "
            f"{floor}/h: raise the reward to at least {currency()} {needed}"
        )
    elif declared.hourly < declared.minimum:
        under = (
            f"batch {batch.pk} pays {currency()} {declared.hourly}/h as Prolific computes it "
            f"({declared.describe()}), under the project's minimum of {currency()} "
            f"{declared.minimum}/h (CROWDVL_MIN_HOURLY_PAY)"
        )
        to_pay = f"{currency()} {declared.reward_needed}"
        reasons.append(
            Reason(
                f"{under}: raise the reward to at least {to_pay}, or create the batch with "
                "--allow-low-pay",
                page=f"{under}: {LOW_PAY_PAGE} (the reward needed: at least {to_pay})",
            )
        )
    check(lambda: daily_cap_check(amount=estimate.total, what=f"publishing batch {batch.pk}"))
    check(lambda: budget_check(batch=batch, estimate=estimate))
    if available and estimate.total > available[0]:
        reasons.append(
            f"batch {batch.pk} would cost {currency()} {estimate.total} but the Prolific "
            f"workspace has {currency()} {available[0]} available: top it up at "
            f"app.prolific.com ({estimate.describe()})"
        )
    return reasons, estimate


def prolific_cost_check(*, batch: Batch, client: ProlificClient | None) -> CostEstimate:
    """Refuse what Prolific or this project's limits would refuse (every reason at once)."""
    reasons, estimate = prolific_refusals(batch=batch, client=client)
    if reasons:
        raise Refused(reasons)
    return estimate
