"""The agreement's fast paths give the same numbers as the sorting ones: ranks counted per
group for ratings on a narrow integer scale, rater pairs and units numbered without a sort."""

import numpy as np
import pytest

from pipeline import agreement
from pipeline.dense import unique_inverse


@pytest.mark.parametrize("seed", range(10))
def test_counted_ranks_equal_the_sorted_ranks(seed):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 60, 3000)
    x = rng.integers(0, 6, 3000).astype(np.int8)
    counted = agreement._counted_ranks(group, x)
    assert counted is not None
    ranks, constant = counted
    # The float path sorts (the counted one applies to integers only).
    sorted_ranks, sorted_constant = agreement._grouped_ranks(group, x.astype(np.float64))
    assert np.array_equal(ranks, sorted_ranks)
    assert np.array_equal(constant, sorted_constant)


@pytest.mark.parametrize("seed", range(10))
def test_spearman_and_alpha_are_the_same_for_integer_and_float_ratings(seed):
    rng = np.random.default_rng(seed)
    per = rng.integers(1, 7, 300)
    units = np.repeat(np.arange(300) * 3 + 7, per)
    raters = rng.integers(0, 25, units.size) * 11 + 5
    values = rng.integers(0, 6, units.size).astype(np.int8)
    assert agreement.mean_pairwise_spearman_arrays(
        units, raters, values
    ) == agreement.mean_pairwise_spearman_arrays(units, raters, values.astype(np.float64))
    shuffled = rng.permutation(units.size)
    assert agreement.krippendorff_alpha_interval_arrays(
        units[shuffled], values[shuffled]
    ) == agreement.krippendorff_alpha_interval_arrays(
        units[shuffled].astype(np.float64), values[shuffled]
    )


def test_unique_inverse_is_numpys():
    rng = np.random.default_rng(1)
    for values in (rng.integers(100, 900, 500), rng.integers(0, 10**12, 500), np.array([3])):
        ids, inverse = unique_inverse(values)
        want_ids, want_inverse = np.unique(values, return_inverse=True)
        assert np.array_equal(ids, want_ids) and np.array_equal(inverse, want_inverse)
