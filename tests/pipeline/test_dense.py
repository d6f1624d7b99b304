"""`pipeline/dense.py`: np.unique's answers by other means, compared with np.unique's."""

import numpy as np
import pytest

from pipeline.dense import distinct_ints


@pytest.mark.parametrize(
    "values",
    [
        np.zeros(0, dtype=np.int64),
        np.array([3, 1, 3, 2, -5, 1], dtype=np.int32),
        np.array([[4, 4], [0, 9]], dtype=np.int16),
        np.random.default_rng(0).integers(0, 2**40, 50_000),
        np.random.default_rng(1).integers(0, 50, 50_000).astype(np.uint8),
    ],
)
def test_distinct_ints_is_np_unique(values):
    want, got = np.unique(values), distinct_ints(values)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert (got == want).all()
