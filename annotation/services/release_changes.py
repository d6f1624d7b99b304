"""What changed since the run's previous export version: records matched by each record
set's stable key (the flow's `ExportSpec.record_keys`), counted as added, removed, changed
(same key, another value in any column) or unchanged; written as `CHANGES.md` and the
manifest's `changes`. Computed from the Parquet tables in Arrow: list columns joined as
text, records matched by a hash join (no Python object per rating; pandas' merge took
seconds at CxC's size)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annotation.models import Export
from annotation.services.files import file_write_atomic

CHANGES_FILE = "CHANGES.md"


def _joined(table: pa.Table) -> pa.Table:
    """`table` with each list column joined into one text per row."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_list(column.type):
            if not pa.types.is_string(column.type.value_type):
                column = pc.cast(column, pa.list_(pa.string()))
            column = pc.binary_join(column, ";")
        columns[name] = column
    return pa.table(columns)


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Per row, whether `a` and `b` hold the same value (two missing values, null or NaN,
    are the same)."""
    try:
        equal = pc.fill_null(pc.equal(a, b), False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # types Arrow cannot compare
        left, right = a.to_pandas(), b.to_pandas()
        return ((left == right) | (left.isna() & right.isna())).to_numpy(dtype=bool)
    missing = pc.and_(pc.is_null(a, nan_is_null=True), pc.is_null(b, nan_is_null=True))
    return pc.or_(equal, missing).to_numpy(zero_copy_only=False)


def changes_between(*, old: pa.Table, new: pa.Table, key: tuple[str, ...]) -> dict[str, int]:
    """Records of `new` against `old`, matched by `key`: added, removed, changed, unchanged.
    Matched with Arrow's hash join (a missing key matches a missing key, as in pandas)."""
    before, after = _joined(old), _joined(new)
    keys = list(key)
    for k in keys:  # the old file may hold a key in another width (int32 against int64)
        if after.column(k).type != before.column(k).type:
            at = after.column_names.index(k)
            after = after.set_column(at, k, after.column(k).cast(before.column(k).type))

    def numbered(table: pa.Table, name: str) -> pa.Table:
        # A missing key becomes a marker value so that it matches another missing key.
        cols = {k: pc.fill_null(table.column(k), _marker(table.column(k).type)) for k in keys}
        return pa.table({**cols, name: pa.array(np.arange(table.num_rows, dtype=np.int64))})

    matched = numbered(before, "@old").join(
        numbered(after, "@new"), keys=keys, join_type="full outer", use_threads=False
    )
    left, right = matched.column("@old"), matched.column("@new")
    both = pc.and_(pc.is_valid(left), pc.is_valid(right))
    at_old, at_new = left.filter(both), right.filter(both)
    differs = np.zeros(len(at_old), dtype=bool)
    for column in (c for c in after.column_names if c not in key and c in before.column_names):
        differs |= ~_same(before.column(column).take(at_old), after.column(column).take(at_new))
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
            old = pq.read_table(old_file)
            entry |= {"previous_rows": old.num_rows}
            entry |= changes_between(old=old, new=table, key=key)
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
