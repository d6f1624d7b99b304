"""What changed since the run's previous export version: records matched by each record
set's stable key (the flow's `ExportSpec.record_keys`), counted as added, removed, changed
(same key, another value in any column) or unchanged; written as `CHANGES.md` and the
manifest's `changes`. Computed from the Parquet tables in Arrow: records aligned as they
are or matched by a hash join, lists compared element by element (no Python object per
rating; pandas' merge of joined texts took seconds at CxC's size)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annotation.models import Export
from annotation.selectors.arrow_rows import arrow_numbers, numpy_flags, numpy_ints
from annotation.services.files import file_write_atomic
from annotation.services.release.memory import memory_release
from annotation.services.release.release_tables import plain_type

CHANGES_FILE = "CHANGES.md"
# Rows compared at a time where both versions list the same keys in the same order: each
# slice's decoded and compared values are a few MB (CxC's ratings per task: tens).
SLICE = 16_384


def _one(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """`column` as one array (its only chunk as it is: combining copies even one)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _plain(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """`column` as one array, dictionary-encoded values decoded."""
    array = _one(column)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def _same_values(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Per row, whether `a` and `b` hold the same scalar (two missing values, null or NaN,
    are the same)."""
    if pa.types.is_dictionary(b.type) and not pa.types.is_dictionary(a.type):
        a, b = b, a
    if (same := _same_codes(_one(a), _one(b))) is not None:
        return same
    a, b = _plain(a), _plain(b)
    try:
        equal = pc.equal(a, b)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # types Arrow cannot compare
        left, right = a.to_pandas(), b.to_pandas()
        return ((left == right) | (left.isna() & right.isna())).to_numpy(dtype=bool)
    missing = pc.and_(pc.is_null(a, nan_is_null=True), pc.is_null(b, nan_is_null=True))
    # A comparison with a missing value is missing: numpy_flags reads it as False.
    return numpy_flags(equal) | numpy_flags(missing)


def _same_codes(a: pa.Array, b: pa.Array) -> np.ndarray | None:
    """`_same_values` of dictionary-encoded `a` (a previous version's worker pseudonyms, one
    per rating) and `b`, plain or dictionary-encoded (the new version's), compared as codes
    in `a`'s dictionary without decoding either; None where that does not apply (a
    dictionary with a value twice)."""
    if not pa.types.is_dictionary(a.type):
        return None
    words = a.dictionary
    kind = b.type.value_type if pa.types.is_dictionary(b.type) else b.type
    if a.type.value_type != kind or _repeats(words):
        return None
    if pa.types.is_dictionary(b.type):  # null: absent from `a`'s dictionary, or null
        codes = pc.index_in(b.dictionary, value_set=words, skip_nulls=True).take(b.indices)
    else:
        codes = pc.index_in(b, value_set=words, skip_nulls=True)
    equal = pc.equal(a.indices, codes)  # missing where either is: numpy_flags reads False
    missing = pc.and_(pc.is_null(a), pc.is_null(b))
    return numpy_flags(equal) | numpy_flags(missing)


def _repeats(words: pa.Array) -> bool:
    """Whether a dictionary holds a value twice (two codes for one value)."""
    return bool(pc.count_distinct(words, mode="all").as_py() != len(words))


def _same_lists(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Per row, whether the lists `a` and `b` hold the same values in the same order (two
    missing lists are the same), compared element by element in Arrow."""
    a, b = _one(a), _one(b)
    size_a = numpy_ints(pc.list_value_length(a), missing=-1)
    size_b = numpy_ints(pc.list_value_length(b), missing=-1)
    same = size_a == size_b
    rows = np.flatnonzero(same & (size_a > 0))
    if rows.size:
        left, right = a, b  # every row to compare: no copy
        if rows.size < len(a):
            at = arrow_numbers(rows)
            left, right = a.take(at), b.take(at)
        equal = _same_values(pc.list_flatten(left), pc.list_flatten(right))
        # The rows of the values that differ (no row number per value: CxC's 1.3 million
        # ratings made it 10 MB): the compared rows' values lie one row after another.
        ends = np.cumsum(size_a[rows])
        differ = np.searchsorted(ends, np.flatnonzero(~equal), side="right")
        same[rows[differ]] = False
    return same


def _same(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Per row, whether `a` and `b` hold the same value."""
    if pa.types.is_list(a.type) and pa.types.is_list(b.type):
        return _same_lists(a, b)
    if pa.types.is_list(a.type) or pa.types.is_list(b.type):
        return np.zeros(len(a), dtype=bool)
    return _same_values(a, b)


def _unique_keys(table: pa.Table, keys: list[str]) -> bool:
    """Whether no two rows of `table` share a key (and none lacks one): each key column
    dictionary-encoded, the codes combined into one integer per row and counted in numpy
    (a join into one text per row, or Arrow's grouping, took most of a second at CxC's
    size)."""
    combined = np.zeros(table.num_rows, dtype=np.int64)
    span = 1
    for k in keys:
        column = table.column(k)
        if column.null_count:
            return False
        # Chunk by chunk, one dictionary for all (no combined copy of the column); a column
        # kept encoded (CxC's names) is not decoded: its chunks' dictionaries are unified,
        # and one code is one value unless that dictionary holds a value twice.
        encoded = column.unify_dictionaries() if pa.types.is_dictionary(column.type) else None
        if encoded is None or encoded.num_chunks and _repeats(encoded.chunk(0).dictionary):
            encoded = pc.dictionary_encode(_plain(column))
        chunks = encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded]
        size = max(len(chunks[0].dictionary) if chunks else 0, 1)
        span *= size
        if span >= 2**62:  # the codes no longer fit one integer: Arrow's grouping instead
            grouped = pa.table({k: _plain(table.column(k)) for k in keys}).group_by(keys)
            return grouped.aggregate([]).num_rows == table.num_rows
        combined *= size
        start = 0
        for chunk in chunks:
            combined[start : start + len(chunk)] += numpy_ints(chunk.indices)
            start += len(chunk)
    combined.sort()  # (np.unique without its other outputs hashes: ten times slower here)
    return not (combined[1:] == combined[:-1]).any()


def _same_rows(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    """Whether columns `a` and `b` (as long) hold the same values, compared a chunk of `b`
    at a time (no combined copies)."""
    start = 0
    for chunk in b.chunks if isinstance(b, pa.ChunkedArray) else [b]:
        if not _same_values(_one(a.slice(start, len(chunk))), chunk).all():
            return False
        start += len(chunk)
    return True


def _matched(before: pa.Table, after: pa.Table, keys: list[str]) -> tuple[pa.Array, pa.Array]:
    """Row numbers of `before` and `after` per matched key (null where unmatched): aligned
    as they are when both list the same keys in the same order (a re-export), else by
    Arrow's hash join (a missing key matches a missing key, as in pandas)."""
    if (
        before.num_rows == after.num_rows
        and all(_same_rows(before.column(k), after.column(k)) for k in keys)
        and _unique_keys(after, keys)  # the same keys as `before`'s, already in memory
    ):  # the same unique keys in the same order (a repeated key matches every copy)
        rows = arrow_numbers(np.arange(before.num_rows, dtype=np.int64))
        return rows, rows

    def numbered(table: pa.Table, name: str) -> pa.Table:
        # A missing key becomes a marker value so that it matches another missing key.
        cols = {
            k: pc.fill_null(_plain(table.column(k)), _marker(_plain(table.column(k)).type))
            for k in keys
        }
        return pa.table({**cols, name: pa.array(np.arange(table.num_rows, dtype=np.int64))})

    matched = numbered(before, "@old").join(
        numbered(after, "@new"), keys=keys, join_type="full outer", use_threads=False
    )
    return matched.column("@old").combine_chunks(), matched.column("@new").combine_chunks()


def changes_between(
    *, old: pa.Table | _PreviousFile, new: pa.Table, key: tuple[str, ...]
) -> dict[str, int]:
    """Records of `new` against `old` (a table, or a previous file read a column at a time),
    matched by `key`: added, removed, changed, unchanged."""
    keys = list(key)
    for k in keys:  # the old file may hold a key in another width (int32 against int64)
        # (A key kept dictionary-encoded is compared by its codes: not decoded.)
        if plain_type(new.column(k).type) != (kind := old.schema.field(k).type):
            at = new.column_names.index(k)
            new = new.set_column(at, k, new.column(k).cast(kind))
    left, right = _matched(old, new, keys)
    both = pc.and_(pc.is_valid(left), pc.is_valid(right))
    at_old, at_new = left.filter(both), right.filter(both)
    aligned = len(at_old) == old.num_rows == new.num_rows and left is right
    differs = np.zeros(len(at_old), dtype=bool)
    for column in (c for c in new.column_names if c not in key and c in old.column_names):
        if aligned:  # row by row, a slice of the new table at a time (no combined copies)
            start = 0
            for chunk in new.column(column).chunks:
                for lo in range(0, len(chunk), SLICE):
                    piece = chunk.slice(lo, SLICE)
                    part = old.column(column).slice(start, len(piece))
                    differs[start : start + len(piece)] |= ~_same(_one(part), piece)
                    start += len(piece)
        else:
            a, b = _one(old.column(column)), _one(new.column(column))
            differs |= ~_same(a.take(at_old), b.take(at_new))
        memory_release()  # the column's comparison buffers, before the next column's
    return {
        "added": left.null_count,
        "removed": right.null_count,
        "changed": int(differs.sum()),
        "unchanged": int(differs.size - differs.sum()),
    }


def _marker(kind: pa.DataType) -> Any:
    """A stand-in for a missing key of type `kind` (one no real record uses)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "\x00missing"
    if pa.types.is_integer(kind):
        return pa.scalar(np.iinfo(kind.to_pandas_dtype()).min, kind)
    if pa.types.is_floating(kind):
        return float("-inf")
    return pa.scalar(None, kind)  # left missing: Arrow matches it with nothing


class _PreviousFile:
    """A previous version's Parquet file with a table's `column`, `column_names`, `schema`
    and `num_rows`, read a column at a time, each kept only until the next is asked for
    (CxC's whole previous table beside the new one was most of the export's peak memory).
    Strings inside lists are read as dictionaries (CxC's worker pseudonyms: six times
    faster to read than 1.3 million separate strings)."""

    def __init__(self, path: Path) -> None:
        schema = pq.ParquetFile(path).schema
        nested = [
            c.path
            for c in (schema.column(i) for i in range(len(schema)))
            if c.max_repetition_level > 0 and c.physical_type == "BYTE_ARRAY"
        ]
        parquet = self.file = pq.ParquetFile(path, read_dictionary=nested)
        self.schema: pa.Schema = parquet.schema_arrow
        self.column_names: list[str] = self.schema.names
        self.num_rows: int = parquet.metadata.num_rows
        self.read: dict[str, pa.ChunkedArray] = {}

    def column(self, name: str) -> pa.ChunkedArray:
        if name not in self.read:
            self.read.clear()
            # A row group at a time: `pq.read_table` imports pandas, and ParquetFile.read
            # refuses nested columns of more than one row group.
            parts = [
                self.file.read_row_group(i, columns=[name], use_threads=False).column(0)
                for i in range(self.file.metadata.num_row_groups)
            ]
            chunks = [chunk for part in parts for chunk in part.chunks]
            self.read[name] = pa.chunked_array(chunks, type=self.schema.field(name).type)
            del parts, chunks
            memory_release()  # the previous column and this one's decoding, freed
        return self.read[name]


def _previous_folder(previous: Export) -> Path:
    path = Path(previous.path)
    return path if path.is_dir() else path.parent


def release_changes(
    *,
    previous: Export | None,
    tables: dict[str, pa.Table],
    keys: dict[str, tuple[str, ...]],
) -> dict[str, Any]:
    """The manifest's `changes`: the predecessor's version and, per record set, its key and
    counts (a record set the predecessor lacks counts every record as added)."""
    sets: dict[str, Any] = {}
    for name, table in tables.items():
        key = keys.get(name, ())
        entry: dict[str, Any] = {"key": list(key), "rows": table.num_rows}
        old_file = _previous_folder(previous) / "data" / f"{name}.parquet" if previous else None
        if old_file is not None and old_file.is_file() and key:
            old = _PreviousFile(old_file)
            entry |= {"previous_rows": old.num_rows}
            entry |= changes_between(old=old, new=table, key=key)
            del old
            memory_release()  # the old version's buffers, freed
        else:
            entry |= {"previous_rows": 0, "added": table.num_rows, "removed": 0, "changed": 0}
            entry["unchanged"] = 0
        sets[name] = entry
    return {"previous_version": previous.version if previous else None, "record_sets": sets}


def changes_write(*, folder: Path, changes: dict[str, Any], format: str, version: int) -> str:
    """Write CHANGES.md into `folder`; returns its sha256."""
    previous = changes["previous_version"]
    lines = [
        f"# Changes: {format} v{version}"
        + (f" against v{previous}" if previous else " (the run's first version)"),
        "",
        "Records are matched by each record set's key; *changed* means the same key with "
        "another value in some column (a rating, a worker, an aggregate).",
        "",
        "| record set | key | before | now | added | removed | changed | unchanged |",
        "|---|---|---|---|---|---|---|---|",
        *(
            f"| {name} | {', '.join(e['key'])} | {e['previous_rows']} | {e['rows']} | "
            f"{e['added']} | {e['removed']} | {e['changed']} | {e['unchanged']} |"
            for name, e in changes["record_sets"].items()
        ),
        "",
    ]
    return file_write_atomic(path=folder / CHANGES_FILE, data="\n".join(lines).encode())
