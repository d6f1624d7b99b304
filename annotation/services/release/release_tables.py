"""Parquet tables of an export's records, one file per record set, beside the papers' own
files: what `datasets.load_dataset("parquet", ...)`, pandas or DuckDB read. Each row carries its
label's provenance (number of judgments, agreement, the aggregate and its interval where the
run computed one, pseudonymous worker ids); the flows build the tables, the skeleton writes
them (`export_jobs.export_job_write`)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.selectors.arrow_rows import arrow_numbers, numpy_ints
from annotation.services.files import file_made_atomic
from annotation.services.release.memory import memory_release

# No wall-clock time inside the file: two exports of the same records give the same bytes.
_WRITE_OPTIONS = {"compression": "zstd", "use_dictionary": True, "write_statistics": True}


def parquet_name(record_set: str) -> str:
    """The file a record set is written to, relative to the export's folder (a `data/`
    folder, as the Hub lays out Parquet; the papers' files stay at the top)."""
    return f"data/{record_set}.parquet"


# Rows per row group: the writer holds one group's pages at a time (CxC's pairs: 21 MB at
# 16,384 rows, 31 at 65,536, 66 in one group of 267,095), and a table's columns
# kept dictionary-encoded in memory (CxC's worker of each rating) are decoded a group at a time.
ROW_GROUP = 16_384


def plain_type(kind: pa.DataType) -> pa.DataType:
    """`kind` with every dictionary encoding replaced by its values' type (lists included):
    what a file's readers get."""
    if pa.types.is_dictionary(kind):
        return plain_type(kind.value_type)
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(plain_type(kind.value_type)))
    return kind


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with `plain_type` columns (its metadata kept)."""
    return pa.schema(
        [field.with_type(plain_type(field.type)) for field in schema], metadata=schema.metadata
    )


def _parquet_write(table: pa.Table, where: Any) -> None:
    """`table` as one Parquet file at `where` (a path or a binary file), a row group of
    `ROW_GROUP` rows at a time, dictionary-encoded columns written as their values."""
    schema = plain_schema(table.schema)
    if isinstance(where, Path):
        where = str(where)
    with pq.ParquetWriter(where, schema, **_WRITE_OPTIONS) as writer:
        for lo in range(0, table.num_rows, ROW_GROUP) if table.num_rows else [0]:
            part = table.slice(lo, ROW_GROUP)
            columns = [_own_values(part.column(n)) for n in range(part.num_columns)]
            writer.write_table(pa.table(columns, schema=part.schema).cast(schema))


def _own_values(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """`column` of a table's slice with each list chunk holding only its rows' values: a
    slice of a list array keeps every value of the whole, which a cast decodes (CxC's 1.3
    million pseudonyms at each row group) and the writer walks."""
    if not pa.types.is_list(column.type):
        return column
    chunks = []
    for chunk in column.chunks:
        # The child's span the offsets name (`flatten` would drop what a missing list spans).
        start, end = chunk.offsets[0].as_py(), chunk.offsets[-1].as_py()
        offsets = arrow_numbers(numpy_ints(chunk.offsets) - start)
        mask = chunk.is_null() if chunk.null_count else None
        values = chunk.values.slice(start, end - start)
        chunks.append(pa.ListArray.from_arrays(offsets, values, mask=mask))
    return pa.chunked_array(chunks, type=column.type)


def table_parquet_bytes(*, table: pa.Table) -> bytes:
    """`table` as the bytes of one Parquet file (those `release_tables_write` writes)."""
    out = io.BytesIO()
    _parquet_write(table, out)
    return out.getvalue()


def release_tables_write(
    *, folder: Path, tables: Mapping[str, pa.Table], license: str
) -> dict[str, Any]:
    """Write each record set's Parquet file into `folder`, its license in the file's
    metadata ("unlicensed" too: every file says it); returns the manifest's `record_sets`
    entry (file, rows, sha256, per record set)."""
    (folder / "data").mkdir(exist_ok=True)
    tables = {
        name: table.replace_schema_metadata({**(table.schema.metadata or {}), b"license": license})
        for name, table in tables.items()
    }
    entries = {
        name: {
            "file": parquet_name(name),
            "rows": table.num_rows,
            "sha256": file_made_atomic(
                path=folder / parquet_name(name),
                make=partial(_parquet_write, table),
            ),
        }
        for name, table in tables.items()
    }
    memory_release()  # the writer's buffers (tens of MB for CxC's ratings)
    return entries


def majority_share(labels: list[str]) -> float | None:
    """The share of a label's judgments that agree with its most frequent answer."""
    if not labels:
        return None
    _, counts = np.unique(np.array(labels, dtype=object).astype(str), return_counts=True)
    return round(float(counts.max()) / len(labels), 4)


def list_column(values: np.ndarray, offsets: np.ndarray) -> pa.ListArray:
    """A list column from flat `values` and their row `offsets` (n rows: n + 1 offsets),
    without a Python object per value (CxC's ratings)."""
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values))


def table_from_columns(columns: Mapping[str, object]) -> pa.Table:
    """A table from named columns (lists, numpy arrays or Arrow arrays)."""
    return pa.table(
        {
            name: col if isinstance(col, pa.Array | pa.ChunkedArray) else pa.array(col)
            for name, col in columns.items()
        }
    )
