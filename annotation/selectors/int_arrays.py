"""Integer columns of a query as numpy arrays, for exports that read millions of rows.

On PostgreSQL the database packs the rows into a few binary values that numpy reads as they
are: no Python object per row (faster than a binary COPY, which Python reads a row at a time).
Other databases (the embedded SQLite) iterate the rows. Every column must be an integer
expression that is never NULL (wrap nullable ones in `Coalesce(…, -1)`). Rows come in no
particular order: sort the arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import (
    BigIntegerField,
    Expression,
    F,
    IntegerField,
    QuerySet,
    SmallIntegerField,
)
from django.db.models.functions import Cast

# name -> (field path or expression, numpy integer dtype)
Columns = Mapping[str, tuple[str | Expression, Any]]

_SQL_TYPES = {
    np.dtype(np.int8): SmallIntegerField,  # read as a smallint, kept in one byte
    np.dtype(np.int16): SmallIntegerField,
    np.dtype(np.int32): IntegerField,
    np.dtype(np.int64): BigIntegerField,
}
_BUCKETS = 16  # bytea values per read: 1 GB each at most, so up to ~16 GB of records


def int_arrays(queryset: QuerySet, columns: Columns) -> dict[str, np.ndarray]:
    """`columns` maps a name to (field path or expression, numpy integer dtype); returns one
    native array per name, rows in no particular order (the same order in every array)."""
    if connection.vendor == "postgresql":
        return _copied(_annotated(queryset.order_by(), columns), _dtypes(columns))
    return _iterated(queryset, columns)


def _dtypes(
    columns: Columns,
) -> dict[str, np.dtype]:
    return {name: np.dtype(dtype) for name, (_, dtype) in columns.items()}


def _annotated(queryset: QuerySet, columns: Columns) -> QuerySet:
    dtypes = _dtypes(columns)
    return queryset.annotate(
        **{
            f"_ia_{name}": Cast(
                F(expr) if isinstance(expr, str) else expr, _SQL_TYPES[dtypes[name]]()
            )
            for name, (expr, _) in columns.items()
        }
    ).values_list(*(f"_ia_{name}" for name in columns))


def _iterated(queryset: QuerySet, columns: Columns) -> dict[str, np.ndarray]:
    """Row by row: for databases without COPY (the embedded SQLite)."""
    dtypes = _dtypes(columns)
    rows = list(_annotated(queryset, columns).iterator(chunk_size=20_000))
    return {
        name: np.fromiter((row[n] for row in rows), dtype=dtype, count=len(rows))
        for n, (name, dtype) in enumerate(dtypes.items())
    }


def _copied(queryset: QuerySet, dtypes: dict[str, np.dtype]) -> dict[str, np.ndarray]:
    """The rows packed by PostgreSQL into a few `bytea` values of fixed-width big-endian
    records (`int8send(a) || int2send(b) …`): one value per bucket of the first column, so no
    value nears PostgreSQL's 1 GB limit; numpy reads each without a Python object per row."""
    send = {1: "int2send", 2: "int2send", 4: "int4send", 8: "int8send"}
    sent = {1: 2, 2: 2, 4: 4, 8: 8}  # bytes on the wire: PostgreSQL has no 1-byte integer
    record = np.dtype([(name, f">i{sent[dtype.itemsize]}") for name, dtype in dtypes.items()])
    packed = " || ".join(
        f"{send[dtype.itemsize]}({connection.ops.quote_name('_ia_' + name)})"
        for name, dtype in dtypes.items()
    )
    first = connection.ops.quote_name("_ia_" + next(iter(dtypes)))
    sql, params = queryset.query.sql_with_params()
    parts: dict[str, list[np.ndarray]] = {name: [] for name in dtypes}
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        raw.execute(
            f"SELECT string_agg({packed}, ''::bytea) FROM ({sql}) rows GROUP BY mod({first}, {_BUCKETS})",
            params,
            binary=True,
        )
        for (data,) in raw:
            rows = np.frombuffer(data, dtype=record)
            for name, dtype in dtypes.items():
                parts[name].append(rows[name].astype(dtype))
    return {
        name: np.concatenate(parts[name]) if parts[name] else np.zeros(0, dtype=dtype)
        for name, dtype in dtypes.items()
    }
