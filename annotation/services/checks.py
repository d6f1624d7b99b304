"""Run and batch settings checked at the boundary, in one place for the CLI, API and admin:
each bad value is an InputError naming its field, raised before anything is written."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pipeline.errors import InputError
from pipeline.money import dollars

# Batch.reward is DecimalField(max_digits=8, decimal_places=2); MTurk takes it as a string.
MAX_REWARD = Decimal("999999.99")
MAX_PER_HIT = 1000
MAX_NAME = 200
SEED_RANGE = (-(2**63), 2**63 - 1)


def check_int(config: dict[str, Any], key: str, *, low: int, high: int) -> int:
    """`config[key]` as an int within [low, high] (bools and strings refused)."""
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number, got {value!r}", field=key)
    if not low <= value <= high:
        raise InputError(f"must be from {low} to {high}, got {value}", field=key)
    return value


def check_number(config: dict[str, Any], key: str, *, low: float, high: float) -> float:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(f"must be a number, got {value!r}", field=key)
    if not low <= value <= high:
        raise InputError(f"must be from {low} to {high}, got {value}", field=key)
    return float(value)


def check_name(name: str) -> str:
    if not isinstance(name, str) or len(name) > MAX_NAME or "\x00" in name:
        raise InputError(f"must be text of at most {MAX_NAME} characters", field="name")
    return name


def check_reward(value: Decimal | str | float, *, field: str = "reward") -> Decimal:
    amount = dollars(value, field=field)
    if amount > MAX_REWARD:
        raise InputError(f"{amount} is more than the largest amount, ${MAX_REWARD}", field=field)
    return amount


def check_batch_counts(*, items_per_hit: int, assignments_per_hit: int) -> None:
    for key, value in (
        ("items_per_hit", items_per_hit),
        ("assignments_per_hit", assignments_per_hit),
    ):
        check_int({key: value}, key, low=1, high=MAX_PER_HIT)
