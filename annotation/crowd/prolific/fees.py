"""Prolific's money: rewards in the API's minor units, its service fee and the VAT on that fee
(configurable; Prolific's pricing page: 33.3 % academic, 42.8 % corporate), and the hourly
minimum it enforces per currency (its help centre: £6.00 / $8.00)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings

from annotation.providers.base import CostEstimate
from pipeline.errors import InputError

CENT = Decimal("0.01")
CURRENCIES = ("GBP", "USD")
# What Prolific enforces as the minimum hourly reward, per currency.
PROLIFIC_MINIMUM_HOURLY = {"GBP": Decimal("6.00"), "USD": Decimal("8.00")}
SYMBOLS = {"GBP": "£", "USD": "$"}


def currency() -> str:
    """The installation's currency (CROWDVL_CURRENCY), which Prolific's workspace must hold."""
    code = str(settings.CROWDVL_CURRENCY).upper()
    if code not in CURRENCIES:
        raise InputError(
            f"CROWDVL_CURRENCY must be one of {', '.join(CURRENCIES)} for Prolific, got {code!r}",
            field="CROWDVL_CURRENCY",
        )
    return code


def minor_units(amount: Decimal) -> int:
    """An amount as Prolific takes it: whole pence or cents."""
    value = Decimal(amount)
    if value != value.quantize(CENT):
        raise InputError(f"{amount} is not a whole number of cents or pence", field="amount")
    return int(value * 100)


def fee_rate() -> Decimal:
    """Prolific's fee with VAT on it, as a share of what participants receive."""
    fee = Decimal(str(settings.CROWDVL_PROLIFIC_FEE_RATE))
    vat = Decimal(str(settings.CROWDVL_PROLIFIC_VAT_RATE))
    return fee * (1 + vat)


def prolific_fee(amount: Decimal) -> Decimal:
    return (Decimal(amount) * fee_rate()).quantize(CENT, ROUND_HALF_UP)


def estimate_cost(*, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
    n = hits * assignments_per_hit
    fee = prolific_fee(reward)
    symbol = SYMBOLS.get(currency(), "")
    return CostEstimate(
        hits=hits,
        assignments_per_hit=assignments_per_hit,
        reward=reward,
        fee_per_assignment=fee,
        rewards=(reward * n).quantize(CENT),
        fees=(fee * n).quantize(CENT),
        fee_note=(
            f"Prolific fees ({fee_rate() * 100:.1f}% incl. VAT, {n} places; amounts in "
            f"{currency()}{' ' + symbol if symbol else ''})"
        ),
    )


def minimum_hourly() -> Decimal:
    """The hourly reward a batch may not go under: the project's CROWDVL_MIN_HOURLY_PAY (in the
    installation's currency), and never under what Prolific enforces."""
    ours = Decimal(str(settings.CROWDVL_MIN_HOURLY_PAY))
    return max(ours, PROLIFIC_MINIMUM_HOURLY[currency()])
