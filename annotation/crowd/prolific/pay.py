"""The pay Prolific computes. Before publishing: the study declares whole minutes
(`estimated_completion_time`, the expected time rounded up) and a reward in pence or cents, and
Prolific's hourly rate is the reward over those declared minutes, so that is the rate checked
against the higher of the installation's minimum and Prolific's (£6 / $8 per hour). Once
submissions come in Prolific judges the rate on the study's MEDIAN completion time (its help
centre); under the minimum it asks for an adjustment payment to the participants. Prolific's API
has no adjustment call (docs/reference/prolific-api-notes.md): the adjustment is paid here as
one bonus per counted participant (`BonusKind.PAY_ADJUSTMENT`), topped up to what the current
median asks, so paying again after the median moved pays only the difference, and paying again
with the same median pays nothing."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_DOWN, Decimal

from django.db.models import Sum

from annotation.crowd.prolific.client import APPROVED, AWAITING_REVIEW, ProlificClient
from annotation.crowd.prolific.fees import PROLIFIC_MINIMUM_HOURLY, currency, minimum_hourly
from annotation.models import Assignment, AssignmentState, Batch, Bonus, BonusKind
from annotation.selectors.money.pay import pay_estimate

CENT = Decimal("0.01")
# Prolific's recommended hourly rate (its help centre), shown where the API gives none.
PROLIFIC_RECOMMENDED_HOURLY = {"GBP": Decimal("9.00"), "USD": Decimal("12.00")}
# Submissions whose time Prolific counts: completed ones.
TIMED = (AWAITING_REVIEW, APPROVED)


def batch_minimum_hourly(batch: Batch) -> Decimal:
    """The rate a batch must meet: Prolific's, and the installation's unless the batch was
    created with `allow_low_pay`."""
    if batch.options.get("allow_low_pay") is True:
        return PROLIFIC_MINIMUM_HOURLY[currency()]
    return minimum_hourly()


@dataclass(frozen=True)
class DeclaredPay:
    """What the study tells Prolific, and the hourly rate Prolific derives from it."""

    expected_seconds: float
    minutes: int
    reward: Decimal
    hourly: Decimal
    minimum: Decimal

    @property
    def reward_needed(self) -> Decimal:
        """The smallest reward meeting the minimum at the declared minutes."""
        return (self.minimum * self.minutes / 60).quantize(CENT, ROUND_CEILING)

    def describe(self) -> str:
        return (
            f"declared {self.minutes} min (expected {self.expected_seconds / 60:.1f}, rounded up "
            f"to whole minutes as Prolific takes it) at {currency()} {self.reward} = "
            f"{currency()} {self.hourly}/h"
        )


def declared_minutes(seconds: float) -> int:
    """`estimated_completion_time`: whole minutes, at least one, never under the expected time."""
    return max(1, math.ceil(seconds / 60))


def declared_pay(batch: Batch) -> DeclaredPay:
    expected = pay_estimate(batch=batch).seconds_per_hit
    minutes = declared_minutes(expected)
    hourly = (batch.reward * 60 / minutes).quantize(CENT, ROUND_DOWN)
    return DeclaredPay(
        expected_seconds=expected,
        minutes=minutes,
        reward=batch.reward,
        hourly=hourly,
        minimum=batch_minimum_hourly(batch),
    )


def _parsed(value: object) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def completion_seconds(*, batch: Batch, client: ProlificClient) -> list[float]:
    """Each completed submission's time at Prolific (started to completed), every page."""
    times = []
    for item in client.pages("submissions/", params={"study": batch.provider_hit_type_id}):
        if str(item.get("status", "")).replace("_", " ").upper() not in TIMED:
            continue
        started, completed = _parsed(item.get("started_at")), _parsed(item.get("completed_at"))
        if started and completed and completed > started:
            times.append((completed - started).total_seconds())
    return times


@dataclass
class MedianPay:
    """The study's pay at its median completion time, and the adjustment it asks for."""

    batch: Batch
    submissions: int
    median_seconds: float | None
    reward: Decimal
    minimum: Decimal
    hourly: Decimal | None = None
    owed_each: Decimal = Decimal("0.00")  # what each participant's pay must reach, on top
    to_pay: list[tuple[Assignment, Decimal]] = field(default_factory=list)

    @property
    def underpaid(self) -> bool:
        return self.hourly is not None and self.hourly < self.minimum

    @property
    def total(self) -> Decimal:
        return sum((amount for _a, amount in self.to_pay), Decimal("0.00"))

    def describe(self) -> str:
        if self.median_seconds is None:
            return "no completed submission yet: Prolific judges the pay on their median time"
        head = (
            f"median {self.median_seconds / 60:.1f} min over {self.submissions} completed "
            f"submission(s): {currency()} {self.reward} = {currency()} {self.hourly}/h "
            f"(minimum {currency()} {self.minimum}/h)"
        )
        if not self.underpaid:
            return head + ": no adjustment needed"
        return (
            f"{head}: an adjustment of {currency()} {self.owed_each} per participant; "
            f"{len(self.to_pay)} participant(s) still owed {currency()} {self.total}"
        )


def _adjusted(assignment: Assignment) -> Decimal:
    paid = Bonus.objects.filter(
        assignment=assignment, kind=BonusKind.PAY_ADJUSTMENT, attempted_at__isnull=False
    ).aggregate(total=Sum("amount"))["total"]
    return paid or Decimal("0.00")


def median_pay(*, batch: Batch, client: ProlificClient) -> MedianPay:
    """The pay at the median of the completed submissions Prolific lists, and what each
    counted participant is still owed to reach the minimum at that median."""
    times = completion_seconds(batch=batch, client=client)
    review = MedianPay(
        batch=batch,
        submissions=len(times),
        median_seconds=statistics.median(times) if times else None,
        reward=batch.reward,
        minimum=batch_minimum_hourly(batch),
    )
    if review.median_seconds is None:
        return review
    hours = Decimal(str(review.median_seconds)) / 3600
    review.hourly = (batch.reward / hours).quantize(CENT, ROUND_DOWN)
    if not review.underpaid:
        return review
    review.owed_each = (review.minimum * hours - batch.reward).quantize(CENT, ROUND_CEILING)
    counted = Assignment.objects.filter(
        hit__batch=batch,
        confirmed=True,
        state__in=(AssignmentState.SUBMITTED, AssignmentState.APPROVED),
    ).order_by("pk")
    for assignment in counted:
        owed = review.owed_each - _adjusted(assignment)
        if owed > 0:
            review.to_pay.append((assignment, owed))
    return review
