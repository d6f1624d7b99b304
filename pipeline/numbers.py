"""A setting's number read from JSON or text: a bool, None, NaN, an infinity or a fraction
where a whole number belongs is refused with the setting named, never a traceback
(int(inf) raises OverflowError, and NaN compares false with every bound)."""

from __future__ import annotations

import math

from pipeline.errors import InputError


def setting_number(value: object, *, key: str, field: str, whole: bool) -> int | float:
    """`value` as an int (`whole`) or a finite float. Text holding a number is read too (a
    form's field or a hand-written JSON file sends "4")."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"{key} must be a number, got {value!r}", field=field)
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise InputError(f"{key} must be a number, got {value!r}", field=field) from None
    if isinstance(number, float) and not math.isfinite(number):
        raise InputError(f"{key} must be a finite number, got {value!r}", field=field)
    if not whole:
        try:
            return float(number)
        except OverflowError:  # an int beyond any float
            raise InputError(f"{key} is too large, got {value!r}", field=field) from None
    if isinstance(number, float) and not number.is_integer():
        raise InputError(f"{key} must be a whole number, got {value!r}", field=field)
    return int(number)
