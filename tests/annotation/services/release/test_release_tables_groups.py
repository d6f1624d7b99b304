"""Record sets written a row group at a time, with columns kept dictionary-encoded in memory
(CxC's worker of each rating) written as their plain values."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.services.release import release_tables
from annotation.services.release.release_tables import release_tables_write, table_parquet_bytes


def _tables(n: int) -> tuple[pa.Table, pa.Table]:
    """The same records twice: with dictionary-encoded columns, and plain."""
    rng = np.random.default_rng(3)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(1, 5, n))]).astype(np.int32)
    words = pa.array([f"w-{k:03d}" for k in range(30)])
    codes = rng.integers(0, 30, offsets[-1]).astype(np.int32)
    coded = pa.table(
        {
            "kind": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), ["sis"]),
            "score": pa.array(rng.random(n)),
            "workers": pa.ListArray.from_arrays(
                pa.array(offsets), pa.DictionaryArray.from_arrays(pa.array(codes), words)
            ),
        }
    )
    plain = pa.table(
        {
            "kind": pa.array(["sis"] * n),
            "score": coded.column("score"),
            "workers": pa.ListArray.from_arrays(pa.array(offsets), words.take(pa.array(codes))),
        }
    )
    return coded, plain


def test_dictionary_columns_are_written_as_their_values_a_row_group_at_a_time(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(release_tables, "ROW_GROUP", 100)
    coded, plain = _tables(250)
    entries = release_tables_write(folder=tmp_path, tables={"pairs": coded}, license="CC-BY-4.0")
    path = tmp_path / entries["pairs"]["file"]
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_row_groups == 3 and entries["pairs"]["rows"] == 250
    read = pa.concat_tables(parquet.read_row_group(i) for i in range(3))
    assert read.schema.field("kind").type == pa.string()
    assert read.schema.field("workers").type == pa.list_(pa.string())
    assert read.schema.metadata[b"license"] == b"CC-BY-4.0"
    assert read.to_pylist() == plain.to_pylist()
    # The bytes of one file, whichever way written; the same records plain give the same.
    with_license = coded.replace_schema_metadata({b"license": b"CC-BY-4.0"})
    assert table_parquet_bytes(table=with_license) == path.read_bytes()
    plain = plain.replace_schema_metadata({b"license": b"CC-BY-4.0"})
    assert table_parquet_bytes(table=plain) == path.read_bytes()


def test_an_empty_record_set_is_a_readable_file_with_its_columns(tmp_path):
    coded, _ = _tables(0)
    release_tables_write(folder=tmp_path, tables={"pairs": coded}, license="unlicensed")
    read = pq.read_table(tmp_path / "data" / "pairs.parquet")
    assert read.num_rows == 0 and read.column_names == ["kind", "score", "workers"]
    assert read.schema.field("workers").type == pa.list_(pa.string())


def test_a_missing_list_that_spans_values_is_written_missing(tmp_path, monkeypatch):
    """A list column's missing row may span values of the child (Arrow allows it): each row
    group keeps the span its offsets name, and the row reads back missing."""
    monkeypatch.setattr(release_tables, "ROW_GROUP", 2)
    offsets = pa.array(np.array([0, 2, 5, 6, 8], np.int32))
    values = pa.array(np.arange(1, 9).astype(np.int8))
    lists = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False, False]))
    table = pa.table({"ratings": lists})
    release_tables_write(folder=tmp_path, tables={"pairs": table}, license="unlicensed")
    read = pq.read_table(tmp_path / "data" / "pairs.parquet")
    assert read.column("ratings").to_pylist() == [[1, 2], None, [6], [7, 8]]
