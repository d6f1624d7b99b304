"""Adaptive redundancy: ask for another judgment only where it pays.

Each item's answers are read as binary votes (ECCV: YES or Partially YES against the rest),
each weighted by its worker's reliability: the probability that worker's vote is right,
estimated from gold items. The posterior that the item is positive combines the votes with the
prior share of positives. An item gets another judgment while it has fewer than `start`,
or while neither side's posterior reaches its confidence (`confidence` for a positive
reading, `confidence_negative` for a negative one) and it has fewer than `cap`. So
disagreeing first answers, answers from unreliable workers and uncertain posteriors all ask
for more; two agreeing reliable workers settle an item. A lower `confidence_negative` spends
less on items that look negative, at the cost of recall (precision is what a positive
dataset promises; the benchmark reports both).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError
from pipeline.numbers import setting_number

Vote = tuple[bool, float]  # (says positive, the worker's reliability)


@dataclass(frozen=True)
class RedundancyPolicy:
    start: int = 1
    cap: int = 3
    confidence: float = 0.99
    confidence_negative: float | None = None  # None: the same as `confidence`
    prior: float = 0.75  # share of positives among candidates (ECCV Table B.2, rank 1-5 mean)

    def __post_init__(self) -> None:
        if not 1 <= self.start <= self.cap <= 25:
            raise InputError("need 1 <= start <= cap <= 25", field="cap")
        for name in ("confidence", "confidence_negative"):
            value = getattr(self, name)
            if value is not None and not 0.5 < value < 1.0:
                raise InputError(f"{name} must be within (0.5, 1)", field=name)
        if not 0.0 < self.prior < 1.0:
            raise InputError("prior must be within (0, 1)", field="prior")

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> RedundancyPolicy:
        floats = {"confidence", "confidence_negative", "prior"}
        unknown = set(options) - floats - {"start", "cap"}
        if unknown:
            raise InputError(f"unknown redundancy setting {sorted(unknown)[0]!r}", field="adaptive")
        values = {
            k: setting_number(
                v, key=f"bad redundancy setting: {k}", field="adaptive", whole=k not in floats
            )
            for k, v in options.items()
        }
        try:
            return cls(**values)  # type: ignore[arg-type]
        except InputError as exc:  # named as the run's setting: adaptive.cap
            raise InputError(exc.message, field=f"adaptive.{exc.field}") from None


# Before any gold answer a worker is taken to be right 85 % of the time, with the weight of
# four gold answers: a few gold items move the estimate, one does not decide it.
RELIABILITY_PRIOR = (3.4, 0.6)


def reliability(right: int, seen: int, prior: tuple[float, float] = RELIABILITY_PRIOR) -> float:
    """A worker's estimated P(right) from `right` of `seen` gold answers (Beta posterior
    mean)."""
    return (right + prior[0]) / (seen + prior[0] + prior[1])


def binary_reliability(accuracy: float, levels: int = 4, positive_levels: int = 2) -> float:
    """P(a worker's binary vote is right) from its accuracy on a `levels`-point scale with
    errors spread evenly over the other points (some of which fall on the right side)."""
    same_side = (positive_levels - 1) / (levels - 1)
    return accuracy + (1 - accuracy) * same_side


def posterior_positive(votes: Sequence[Vote], prior: float) -> float:
    """P(positive | votes) with independent votes of the given reliabilities (clipped so one
    vote can never be certain)."""
    log_odds = math.log(prior / (1 - prior))
    for says_positive, reliability in votes:
        r = min(max(reliability, 0.5), 0.999)
        weight = math.log(r / (1 - r))
        log_odds += weight if says_positive else -weight
    return 1 / (1 + math.exp(-log_odds))


def needs_more(votes: Sequence[Vote], policy: RedundancyPolicy) -> bool:
    if len(votes) < policy.start:
        return True
    if len(votes) >= policy.cap:
        return False
    p = posterior_positive(votes, policy.prior)
    negative = (
        policy.confidence if policy.confidence_negative is None else policy.confidence_negative
    )
    return p < policy.confidence and 1 - p < negative


def decide(votes: Sequence[Vote], policy: RedundancyPolicy) -> bool:
    """The item's reading: positive when the posterior is at least one half."""
    return posterior_positive(votes, policy.prior) >= 0.5
