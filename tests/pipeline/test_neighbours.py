from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import InputError
from pipeline.neighbours import nearest_neighbours, normalize_rows, top_k


def brute_force(unit: np.ndarray, valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reference: full float64 similarity matrix, one row at a time, first maximum wins."""
    n = unit.shape[0]
    valid = np.ones(n, dtype=bool) if valid is None else valid
    sims = unit.astype(np.float64) @ unit.astype(np.float64).T
    index = np.full(n, -1)
    best = np.full(n, np.nan)
    for i in range(n):
        candidates = [j for j in range(n) if j != i and valid[j]]
        if not valid[i] or not candidates:
            continue
        j = max(candidates, key=lambda c: (sims[i, c], -c))
        index[i], best[i] = j, sims[i, j]
    return index, best


def random_unit(n: int, d: int, seed: int) -> np.ndarray:
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, d)))


def test_normalize_rows() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e30, 1e30], [-2.0, 0.0]])
    before = x.copy()
    unit = normalize_rows(x)
    assert unit.dtype == np.float32
    expected = np.array([[0.6, 0.8], [0, 0], [0.70710677, 0.70710677], [-1, 0]])
    np.testing.assert_allclose(unit, expected, rtol=1e-6)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("bad", [np.zeros(3), np.array([[1.0, np.nan]]), np.array([[np.inf]])])
def test_normalize_rows_rejects_bad_arrays(bad: np.ndarray) -> None:
    with pytest.raises(InputError) as info:
        normalize_rows(bad)
    assert info.value.field == "x"


@pytest.mark.parametrize("block_size", [1, 7, 64, 2048])
def test_nearest_neighbours_match_brute_force(block_size: int) -> None:
    unit = random_unit(150, 12, seed=block_size)
    index, sims = nearest_neighbours(unit, block_size=block_size)
    expected_index, expected_sims = brute_force(unit)
    assert index.dtype == np.int64 and sims.dtype == np.float32
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_allclose(sims, expected_sims, rtol=1e-5, atol=1e-6)
    assert (index != np.arange(150)).all()


@pytest.mark.parametrize(
    ("start", "stop", "block_size"), [(0, 10, 4), (37, 113, 16), (149, 150, 8)]
)
def test_start_stop_slices_agree_with_full_run(start: int, stop: int, block_size: int) -> None:
    unit = random_unit(150, 12, seed=3)
    full_index, full_sims = nearest_neighbours(unit)
    index, sims = nearest_neighbours(unit, start=start, stop=stop, block_size=block_size)
    assert index.shape == (stop - start,)
    np.testing.assert_array_equal(index, full_index[start:stop])
    np.testing.assert_allclose(sims, full_sims[start:stop], rtol=1e-6)


def test_empty_range() -> None:
    index, sims = nearest_neighbours(random_unit(5, 3, seed=0), start=2, stop=2)
    assert index.shape == (0,) and sims.shape == (0,)


def test_ties_go_to_the_lowest_index() -> None:
    # Exact float values: rows 1, 3 and 4 are identical, row 0 equals row 2.
    unit = np.array(
        [[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32
    )
    index, sims = nearest_neighbours(unit, block_size=2)
    np.testing.assert_array_equal(index, [2, 3, 0, 1, 1, 0])
    np.testing.assert_array_equal(sims, [1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(index, brute_force(unit)[0])


def test_zero_rows_have_similarity_zero_to_everything() -> None:
    unit = np.array([[0, 0], [1, 0], [0, 0], [0, 1]], dtype=np.float32)
    index, sims = nearest_neighbours(unit)
    np.testing.assert_array_equal(index, [1, 0, 0, 0])
    np.testing.assert_array_equal(sims, [0, 0, 0, 0])


def test_invalid_rows_are_never_neighbours_and_get_no_answer() -> None:
    unit = random_unit(60, 6, seed=11)
    valid = np.ones(60, dtype=bool)
    valid[[0, 5, 17, 59]] = False
    unit[[5, 17]] = 0
    index, sims = nearest_neighbours(unit, valid=valid, block_size=9)
    expected_index, expected_sims = brute_force(unit, valid)
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_allclose(sims, expected_sims, rtol=1e-5, atol=1e-6)
    assert (index[~valid] == -1).all() and np.isnan(sims[~valid]).all()
    assert not np.isin(index, np.flatnonzero(~valid)).any()


def test_without_any_other_valid_row() -> None:
    unit = random_unit(4, 3, seed=1)
    valid = np.array([False, True, False, False])
    index, sims = nearest_neighbours(unit, valid=valid)
    np.testing.assert_array_equal(index, [-1, -1, -1, -1])
    assert np.isnan(sims).all()
    index, sims = nearest_neighbours(unit[:1])
    assert index.tolist() == [-1] and np.isnan(sims[0])
    index, sims = nearest_neighbours(unit, valid=np.zeros(4, dtype=bool))
    assert index.tolist() == [-1, -1, -1, -1]


def test_result_does_not_depend_on_block_size_or_input_dtype() -> None:
    unit = random_unit(300, 20, seed=5)
    reference = nearest_neighbours(unit, block_size=300)
    for block_size in (1, 13, 299):
        np.testing.assert_array_equal(
            nearest_neighbours(unit, block_size=block_size)[0], reference[0]
        )
    np.testing.assert_array_equal(nearest_neighbours(unit.astype(np.float64))[0], reference[0])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"start": -1}, "start"),
        ({"start": 11}, "start"),
        ({"start": 3, "stop": 2}, "stop"),
        ({"stop": 11}, "stop"),
        ({"block_size": 0}, "block_size"),
        ({"valid": np.ones(9, dtype=bool)}, "valid"),
        ({"valid": np.ones(10)}, "valid"),
    ],
)
def test_nearest_neighbours_rejects_bad_arguments(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        nearest_neighbours(random_unit(10, 3, seed=0), **kwargs)
    assert info.value.field == field


def test_nearest_neighbours_rejects_non_finite_rows() -> None:
    unit = random_unit(10, 3, seed=0)
    unit[4, 1] = np.nan
    with pytest.raises(InputError) as info:
        nearest_neighbours(unit)
    assert (info.value.field, info.value.record) == ("unit", 4)


def reference_top_k(
    queries: np.ndarray, gallery: np.ndarray, k: int, exclude: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    sims = queries.astype(np.float64) @ gallery.astype(np.float64).T
    if exclude is not None:
        rows = np.flatnonzero(exclude >= 0)
        sims[rows, exclude[rows]] = -np.inf
    # A stable sort of the negated similarities keeps lower indices first among ties.
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(sims, order, axis=1)


@pytest.mark.parametrize(("k", "block_size"), [(1, 2048), (5, 7), (40, 33), (300, 64)])
def test_top_k_matches_argsort(k: int, block_size: int) -> None:
    queries = random_unit(70, 16, seed=1)
    gallery = random_unit(300, 16, seed=2)
    indices, sims = top_k(queries, gallery, k, block_size=block_size)
    expected_indices, expected_sims = reference_top_k(queries, gallery, k)
    assert indices.shape == sims.shape == (70, k)
    assert indices.dtype == np.int64 and sims.dtype == np.float32
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(sims, expected_sims, rtol=1e-5, atol=1e-6)


def test_top_k_ties_by_lower_index() -> None:
    # Small integers give exact products, so there are many genuine ties.
    rng = np.random.default_rng(4)
    queries = rng.integers(-1, 2, size=(300, 4)).astype(np.float32)
    gallery = rng.integers(-1, 2, size=(500, 4)).astype(np.float32)
    gallery[::7] = 0
    for k in (1, 3, 10, 77):
        indices, sims = top_k(queries, gallery, k, block_size=64)
        expected_indices, expected_sims = reference_top_k(queries, gallery, k)
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(sims, expected_sims)


def test_top_k_exclude() -> None:
    unit = random_unit(50, 8, seed=9)
    exclude = np.arange(50)
    exclude[::3] = -1
    indices, sims = top_k(unit, unit, 49, exclude=exclude, block_size=16)
    expected_indices, expected_sims = reference_top_k(unit, unit, 49, exclude)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(sims, expected_sims, rtol=1e-5, atol=1e-6)
    rows = np.flatnonzero(exclude >= 0)
    assert not (indices[rows] == exclude[rows, None]).any()
    # Queries without an exclusion find themselves first.
    np.testing.assert_array_equal(indices[::3, 0], np.arange(0, 50, 3))


def test_top_k_whole_gallery_without_exclusion() -> None:
    gallery = random_unit(6, 3, seed=0)
    indices, _ = top_k(gallery[:2], gallery, 6)
    assert sorted(indices[0].tolist()) == list(range(6))


@pytest.mark.parametrize(
    ("k", "exclude", "field"),
    [
        (0, None, "k"),
        (7, None, "k"),
        (6, np.array([-1, 2]), "k"),
        (2, np.array([0, 6]), "exclude"),
        (2, np.array([0, -2]), "exclude"),
        (2, np.array([0]), "exclude"),
        (2, np.array([0.0, 1.0]), "exclude"),
    ],
)
def test_top_k_rejects_bad_arguments(k: int, exclude: np.ndarray | None, field: str) -> None:
    gallery = random_unit(6, 3, seed=0)
    with pytest.raises(InputError) as info:
        top_k(gallery[:2], gallery, k, exclude=exclude)
    assert info.value.field == field


def test_top_k_dimension_mismatch() -> None:
    with pytest.raises(InputError) as info:
        top_k(random_unit(2, 3, seed=0), random_unit(5, 4, seed=0), 1)
    assert info.value.field == "gallery"


def test_top_k_without_queries() -> None:
    indices, sims = top_k(np.zeros((0, 3)), random_unit(5, 3, seed=0), 2)
    assert indices.shape == (0, 2) and sims.shape == (0, 2)
