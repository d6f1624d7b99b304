"""Columns of a query as an Arrow table, text columns included, for exports that read every
answer of a run (the ECCV judged pairs: labels, follow-ups, workers, models).

On PostgreSQL the rows come by one `COPY (query) TO STDOUT (FORMAT CSV)` that Arrow's CSV
reader parses in C++ (no Python object per value): the database does what a bare COPY of the
same rows does. Other databases (the embedded SQLite) iterate the rows. Every column must
be non-NULL (wrap nullable ones in `Coalesce`); text columns come back as Arrow strings,
integer columns as Arrow integers of the given type. Rows come in no particular order.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.csv as pacsv
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

# name -> (field path or expression, Arrow type: an integer type or pa.string())
Columns = Mapping[str, tuple[str | Expression, pa.DataType]]

_SQL_TYPES = {
    pa.int16(): SmallIntegerField,
    pa.int32(): IntegerField,
    pa.int64(): BigIntegerField,
    pa.string(): TextField,  # jsonb too: its text, as `json.loads` reads it
}


def copy_columns(queryset: QuerySet, columns: Columns) -> pa.Table:
    """`columns` maps a name to (field path or expression, Arrow type); returns a table with
    one column per name, rows in no particular order."""
    for name, (_, kind) in columns.items():
        if kind not in _SQL_TYPES:
            raise TypeError(
                f"copy_columns: column {name!r} has type {kind}, not one of {list(_SQL_TYPES)}"
            )
    rows = (
        queryset.order_by()
        .annotate(
            **{
                f"_cc_{name}": Cast(F(expr) if isinstance(expr, str) else expr, _SQL_TYPES[kind]())
                for name, (expr, kind) in columns.items()
            }
        )
        .values_list(*(f"_cc_{name}" for name in columns))
    )
    schema = pa.schema([(name, kind) for name, (_, kind) in columns.items()])
    if connection.vendor != "postgresql":
        values = list(zip(*rows.iterator(chunk_size=20_000), strict=True)) or [()] * len(columns)
        table = pa.table(
            [pa.array(v, kind) for v, kind in zip(values, schema.types, strict=True)], schema=schema
        )
    else:
        table = _copied(rows, schema)
    for name in columns:
        if table.column(name).null_count:
            raise ValueError(f"copy_columns: a NULL in column {name!r}")
    return table


def _copied(rows: QuerySet, schema: pa.Schema) -> pa.Table:
    sql, params = rows.query.sql_with_params()
    data = io.BytesIO()
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT CSV)", params) as copy:
            for block in copy:
                data.write(block)
    if not data.tell():
        return schema.empty_table()
    data.seek(0)
    # PostgreSQL's CSV: fields quoted where they hold a comma, quote or newline (quotes
    # doubled), NULL unquoted and empty, an empty string quoted.
    return pacsv.read_csv(
        data,
        # One block (one chunk per column): a row never straddles two.
        read_options=pacsv.ReadOptions(
            column_names=schema.names, block_size=min(data.getbuffer().nbytes + 1, 2**31 - 1)
        ),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=schema,
            null_values=[""],  # not Arrow's default list ("NA", "null", ...): text is text
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
