"""Model instances from the columns of a plain SQL row, as the ORM would have read them: the
prepared statements of the claim (`claim_sql.py`) and the submit (`submit_sql.py`) select whole
rows and hand back model instances."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def columns(model: type[Model], alias: str) -> str:
    """Every concrete column of `model`, prefixed with the table alias, in field order."""
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


def instance(model: type[M], values: Sequence[Any]) -> M:
    """A model instance from its columns as `columns` selected them, read as the ORM reads
    them (JSON fields decoded)."""
    fields = model._meta.concrete_fields
    values = [
        f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
        for f, v in zip(fields, values, strict=True)
    ]
    return model.from_db("default", [f.attname for f in fields], values)
