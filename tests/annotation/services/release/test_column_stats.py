"""`column_mean` / `column_median` give exactly what `statistics` gives on the column's
Python values (Croissant's summaries must not change by a digit)."""

import statistics

import numpy as np
import pyarrow as pa
import pytest

from annotation.services.release.column_stats import column_mean, column_median


@pytest.mark.parametrize("seed", range(20))
def test_the_mean_and_median_are_statistics_own(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    for values in (
        np.round(rng.random(n) * 3, 4),  # CxC's spreads
        rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n),  # any exponent, signs
        np.round(rng.random(n), 1),
    ):
        column = pa.chunked_array([values[: n // 2], values[n // 2 :]])
        assert column_mean(column) == statistics.mean(values.tolist())
        assert column_median(column) == statistics.median(values.tolist())
    whole = rng.integers(-5, 9, n).astype(np.int32)
    median = column_median(pa.array(whole))
    assert median == statistics.median(whole.tolist())
    assert type(median) is type(statistics.median(whole.tolist()))  # an int when n is odd


def test_nulls_are_left_out_of_the_mean_and_none_without_values():
    assert column_mean(pa.array([1.0, None, 2.5, 0.1])) == statistics.mean([1.0, 2.5, 0.1])
    assert column_mean(pa.array([None, None], pa.float64())) is None
    assert column_median(pa.array([3, 1, 2, 4], pa.int32())) == 2.5
