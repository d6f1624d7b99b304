"""Strict JSON decoding and field checks shared by the file-format parsers."""

from __future__ import annotations

import json
from typing import Any

from pipeline.errors import InputError


def decode_json(raw: bytes | str, *, file: str) -> Any:
    """Parse ``raw`` as UTF-8 JSON; errors name the file, line and column."""
    if isinstance(raw, bytes):
        try:
            # utf-8-sig so a byte-order mark written by some editors is not an error.
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (bad byte at offset {exc.start})", file=file
            ) from None
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=file
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", file=file) from None


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python accepts them unless told otherwise.
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def require_int(
    obj: dict[str, Any], key: str, *, file: str, record: str | int, field: str | None = None
) -> int:
    """``obj[key]`` as an int (bools rejected), or raise naming the field."""
    name = field or key
    if key not in obj:
        raise InputError("missing", file=file, record=record, field=name)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(
            f"must be an integer, got {describe(value)}", file=file, record=record, field=name
        )
    return value


def require_str(
    obj: dict[str, Any],
    key: str,
    *,
    file: str,
    record: str | int,
    field: str | None = None,
    blank_ok: bool = False,
) -> str:
    """``obj[key]`` as a string (non-blank unless ``blank_ok``), or raise naming the field."""
    name = field or key
    if key not in obj:
        raise InputError("missing", file=file, record=record, field=name)
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(
            f"must be a string, got {describe(value)}", file=file, record=record, field=name
        )
    if not blank_ok and not value.strip():
        raise InputError(
            "must not be empty or whitespace only", file=file, record=record, field=name
        )
    return value


def require_object(value: Any, *, file: str, record: str | int | None, field: str | None) -> dict:
    """``value`` if it is a JSON object, else raise naming where it was found."""
    if not isinstance(value, dict):
        raise InputError(
            f"must be an object, got {describe(value)}", file=file, record=record, field=field
        )
    return value


def describe(value: Any) -> str:
    """Short human description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
