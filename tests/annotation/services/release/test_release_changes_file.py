"""CHANGES against a previous Parquet file read a column at a time, worker pseudonyms
compared as dictionary codes, gives the counts of the whole previous table in memory."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from annotation.services.release import release_changes
from annotation.services.release.release_changes import _PreviousFile, changes_between

KEY = ("kind", "first", "second")


def _pairs(rng: np.random.Generator, n: int) -> pa.Table:
    raters = rng.integers(1, 6, n)
    offsets = np.concatenate([[0], np.cumsum(raters)]).astype(np.int32)
    return pa.table(
        {
            "kind": pa.array(["sis"] * n),
            "first": pa.array([f"a{i}" for i in range(n)]),
            "second": pa.array([f"b{i % 97}" for i in range(n)]),
            "agg_score": pa.array(np.round(rng.random(n) * 5, 2)),
            "ratings": pa.ListArray.from_arrays(
                pa.array(offsets), pa.array(rng.integers(0, 6, offsets[-1]).astype(np.int8))
            ),
            "workers": pa.ListArray.from_arrays(
                pa.array(offsets), pa.array([f"w{k}" for k in rng.integers(0, 40, offsets[-1])])
            ),
        }
    )


def _variants(table: pa.Table, rng: np.random.Generator):
    n = table.num_rows
    yield table
    yield pa.concat_tables([table.slice(0, n // 3), table.slice(n // 3)])  # other chunks
    workers = table.column("workers").combine_chunks()
    names = pc.list_flatten(workers).to_numpy(zero_copy_only=False).copy()
    names[rng.choice(names.size, 7, replace=False)] = "someone-new"
    names[:3] = names[3:6]
    changed = pa.ListArray.from_arrays(workers.offsets, pa.array(names))
    yield table.set_column(table.column_names.index("workers"), "workers", changed)
    mask = np.zeros(n, dtype=bool)
    mask[5:9] = True
    nulls = pc.if_else(pa.array(mask), pa.nulls(n, workers.type), workers)
    yield table.set_column(table.column_names.index("workers"), "workers", nulls)
    yield pa.concat_tables([table.slice(0, 10), table.slice(20)])  # rows removed
    yield table.take(rng.permutation(n))  # reordered: matched by the hash join
    yield pa.concat_tables([table, table.slice(0, 5)])  # a key twice


@pytest.mark.parametrize("seed", range(3))
def test_a_previous_file_read_column_by_column_counts_as_the_whole_table(tmp_path, seed):
    rng = np.random.default_rng(seed)
    old = _pairs(rng, 600)
    path = tmp_path / "old.parquet"
    pq.write_table(old, path, row_group_size=250)  # chunks that are not the new table's
    in_memory = pq.read_table(path)  # plain strings: compared without dictionary codes
    for new in _variants(old, rng):
        want = changes_between(old=in_memory, new=new, key=KEY)
        assert changes_between(old=_PreviousFile(path), new=new, key=KEY) == want
    changed = next(v for n, v in enumerate(_variants(old, rng)) if n == 2)
    assert changes_between(old=_PreviousFile(path), new=changed, key=KEY)["changed"] > 0


def test_new_pseudonyms_kept_as_dictionary_codes_count_as_their_strings(tmp_path):
    """The CxC export keeps each rating's worker as a code into one string per worker; its
    CHANGES compares those codes with the previous file's (another dictionary) without
    decoding either, and counts as the plain strings do."""
    rng = np.random.default_rng(7)
    old = _pairs(rng, 300)
    path = tmp_path / "old.parquet"
    pq.write_table(old, path, row_group_size=120)
    for new in _variants(old, rng):
        workers = new.column("workers").combine_chunks()
        flat = pc.list_flatten(workers)
        encoded = pa.ListArray.from_arrays(
            workers.offsets, pc.dictionary_encode(flat), mask=workers.is_null()
        )
        coded = new.set_column(new.column_names.index("workers"), "workers", encoded)
        assert pa.types.is_dictionary(coded.schema.field("workers").type.value_type)
        want = changes_between(old=pq.read_table(path), new=new, key=KEY)
        assert changes_between(old=_PreviousFile(path), new=coded, key=KEY) == want


def test_keys_kept_as_dictionary_codes_match_the_previous_files_strings(tmp_path):
    """CxC's record set keeps its names as codes (a dictionary per task, chunk by chunk);
    CHANGES matches them with the previous file's strings without decoding them, and finds
    a key twice inside a dictionary that holds a value twice."""
    rng = np.random.default_rng(11)
    old = _pairs(rng, 300)
    path = tmp_path / "old.parquet"
    pq.write_table(old, path, row_group_size=120)

    def coded(table: pa.Table) -> pa.Table:
        for name in ("first", "second"):
            chunks = [pc.dictionary_encode(c) for c in table.column(name).chunks]
            at = table.column_names.index(name)
            table = table.set_column(at, name, pa.chunked_array(chunks))
        return table

    for new in _variants(old, rng):
        want = changes_between(old=pq.read_table(path), new=new, key=KEY)
        assert changes_between(old=_PreviousFile(path), new=coded(new), key=KEY) == want
    # A key twice, in a dictionary that holds its value twice (two codes, one value): matched
    # as the strings are (every copy with every copy), not as distinct codes.
    doubled = pa.concat_tables([old, old.slice(0, 1)])
    path = tmp_path / "doubled.parquet"
    pq.write_table(doubled, path)
    first = pa.DictionaryArray.from_arrays(
        pa.array(np.r_[np.arange(300), 300].astype(np.int32)),
        pa.array([f"a{i}" for i in range(300)] + ["a0"]),
    )
    twice = doubled.set_column(doubled.column_names.index("first"), "first", first)
    want = changes_between(old=pq.read_table(path), new=doubled, key=KEY)
    assert want["unchanged"] == 303  # (a0, b0): two copies matched with two
    assert changes_between(old=_PreviousFile(path), new=twice, key=KEY) == want


@pytest.mark.parametrize("rows", [7, 250, 100_000])
def test_aligned_rows_compared_a_slice_at_a_time_count_every_changed_row(
    tmp_path, monkeypatch, rows
):
    rng = np.random.default_rng(5)
    old = _pairs(rng, 600)
    path = tmp_path / "old.parquet"
    pq.write_table(old, path, row_group_size=250)
    changed = next(v for n, v in enumerate(_variants(old, rng)) if n == 2)
    before, after = old.column("workers").to_pylist(), changed.column("workers").to_pylist()
    want = sum(a != b for a, b in zip(before, after, strict=True))
    assert want > 0
    monkeypatch.setattr(release_changes, "SLICE", rows)
    for new in (changed, pa.concat_tables([changed.slice(0, 200), changed.slice(200)])):
        got = changes_between(old=_PreviousFile(path), new=new, key=KEY)
        assert got == {"added": 0, "removed": 0, "changed": want, "unchanged": 600 - want}
