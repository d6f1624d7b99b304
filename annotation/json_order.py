"""Values read from JSON columns, in one key order on every database.

PostgreSQL's jsonb hands keys back in its own order (shorter keys first), SQLite in the
order they were written: a manifest or datasheet that shows a stored dict as read would differ
between the two for the same run (issue 48). Exports show such dicts through `keys_sorted`.
"""

from __future__ import annotations

from typing import Any


def keys_sorted(value: Any) -> Any:
    """`value` with every dict's keys in sorted order, at any depth (lists keep their order)."""
    if isinstance(value, dict):
        return {key: keys_sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [keys_sorted(v) for v in value]
    return value
