"""Indirect sampling (CxC) and inter-rater agreement."""

import numpy as np
import pytest

from pipeline.agreement import krippendorff_alpha_interval, mean_pairwise_spearman
from pipeline.cxc_sampling import DEFAULT_BINS, bin_histogram, binned_pairs, cocaption_pairs
from pipeline.errors import InputError


def test_krippendorff_alpha_matches_the_published_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 coders x 12
    # units example with missing values: interval alpha = 0.849.
    nan = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    units = [[c[u] for c in coders if c[u] is not None] for u in range(12)]
    assert round(krippendorff_alpha_interval(units), 3) == 0.849
    assert krippendorff_alpha_interval([[3, 3], [3, 3]]) is None
    assert krippendorff_alpha_interval([[1], [2]]) is None


def test_mean_pairwise_spearman_over_common_items():
    ratings = {
        "p1": {"a": 1, "b": 1, "c": 5},
        "p2": {"a": 2, "b": 2, "c": 4},
        "p3": {"a": 3, "b": 3, "c": 3},
        "p4": {"a": 4, "b": 5, "c": 2},
    }
    mean, pairs = mean_pairwise_spearman(ratings)
    # a and b rank the items alike (rho 1); c ranks them the other way (rho -1 with each).
    assert pairs == 3
    assert mean == pytest.approx(-1 / 3)
    # Raters with fewer than 3 common items, or no variation, are left out.
    assert mean_pairwise_spearman({"p1": {"a": 1, "b": 2}, "p2": {"a": 2, "b": 1}}) == (None, 0)


def test_binned_pairs_spread_over_bins_biased_high_and_seeded():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(20, 16))
    vectors = np.repeat(centres, 5, axis=0) + 0.3 * rng.normal(size=(100, 16))
    pairs = binned_pairs(vectors, n_pairs=60, seed=3)
    again = binned_pairs(vectors, n_pairs=60, seed=3)
    assert pairs == again and len(pairs) == 60
    assert len({(p.i, p.j) for p in pairs}) == 60 and all(p.i < p.j for p in pairs)
    hist = bin_histogram([p.similarity for p in pairs])
    assert hist[-1] >= max(hist[:2])  # high similarity gets the most pairs
    assert sum(hist[:3]) > 0  # but low scores are present too
    assert binned_pairs(vectors, n_pairs=60, seed=4) != pairs


def test_bad_vectors_and_bins_are_refused():
    with pytest.raises(InputError, match="NaN"):
        binned_pairs(np.array([[1.0, np.nan], [0.0, 1.0]]), n_pairs=1, seed=0)
    with pytest.raises(InputError) as caught:
        binned_pairs(np.eye(3), n_pairs=1, seed=0, bins=(0.5, 0.1))
    assert caught.value.field == "bins"
    with pytest.raises(InputError) as caught:
        binned_pairs(np.eye(3), n_pairs=1, seed=0, bins=DEFAULT_BINS, shares=(1.0,))
    assert caught.value.field == "shares"


def test_cocaption_pairs_are_two_captions_of_one_example():
    pairs = cocaption_pairs([[1, 2, 3], [4, 5], [6]], n_pairs=3, seed=0)
    assert len(pairs) == 3 and len(set(pairs)) == 3
    owners = {1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 2}
    assert all(owners[a] == owners[b] and a < b for a, b in pairs)


def test_the_array_versions_agree_with_the_plain_ones():
    from pipeline.agreement import krippendorff_alpha_interval_arrays, mean_pairwise_spearman_arrays

    rng = np.random.default_rng(5)
    units, raters, values = [], [], []
    ratings: dict[int, dict[int, int]] = {}
    for unit in range(300):
        truth = rng.integers(0, 6)
        for rater in rng.choice(12, size=rng.integers(1, 6), replace=False):
            value = int(np.clip(truth + rng.integers(-1, 2), 0, 5))
            units.append(unit)
            raters.append(int(rater))
            values.append(value)
            ratings.setdefault(unit, {})[int(rater)] = value
    plain = krippendorff_alpha_interval([list(r.values()) for r in ratings.values()])
    assert krippendorff_alpha_interval_arrays(np.array(units), np.array(values)) == pytest.approx(
        plain
    )
    rho, pairs = mean_pairwise_spearman(ratings)
    rho_a, pairs_a = mean_pairwise_spearman_arrays(
        np.array(units), np.array(raters), np.array(values)
    )
    assert pairs_a == pairs and rho_a == pytest.approx(rho)


def test_grouped_spearman_equals_scipy_per_group_with_ties_constants_and_small_groups():
    from scipy.stats import spearmanr

    from pipeline.agreement import _grouped_spearman

    rng = np.random.default_rng(11)
    sizes = [1, 2, 3, 4, 7, 30] * 40
    group = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.integers(0, 6, group.size).astype(float)
    y = rng.integers(0, 6, group.size).astype(float)
    x[group == 5] = 3.0  # a constant rater: no rho
    shuffle = rng.permutation(group.size)  # groups need not be contiguous
    group, x, y = group[shuffle], x[shuffle], y[shuffle]
    rho = _grouped_spearman(group, x, y, min_common=3)
    for g, size in enumerate(sizes):
        gx, gy = x[group == g], y[group == g]
        if size < 3 or np.ptp(gx) == 0 or np.ptp(gy) == 0:
            assert np.isnan(rho[g])
        else:
            assert rho[g] == pytest.approx(spearmanr(gx, gy).statistic, abs=1e-12)
