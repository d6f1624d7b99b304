"""Integer columns of a query as numpy arrays, for exports that read millions of rows.

On PostgreSQL the database packs the columns into arrays, a chunk of rows at a time, sent by a
binary COPY that numpy reads (no Python object or call per value or row); the database does
about as much as for a bare COPY of the rows.
Other databases (the embedded SQLite) iterate the rows. Every column must be an integer
expression that is never NULL (wrap nullable ones in `Coalesce(…, -1)`). Rows come in no
particular order: sort the arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import (
    BigIntegerField,
    Expression,
    F,
    IntegerField,
    Max,
    Model,
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
        return _copied(queryset.order_by(), columns)
    return _iterated(queryset, columns)


def _dtypes(
    columns: Columns,
) -> dict[str, np.dtype]:
    return {name: np.dtype(dtype) for name, (_, dtype) in columns.items()}


def _casts(columns: Columns) -> dict[str, Cast]:
    dtypes = _dtypes(columns)
    return {
        f"_ia_{name}": Cast(F(expr) if isinstance(expr, str) else expr, _SQL_TYPES[dtypes[name]]())
        for name, (expr, _) in columns.items()
    }


def _annotated(queryset: QuerySet, columns: Columns) -> QuerySet:
    return queryset.annotate(**_casts(columns)).values_list(*(f"_ia_{name}" for name in columns))


def _iterated(queryset: QuerySet, columns: Columns) -> dict[str, np.ndarray]:
    """Row by row: for databases without COPY (the embedded SQLite)."""
    dtypes = _dtypes(columns)
    rows = list(_annotated(queryset, columns).iterator(chunk_size=20_000))
    return {
        name: np.fromiter((row[n] for row in rows), dtype=dtype, count=len(rows))
        for n, (name, dtype) in enumerate(dtypes.items())
    }


def id_dtype(*models: type[Model]) -> np.dtype:
    """`np.int32` where every row id of `models` so far fits 4 bytes (an id column in half
    the memory: CxC's 1.3 million ratings name three), else `np.int64`. A larger id made
    meanwhile fails the read loudly (PostgreSQL's integer cast), never wraps."""
    top = max((m._base_manager.aggregate(top=Max("pk"))["top"] or 0 for m in models), default=0)
    return np.dtype(np.int32) if top < 2**31 else np.dtype(np.int64)


CHUNK_ROWS = 65_536  # rows per server-side array: a message of at most a few MB


def _copied(queryset: QuerySet, columns: Columns) -> dict[str, np.ndarray]:
    """The rows as arrays made by PostgreSQL: `array_agg` of each column over chunks of the
    base table's ids (hash-grouped, no sort: rows come in no particular order anyway), sent
    by a binary COPY, one message per chunk, read by numpy. A COPY of the rows themselves
    sends one message per row, which psycopg hands over one Python call at a time (about
    0.8 s of CPU for CxC's 1.3 million ratings, against 0.05 s this way; the database's time
    is about the same)."""
    if queryset.query.distinct or queryset.query.group_by is not None:
        raise ValueError("int_arrays: a plain query only (no distinct, no grouping)")
    dtypes = _dtypes(columns)
    chunked = queryset.annotate(**_casts(columns), _ia_chunk=F("pk")).values_list(
        "_ia_chunk", *(f"_ia_{name}" for name in dtypes)
    )
    try:
        sql, params = chunked.query.sql_with_params()
    except EmptyResultSet:  # `.none()`, or a filter nothing can match: no SQL to copy
        return {name: np.zeros(0, dtype=dtype) for name, dtype in dtypes.items()}
    arrays = ", ".join(f'array_agg(q."_ia_{name}")' for name in dtypes)
    grouped = f'SELECT {arrays} FROM ({sql}) q GROUP BY q."_ia_chunk" / {CHUNK_ROWS}'
    reader = _ChunkReader(dtypes)
    with transaction.atomic(), connection.cursor() as cursor:
        # A hash of the few chunks, never a sort of every row (the planner, misled by the
        # joins' estimates, would sort); for this statement only.
        cursor.execute("SELECT current_setting('enable_sort')")
        previous = cursor.fetchone()[0]
        cursor.execute("SELECT set_config('enable_sort', 'off', true)")
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY ({grouped}) TO STDOUT (FORMAT BINARY)", params) as copy:
            while data := copy.read():
                reader.feed(data)
        cursor.execute("SELECT set_config('enable_sort', %s, true)", [previous])
    return reader.arrays()


_WIRE = {1: 2, 2: 2, 4: 4, 8: 8}  # bytes per value on the wire: PostgreSQL has no 1-byte int


class _ChunkReader:
    """A binary COPY of rows that each hold one integer array per column."""

    def __init__(self, dtypes: dict[str, np.dtype]) -> None:
        self.dtypes = dtypes
        self.parts: dict[str, list[np.ndarray]] = {name: [] for name in dtypes}
        self.pending = bytearray()
        self.header = True

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        pending = self.pending
        pending += data
        if self.header:  # signature (11 bytes), flags (4), extension length (4) + extension
            if len(pending) < 19:
                return
            del pending[: 19 + int.from_bytes(pending[15:19], "big")]
            self.header = False
        while len(pending) >= 2:
            count = int.from_bytes(pending[:2], "big", signed=True)
            if count == -1:  # the trailer
                del pending[:2]
                return
            fields, at = [], 2
            for _ in range(count):
                if len(pending) < at + 4:
                    return
                size = int.from_bytes(pending[at : at + 4], "big", signed=True)
                fields.append((at + 4, size))
                at += 4 + max(size, 0)
            if len(pending) < at:
                return  # the rest of the row comes with the next message
            for (start, size), (name, dtype) in zip(fields, self.dtypes.items(), strict=True):
                self.parts[name].append(_array(pending, start, size, dtype, name))
            del pending[:at]

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            name: np.concatenate(self.parts[name]) if self.parts[name] else np.zeros(0, dtype)
            for name, dtype in self.dtypes.items()
        }


def _array(pending: bytearray, start: int, size: int, dtype: np.dtype, name: str) -> np.ndarray:
    """A one-dimensional integer array in PostgreSQL's binary format: dimensions, flags and
    element type, then each element's length and big-endian value."""
    header = np.frombuffer(pending, dtype=">i4", count=5, offset=start) if size >= 20 else None
    if header is None or header[0] != 1 or header[1] != 0:  # not 1-D, or holds a NULL
        raise ValueError(f"int_arrays: a NULL or non-integer value in column {name!r}")
    n, wire = int(header[3]), _WIRE[dtype.itemsize]
    record = np.dtype([("size", ">i4"), ("value", f">i{wire}")])
    if size != 20 + n * record.itemsize:
        raise ValueError(f"int_arrays: a non-integer value in column {name!r}")
    block = np.frombuffer(pending, dtype=record, count=n, offset=start + 20)
    if (block["size"] != wire).any():
        raise ValueError(f"int_arrays: a NULL or non-integer value in column {name!r}")
    return block["value"].astype(dtype)
