"""CHANGES between two versions of a record set (annotation/services/release/release_changes.py):
records matched by their key, every column compared."""

import pytest

pytestmark = pytest.mark.django_db


def test_changes_match_records_by_key_and_compare_every_column():
    import pyarrow as pa

    from annotation.services.release.release_changes import changes_between

    def table(rows):  # type: ignore[no-untyped-def]
        return pa.table(
            {
                "a": pa.array([r[0] for r in rows], pa.int64()),
                "b": pa.array([r[1] for r in rows], pa.int64()),
                "score": pa.array([r[2] for r in rows], pa.float64()),
                "ratings": pa.array([r[3] for r in rows], pa.list_(pa.int8())),
                "workers": pa.array([r[4] for r in rows], pa.list_(pa.string())),
            }
        )

    old = table(
        [(1, 1, 2.0, [1, 3], ["w-x", "w-y"]), (1, 2, None, [2], ["w-x"]), (2, 1, 1.0, [1], ["w"])]
    )
    new = table(
        [
            (1, 1, 2.0, [1, 3], ["w-x", "w-y"]),  # unchanged
            (1, 2, None, [2, 4], ["w-x", "w-z"]),  # a rating added: changed (no score twice)
            (3, 3, 4.0, [4], ["w-z"]),  # added; (2, 1) removed
        ]
    )
    assert changes_between(old=old, new=new, key=("a", "b")) == {
        "added": 1,
        "removed": 1,
        "changed": 1,
        "unchanged": 1,
    }
    assert changes_between(old=new, new=new, key=("a", "b"))["unchanged"] == 3
