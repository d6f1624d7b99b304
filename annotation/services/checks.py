"""Run and batch settings checked at the boundary, in one place for the CLI, API and admin:
each bad value is an InputError naming its field, raised before anything is written."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from django.db.models import Field, Model

from annotation.money import symbol
from annotation.providers.base import ASSIGNMENT_DURATION_RANGE, AUTO_APPROVAL_RANGE, LIFETIME_RANGE
from pipeline.errors import InputError
from pipeline.jsonio import check_text
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
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be a finite number, got {value!r}", field=key)
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes every bound
        raise InputError(f"must be a finite number, got {value!r}", field=key)
    if not low <= value <= high:
        raise InputError(f"must be from {low} to {high}, got {value}", field=key)
    return float(value)


def check_run_stage(*, kind: str, stage: str, field: str = "stage") -> str:
    """`stage` as one of the stages of the flow a run of `kind` belongs to."""
    from annotation.flow_registry import flow_for_kind

    flow = flow_for_kind(kind)
    stages = [str(value) for value, _ in flow.stages] if flow is not None else []
    if str(stage) not in stages:
        raise InputError(
            f"{str(stage)!r} is not a stage of this run's flow ({kind}): its stages are "
            + (", ".join(stages) or "none"),
            field=field,
        )
    return stage


def check_name(name: str, *, field: str = "name", limit: int = MAX_NAME) -> str:
    """A name a column can hold: text, at most `limit` characters, no NUL or lone surrogate."""
    if not isinstance(name, str) or len(name) > limit:
        raise InputError(f"must be text of at most {limit} characters", field=field)
    return check_text(name, file="", record=None, field=field)


def check_stored_json(value: Any, *, field: str, depth: int = 0) -> None:
    """JSON settings a database can store: every string (key or value) without NUL or lone
    surrogates, nested at most 50 deep."""
    if depth > 50:
        raise InputError("is nested more than 50 levels deep", field=field)
    if isinstance(value, str):
        check_text(value, file="", record=None, field=field)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), file="", record=None, field=field)
            check_stored_json(item, field=f"{field}.{key}", depth=depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            check_stored_json(item, field=field, depth=depth + 1)


def check_reward(value: object, *, field: str = "reward") -> Decimal:
    amount = dollars(value, field=field)
    if amount > MAX_REWARD:
        raise InputError(
            f"{amount} is more than the largest amount, {symbol()}{MAX_REWARD}", field=field
        )
    return amount


def check_batch_counts(*, items_per_hit: object, assignments_per_hit: object) -> None:
    """Raw input (a form's or a request's value): whole numbers within range, or InputError."""
    for key, value in (
        ("items_per_hit", items_per_hit),
        ("assignments_per_hit", assignments_per_hit),
    ):
        check_int({key: value}, key, low=1, high=MAX_PER_HIT)


FIRST_CLAIM_MIN = 60


def check_batch_times(
    *,
    lifetime_seconds: object,
    assignment_duration_seconds: object,
    auto_approval_delay_seconds: object,
    options: dict[str, Any],
) -> None:
    """Each time setting of a batch within MTurk's ranges (for every provider, so a batch's
    settings mean the same everywhere); the first-claim hold (option
    `first_claim_seconds`) from a minute up to the assignment duration. The values are raw
    input; InputError names the first one out of range."""
    low, high = LIFETIME_RANGE
    check_int({"lifetime_seconds": lifetime_seconds}, "lifetime_seconds", low=low, high=high)
    low, high = ASSIGNMENT_DURATION_RANGE
    duration = check_int(
        {"assignment_duration_seconds": assignment_duration_seconds},
        "assignment_duration_seconds",
        low=low,
        high=high,
    )
    if auto_approval_delay_seconds is not None:
        low, high = AUTO_APPROVAL_RANGE
        key = "auto_approval_delay_seconds"
        check_int({key: auto_approval_delay_seconds}, key, low=low, high=high)
    policy = options.get("auto_approved_reviews", "exclude")
    if policy not in ("exclude", "count"):
        raise InputError(
            f'must be "exclude" or "count", got {policy!r}', field="options.auto_approved_reviews"
        )
    if not isinstance(options.get("allow_low_pay", False), bool):
        raise InputError("must be true or false", field="options.allow_low_pay")
    if not isinstance(options.get("skip_pilot", False), bool):
        raise InputError("must be true or false", field="options.skip_pilot")
    if "first_claim_seconds" in options:
        check_int(
            {"options.first_claim_seconds": options["first_claim_seconds"]},
            "options.first_claim_seconds",
            low=FIRST_CLAIM_MIN,
            high=duration,
        )


CONSENT_LENGTH = (20, 20_000)


def check_consent(text: object) -> None:
    """A run's own information and consent text (its setting `consent`)."""
    low, high = CONSENT_LENGTH
    if not isinstance(text, str) or not low <= len(text.strip()) <= high or "\x00" in text:
        raise InputError(
            f"must be the information and consent text, {low} to {high} characters",
            field="consent",
        )


def max_length(model: type[Model], name: str) -> int | None:
    """The most characters the column `name` of `model` holds (None: no limit, or not text)."""
    field = model._meta.get_field(name)
    return field.max_length if isinstance(field, Field) else None
