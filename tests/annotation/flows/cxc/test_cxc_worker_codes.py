"""Each rating's worker as a code into the run's pseudonyms (the record set's `workers`
column): looked up in a table by row id, or searched where the ids are too sparse for a
table; the same codes either way, and a worker without a pseudonym refused by both."""

import numpy as np
import pytest

from annotation.errors import ServiceError
from annotation.flows.cxc.services import export


@pytest.mark.parametrize("sparse", [False, True])
def test_the_codes_are_each_workers_place_among_the_pseudonyms(sparse):
    rng = np.random.default_rng(3)
    step = 10**9 if sparse else 7  # sparse ids: past the table's limit, searched
    pks = np.sort(rng.choice(5000, 300, replace=False)).astype(np.int64) * step + 1
    workers = pks[rng.integers(0, pks.size, 20_000)]
    codes = export._worker_codes(pks, workers.astype(np.int32 if not sparse else np.int64))
    assert codes.dtype == np.int32
    assert np.array_equal(pks[codes], workers)
    assert np.array_equal(codes, np.searchsorted(pks, workers))


@pytest.mark.parametrize("stranger", [2, 10**12, -5])
def test_a_worker_without_a_pseudonym_is_refused(stranger):
    pks = np.array([1, 3, 8], dtype=np.int64)
    workers = np.array([3, 8, stranger, 1], dtype=np.int64)
    with pytest.raises(ServiceError, match=f"worker {stranger} has no pseudonym"):
        export._worker_codes(pks, workers)


def test_no_ratings_and_no_workers_give_no_codes():
    assert export._worker_codes(np.array([4], dtype=np.int64), np.zeros(0, np.int64)).size == 0
    with pytest.raises(ServiceError):
        export._worker_codes(np.zeros(0, np.int64), np.array([4], dtype=np.int64))
