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
import pyarrow as pa
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


def int_and_text_arrays(
    queryset: QuerySet, columns: Columns, texts: Mapping[str, str | Expression]
) -> tuple[dict[str, np.ndarray], dict[str, pa.Array]]:
    """`int_arrays`, and beside the integer columns the text columns `texts` (name -> field
    path or expression, never NULL) as Arrow string arrays, rows in the same order. On
    PostgreSQL each chunk's texts come as one value (their concatenation) and their byte
    lengths as an array: no Python object per text, and one message per chunk instead of a
    row's (CxC's 1.3 million answer labels, issue 51)."""
    if connection.vendor == "postgresql":
        return _copied_with_texts(queryset.order_by(), columns, texts)
    values = queryset.annotate(
        **_casts(columns),
        **{f"_tv_{name}": F(e) if isinstance(e, str) else e for name, e in texts.items()},
    ).values_list(*(f"_ia_{n}" for n in columns), *(f"_tv_{n}" for n in texts))
    rows = list(values.iterator(chunk_size=20_000))
    dtypes = _dtypes(columns)
    ints = {
        name: np.fromiter((row[n] for row in rows), dtype=dtype, count=len(rows))
        for n, (name, dtype) in enumerate(dtypes.items())
    }
    strings = {}
    for n, name in enumerate(texts):
        values = [row[len(dtypes) + n] for row in rows]
        if None in values:
            raise ValueError(f"int_arrays: a NULL in text column {name!r}")
        strings[name] = pa.array(values, pa.string())
    return ints, strings


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
    return _copied_with_texts(queryset, columns, {})[0]


def _copied_with_texts(
    queryset: QuerySet, columns: Columns, texts: Mapping[str, str | Expression]
) -> tuple[dict[str, np.ndarray], dict[str, pa.Array]]:
    """`_copied`, with each text column sent per chunk as its values' byte lengths (an
    array) and their concatenation (one text)."""
    if queryset.query.distinct or queryset.query.group_by is not None:
        raise ValueError("int_arrays: a plain query only (no distinct, no grouping)")
    dtypes = _dtypes(columns)
    chunked = queryset.annotate(
        **_casts(columns),
        **{f"_tv_{name}": F(e) if isinstance(e, str) else e for name, e in texts.items()},
        _ia_chunk=F("pk"),
    ).values_list(
        "_ia_chunk", *(f"_ia_{name}" for name in dtypes), *(f"_tv_{name}" for name in texts)
    )
    try:
        sql, params = chunked.query.sql_with_params()
    except EmptyResultSet:  # `.none()`, or a filter nothing can match: no SQL to copy
        empty = {name: np.zeros(0, dtype=dtype) for name, dtype in dtypes.items()}
        return empty, {name: pa.array([], pa.string()) for name in texts}
    arrays = [f'array_agg(q."_ia_{name}")' for name in dtypes]
    for name in texts:  # (every aggregate of a group reads its rows in the same order)
        arrays += [
            f'array_agg(octet_length(q."_tv_{name}"))',
            f"string_agg(q.\"_tv_{name}\", '')",
        ]
    grouped = f'SELECT {", ".join(arrays)} FROM ({sql}) q GROUP BY q."_ia_chunk" / {CHUNK_ROWS}'
    reader = _ChunkReader(dtypes, tuple(texts))
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
    return reader.arrays(), reader.texts()


_WIRE = {1: 2, 2: 2, 4: 4, 8: 8}  # bytes per value on the wire: PostgreSQL has no 1-byte int


class _ChunkReader:
    """A binary COPY of rows that each hold one integer array per column."""

    def __init__(self, dtypes: dict[str, np.dtype], texts: tuple[str, ...] = ()) -> None:
        self.dtypes = dtypes
        self.parts: dict[str, list[np.ndarray]] = {name: [] for name in dtypes}
        # Per text column: each chunk's byte lengths and its values' concatenation.
        self.text_names = texts
        self.lengths: dict[str, list[np.ndarray]] = {name: [] for name in texts}
        self.text_bytes: dict[str, list[bytes]] = {name: [] for name in texts}
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
            if len(fields) != len(self.dtypes) + 2 * len(self.text_names):
                raise ValueError(f"int_arrays: {len(fields)} fields in a row")
            for (start, size), (name, dtype) in zip(fields, self.dtypes.items(), strict=False):
                self.parts[name].append(_array(pending, start, size, dtype, name))
            for n, name in enumerate(self.text_names):
                (start, size), (text_at, text_size) = fields[len(self.dtypes) + 2 * n :][:2]
                self.lengths[name].append(_array(pending, start, size, np.dtype(np.int32), name))
                if text_size < 0:
                    raise ValueError(f"int_arrays: a NULL in text column {name!r}")
                self.text_bytes[name].append(bytes(pending[text_at : text_at + text_size]))
            del pending[:at]

    def texts(self) -> dict[str, pa.Array]:
        """The text columns as Arrow string arrays (offsets from the lengths, no copy of a
        value's bytes but the one into the joined buffer)."""
        out = {}
        for name in self.text_names:
            parts = self.lengths[name]
            lengths = np.concatenate(parts) if parts else np.zeros(0, np.int32)
            offsets = np.zeros(lengths.size + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            data = b"".join(self.text_bytes[name])
            if offsets[-1] != len(data):
                raise ValueError(f"int_arrays: text column {name!r}: lengths and bytes differ")
            big = pa.Array.from_buffers(
                pa.large_string(), lengths.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            )
            out[name] = big.cast(pa.string())
        return out

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
