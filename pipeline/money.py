"""Amounts of money as crowd platforms take them: positive dollars and cents."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from pipeline.errors import InputError

CENT = Decimal("0.01")


def dollars(value: object, *, field: str) -> Decimal:
    """`value` as a canonical Decimal amount with two places ("0.5" -> 0.50); InputError
    naming `field` unless positive whole cents (any other value, None included, is refused)."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise InputError(f"{value!r} is not an amount", field=field) from None
    bad = InputError(f"{value} is not a positive amount in dollars and cents", field=field)
    if not amount.is_finite() or amount <= 0 or amount.adjusted() > 15:
        raise bad  # (a huge exponent cannot even be rounded to cents)
    if amount != amount.quantize(CENT):
        raise bad
    return amount.quantize(CENT)
