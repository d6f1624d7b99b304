"""Columns of a query as one Arrow table, text included, for exports that read tens of
thousands of rows (`int_arrays.py` reads integer columns only), and the numpy <-> Arrow
conversions such an export needs.

On PostgreSQL the rows come by `COPY (query) TO STDOUT (FORMAT csv)`, parsed by Arrow's CSV
reader into typed columns: no Python object per value, and the database does no more than
for a bare COPY of the rows. Other databases (the embedded SQLite) iterate the rows.

None of this imports pandas: pyarrow imports it on the first `pa.array` of any Python or numpy
value (and for `to_numpy`, Python scalars in compute calls, `pq.read_table`), 0.4 s and more
in a fresh worker process, longer than a whole export's reads. Arrays are built from their
buffers instead.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import (
    BigIntegerField,
    Expression,
    F,
    IntegerField,
    QuerySet,
    SmallIntegerField,
    TextField,
)
from django.db.models.functions import Cast

# name -> (field path or expression, Arrow type); the table's columns, in this order.
Columns = Mapping[str, tuple[str | Expression, pa.DataType]]


def arrow_rows(queryset: QuerySet, columns: Columns) -> pa.Table:
    """The queryset's rows (in its order) as a table of `columns`; NULL is a missing value,
    an empty text is an empty text."""
    values = queryset.values_list(*(expr for expr, _ in columns.values()))
    schema = pa.schema([(name, kind) for name, (_, kind) in columns.items()])
    if connection.vendor != "postgresql":
        rows = list(values.iterator(chunk_size=20_000))
        return pa.table(
            {f.name: pa.array([r[n] for r in rows], f.type) for n, f in enumerate(schema)},
            schema=schema,
        )
    try:
        sql, params = values.query.sql_with_params()
    except EmptyResultSet:  # `.none()`, or a filter nothing can match
        return _empty(schema)
    data = bytearray()
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)", params) as copy:
            for block in copy:
                data += block
    if not data:
        return _empty(schema)
    return pa_csv.read_csv(
        io.BytesIO(data),
        # One block: a row (a text with line breaks) never straddles two.
        read_options=pa_csv.ReadOptions(
            column_names=schema.names, block_size=min(len(data) + 1, 2**31 - 1)
        ),
        # A row of one NULL column is an empty line: a row, not a line to skip.
        parse_options=pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        # PostgreSQL's CSV: NULL is an empty unquoted field, an empty text is quoted ("").
        convert_options=pa_csv.ConvertOptions(
            column_types=schema,
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["t"],
            false_values=["f"],
        ),
    ).select(schema.names)


def _empty(schema: pa.Schema) -> pa.Table:
    """A table of no rows (`schema.empty_table()` imports pandas)."""
    return pa.table([pa.nulls(0, field.type) for field in schema], schema=schema)


_CASTS = {
    pa.int16(): SmallIntegerField,
    pa.int32(): IntegerField,
    pa.int64(): BigIntegerField,
    pa.string(): TextField,  # a jsonb column too: its text, as `json.loads` reads it
}


def arrow_columns(queryset: QuerySet, columns: Columns) -> pa.Table:
    """`arrow_rows` for columns none of which may be NULL, each cast to its type in SQL (a
    JSON field read as its text on every database); rows in no particular order (no sort is
    asked of the database). A NULL is an error naming the column."""
    for name, (_, kind) in columns.items():
        if kind not in _CASTS:
            raise TypeError(
                f"arrow_columns: column {name!r} has type {kind}, not one of {list(_CASTS)}"
            )
    cast = queryset.order_by().annotate(
        **{
            f"_ac_{name}": Cast(F(expr) if isinstance(expr, str) else expr, _CASTS[kind]())
            for name, (expr, kind) in columns.items()
        }
    )
    table = arrow_rows(cast, {name: (f"_ac_{name}", kind) for name, (_, kind) in columns.items()})
    for name in columns:
        if table.column(name).null_count:
            raise ValueError(f"arrow_columns: a NULL in column {name!r}")
    return table


def numpy_ints(column: pa.Array | pa.ChunkedArray, *, missing: int = -1) -> np.ndarray:
    """An integer column as a numpy array of its width, a missing value as `missing`."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_integer(array.type):
        raise TypeError(f"numpy_ints: {array.type} is not an integer column")
    kind = "i" if pa.types.is_signed_integer(array.type) else "u"
    return _numbers(array, np.dtype(f"{kind}{array.type.bit_width // 8}"), missing)


def numpy_floats(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A floating-point column as a numpy array of its width, a missing value NaN."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_floating(array.type):
        raise TypeError(f"numpy_floats: {array.type} is not a floating-point column")
    return _numbers(array, np.dtype(f"f{array.type.bit_width // 8}"), np.nan)


def _numbers(array: pa.Array, dtype: np.dtype, missing: float) -> np.ndarray:
    if not len(array):
        return np.zeros(0, dtype=dtype)
    values = np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize
    ).copy()
    if array.null_count:
        values[~_valid(array)] = missing
    return values


def numpy_flags(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean column as a numpy array, a missing value False."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_boolean(array.type):
        raise TypeError(f"numpy_flags: {array.type} is not a boolean column")
    if not len(array):
        return np.zeros(0, dtype=bool)
    flags = _bits(array.buffers()[1], array)
    return flags & _valid(array) if array.null_count else flags


def _valid(array: pa.Array) -> np.ndarray:
    return _bits(array.buffers()[0], array)


def _bits(buffer: pa.Buffer, array: pa.Array) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def arrow_numbers(values: np.ndarray, *, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array of numbers or booleans as an Arrow array (`valid`: False where a value
    is missing)."""
    values = np.ascontiguousarray(values)
    mask = None if valid is None or valid.all() else _bitmap(valid)
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(values), [mask, _bitmap(values)])
    kind = pa.from_numpy_dtype(values.dtype)
    nulls = 0 if mask is None else int((~valid).sum())  # type: ignore[operator]
    return pa.Array.from_buffers(kind, len(values), [mask, pa.py_buffer(values)], nulls)


def _bitmap(flags: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(flags.astype(bool), bitorder="little"))


def arrow_strings(values: Sequence[str]) -> pa.Array:
    """A list of texts as an Arrow string array."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def arrow_text(text: str) -> pa.Scalar:
    """A text as an Arrow scalar, for a compute call (a Python value there is converted by
    `pa.scalar`, which imports pandas)."""
    return arrow_strings([text])[0]


def arrow_lists(values: pa.Array, counts: np.ndarray) -> pa.ListArray:
    """Consecutive runs of `values`, `counts[i]` of them in row i, as a list column."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(arrow_numbers(offsets), values)
