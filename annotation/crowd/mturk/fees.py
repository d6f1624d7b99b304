"""MTurk's fees: 20% of a reward (40% for HITs with 10 or more assignments) and of a bonus,
at least $0.01 per payment (MTurk's pricing page)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from annotation.providers.base import CostEstimate


def mturk_fee_rate(assignments_per_hit: int) -> Decimal:
    """MTurk's commission: 20% of the reward, 40% for HITs with 10 or more assignments."""
    return Decimal("0.40") if assignments_per_hit >= 10 else Decimal("0.20")


BONUS_FEE_RATE = Decimal("0.20")


def mturk_fee(amount: Decimal, rate: Decimal) -> Decimal:
    """MTurk's fee on one payment: `rate` of it, rounded to the cent, at least $0.01."""
    cent = Decimal("0.01")
    return max(cent, (amount * rate).quantize(cent, ROUND_HALF_UP))


def estimate_cost(*, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
    cent = Decimal("0.01")
    fee = mturk_fee(reward, mturk_fee_rate(assignments_per_hit))
    n = hits * assignments_per_hit
    return CostEstimate(
        hits=hits,
        assignments_per_hit=assignments_per_hit,
        reward=reward,
        fee_per_assignment=fee,
        rewards=(reward * n).quantize(cent),
        fees=(fee * n).quantize(cent),
        fee_note=(
            f"MTurk fees ({mturk_fee_rate(assignments_per_hit) * 100:.0f}%, min $0.01 each, "
            f"{n} assignments)"
        ),
    )


def slot_cost(*, reward: Decimal, assignments_per_hit: int) -> Decimal:
    """One assignment's reward and MTurk's fee on it."""
    return reward + mturk_fee(reward, mturk_fee_rate(assignments_per_hit))
