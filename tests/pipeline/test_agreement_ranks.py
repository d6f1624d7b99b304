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


@pytest.mark.parametrize("seed", range(5))
def test_spearman_a_step_of_rater_pairs_at_a_time_is_the_same_float(seed, monkeypatch):
    """Whole groups of rater pairs a step at a time (issue 32's memory limit), each group's
    entries in their order: the same rho per group and the same mean, ids in 4 or 8 bytes."""
    rng = np.random.default_rng(seed)
    per = rng.integers(1, 7, 400)
    units = np.repeat(np.arange(400) * 3 + 7, per)
    raters = rng.integers(0, 20, units.size) * 11 + 5
    values = rng.integers(0, 6, units.size).astype(np.int8)
    whole = agreement.mean_pairwise_spearman_arrays(units, raters, values)
    group = rng.integers(0, 90, 5000)
    group[:90] = np.arange(90)  # every code present, as unique_inverse gives them
    x, y = rng.integers(0, 6, 5000), rng.random(5000)
    at_once = agreement._grouped_spearman(group, x, y, min_common=3)
    monkeypatch.setattr(agreement, "STEP", 37)  # groups larger than a step come whole too
    assert (
        agreement.mean_pairwise_spearman_arrays(
            units.astype(np.int32), raters.astype(np.int32), values
        )
        == whole
    )
    assert whole[1] > 50
    stepped = agreement._spearman_in_steps(group, x, y, min_common=3)
    assert np.array_equal(stepped, at_once, equal_nan=True)


def test_a_narrow_unique_inverse_is_numpys_in_four_bytes(monkeypatch):
    """`narrow`: the same index in int32, made a step of values at a time (any step size)."""
    import pipeline.dense

    monkeypatch.setattr(pipeline.dense, "STEP", 7)
    rng = np.random.default_rng(2)
    for values in (rng.integers(100, 900, 500), rng.integers(0, 10**12, 500), np.array([3])):
        ids, inverse = unique_inverse(values, narrow=True)
        want_ids, want_inverse = np.unique(values, return_inverse=True)
        assert inverse.dtype == np.int32
        assert np.array_equal(ids, want_ids) and np.array_equal(inverse, want_inverse)


@pytest.mark.parametrize("seed", range(8))
def test_alpha_summed_per_run_of_ascending_units_is_the_sorting_paths_float(seed):
    """Units ascending and whole-number ratings (CxC's): summed per run as integers, the
    same float as the path through unique_inverse and float weights (issue 32's memory)."""
    rng = np.random.default_rng(seed)
    per = rng.integers(1, 6, 2000)
    units = np.repeat(np.sort(rng.choice(10**6, 2000, replace=False)), per).astype(np.int32)
    for kind in (np.int8, np.int16, np.int32):
        values = rng.integers(-2, 6, units.size).astype(kind)
        applies, alpha = agreement._alpha_grouped_whole(units, values)
        assert applies and alpha is not None
        # Float units take the sorting path.
        assert alpha == agreement.krippendorff_alpha_interval_arrays(units.astype(float), values)
        assert alpha == agreement.krippendorff_alpha_interval_arrays(units, values)


def test_alpha_summed_per_run_applies_only_where_it_gives_the_same_float():
    units = np.array([1, 1, 2, 2, 3], dtype=np.int64)
    values = np.array([1, 2, 3, 3, 4], dtype=np.int8)
    assert agreement._alpha_grouped_whole(units, values)[0]
    assert not agreement._alpha_grouped_whole(units[::-1].copy(), values)[0]  # not ascending
    assert not agreement._alpha_grouped_whole(units, values.astype(np.int64))[0]
    assert not agreement._alpha_grouped_whole(units, values.astype(np.float64))[0]
    # No unit with two ratings, or no disagreement to expect: None, as the sorting path.
    assert agreement._alpha_grouped_whole(np.arange(4), np.arange(4, dtype=np.int8)) == (
        True,
        None,
    )
    assert agreement._alpha_grouped_whole(units, np.full(5, 3, np.int8)) == (True, None)
    assert agreement.krippendorff_alpha_interval_arrays(units, np.full(5, 3, np.int8)) is None
