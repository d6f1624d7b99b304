"""What changed since the run's previous export version: records matched by each record
set's stable key (the flow's `ExportSpec.record_keys`), counted as added, removed, changed
(same key, another value in any column) or unchanged; written as `CHANGES.md` and the
manifest's `changes`. Computed from the Parquet tables, list columns joined in Arrow (no
Python object per rating)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annotation.models import Export
from annotation.services.files import file_write_atomic

if TYPE_CHECKING:  # pandas costs a quarter of a second to import: only when comparing
    import pandas as pd

CHANGES_FILE = "CHANGES.md"


def _frame(table: pa.Table) -> pd.DataFrame:
    """`table` with each list column joined into one text per row, as a data frame."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_list(column.type):
            if not pa.types.is_string(column.type.value_type):
                column = pc.cast(column, pa.list_(pa.string()))
            column = pc.binary_join(column, ";")
        columns[name] = column
    return pa.table(columns).to_pandas()


def changes_between(*, old: pa.Table, new: pa.Table, key: tuple[str, ...]) -> dict[str, int]:
    """Records of `new` against `old`, matched by `key`: added, removed, changed, unchanged."""
    import pandas as pd

    before, after = _frame(old), _frame(new)
    merged = before.merge(after, on=list(key), how="outer", indicator=True, suffixes=("@", ""))
    both = merged[merged["_merge"] == "both"]
    values = [c for c in after.columns if c not in key and c in before.columns]
    differs = pd.Series(False, index=both.index)
    for column in values:
        a, b = both[column + "@"], both[column]
        differs |= ~((a == b) | (a.isna() & b.isna()))
    return {
        "added": int((merged["_merge"] == "right_only").sum()),
        "removed": int((merged["_merge"] == "left_only").sum()),
        "changed": int(differs.sum()),
        "unchanged": int(len(both) - differs.sum()),
    }


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
