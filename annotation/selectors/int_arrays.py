"""Integer columns of a query as numpy arrays, for exports that read millions of rows.

On PostgreSQL the rows come by a binary COPY that numpy reads a few megabytes at a time (psycopg
hands over each row's bytes, as for any COPY; no Python object per value), and the database
does no more than for a bare COPY of the rows.
Other databases (the embedded SQLite) iterate the rows. Every column must be an integer
expression that is never NULL (wrap nullable ones in `Coalesce(…, -1)`). Rows come in no
particular order: sort the arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from django.core.exceptions import EmptyResultSet
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
_BLOCK = 4 * 1024 * 1024  # bytes of COPY data read into numpy at a time


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


_TRAILER = b"\xff\xff"  # a binary COPY's last message: a field count of -1
_EMPTY = 21  # header and trailer in the first message: a COPY of no rows


def _received(copy: Any, pgconn: Any, pending: bytearray) -> Iterator[None]:
    """Append the COPY's messages (one per row) to `pending`, yielding once it holds a block
    (and at the end). Psycopg's `copy.read()` runs its wait loop for every message; here it
    runs only when nothing has arrived yet, and the messages already received are taken
    straight from libpq (a third of the CPU time per row), up to the trailer: the COPY's
    closing result is left to psycopg's own read."""
    get = pgconn.get_copy_data
    ended = False
    while data := copy.read():  # after the trailer: the COPY's end, and b""
        pending += data
        # The trailer, or (no rows) the header and the trailer in one message.
        ended = bytes(data[-2:]) == _TRAILER and len(data) in (2, _EMPTY)
        while not ended and len(pending) < _BLOCK:
            size, data = get(1)  # 1: never block (0 when nothing has arrived yet)
            if size <= 0:
                break
            pending += data
            ended = size == 2 and bytes(data) == _TRAILER
        if len(pending) >= _BLOCK:
            yield
    yield


def _copied(queryset: QuerySet, dtypes: dict[str, np.dtype]) -> dict[str, np.ndarray]:
    """The rows streamed by a binary `COPY (query) TO STDOUT`: with every column a non-NULL
    integer, each row is a fixed-width record (field count, then length and big-endian value
    per column) that numpy reads a few megabytes at a time, without a Python object per
    value. The database does no more than for a bare COPY of the same rows (an aggregate
    packing them into values sorted them on disk)."""
    sent = {1: 2, 2: 2, 4: 4, 8: 8}  # bytes on the wire: PostgreSQL has no 1-byte integer
    fields: list[tuple[str, str]] = [("_count", ">i2")]
    for name, dtype in dtypes.items():
        fields += [(f"_size_{name}", ">i4"), (name, f">i{sent[dtype.itemsize]}")]
    record = np.dtype(fields)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in dtypes}
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # `.none()`, or a filter nothing can match: no SQL to copy
        return {name: np.zeros(0, dtype=dtype) for name, dtype in dtypes.items()}

    def take(data: bytearray, rows: int) -> None:
        block = np.frombuffer(data, dtype=record, count=rows)
        sizes_ok = all(
            (block[f"_size_{name}"] == sent[dtype.itemsize]).all() for name, dtype in dtypes.items()
        )
        if not sizes_ok or (block["_count"] != len(dtypes)).any():
            raise ValueError(f"int_arrays: a NULL or non-integer value in {list(dtypes)}")
        for name, dtype in dtypes.items():
            parts[name].append(block[name].astype(dtype))
        del block

    pending = bytearray()
    header = True
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
            for _ in _received(copy, raw.connection.pgconn, pending):
                if len(pending) < _BLOCK:
                    continue
                if header:  # signature (11 bytes), flags (4), extension length (4) + extension
                    del pending[: 19 + int.from_bytes(pending[15:19], "big")]
                    header = False
                rows = len(pending) // record.itemsize
                take(pending, rows)
                del pending[: rows * record.itemsize]
    if header and pending:
        del pending[: 19 + int.from_bytes(pending[15:19], "big")]
    rows = (len(pending) - 2) // record.itemsize  # the rest, less the 2-byte trailer
    if rows > 0:
        take(pending, rows)
    return {
        name: np.concatenate(parts[name]) if parts[name] else np.zeros(0, dtype=dtype)
        for name, dtype in dtypes.items()
    }
