from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import InputError
from pipeline.neighbours import (
    _products_stay_finite,
    _similarities,
    _top_rows,
    _top_rows_by_argpartition,
    block_rows,
    gallery_ranks,
    nearest_neighbours,
    normalize_rows,
    top_k,
)


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


def test_blocks_hold_at_most_the_budget_whatever_the_gallery(monkeypatch) -> None:
    from pipeline import neighbours

    assert block_rows(2048, 25_000) == 2048  # COCO 5k test's captions: blocks as before
    assert block_rows(2048, 2_025_200) * 2_025_200 * 4 <= neighbours.BLOCK_BYTES
    assert block_rows(2048, 10**12) == 1
    queries, gallery = random_unit(70, 16, seed=1), random_unit(300, 16, seed=2)
    expected = top_k(queries, gallery, 5)
    ranks = gallery_ranks(queries, gallery, expected[0])
    monkeypatch.setattr(neighbours, "BLOCK_BYTES", 3 * 300 * 4)  # three query rows a block
    assert block_rows(2048, 300) == 3
    indices, sims = top_k(queries, gallery, 5)
    np.testing.assert_array_equal(indices, expected[0])
    np.testing.assert_allclose(sims, expected[1], rtol=1e-6)
    np.testing.assert_array_equal(gallery_ranks(queries, gallery, indices), ranks)


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


def stable_top(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference on the float32 values themselves: a stable sort of the negated values."""
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(sims, order, axis=1)


def assert_same_top(found: tuple[np.ndarray, np.ndarray], expected: tuple[np.ndarray, ...]) -> None:
    assert found[0].dtype == np.int64 and found[1].dtype == np.float32
    np.testing.assert_array_equal(found[0], expected[0])
    # Bit patterns, so that -0.0 and 0.0 count as different.
    np.testing.assert_array_equal(found[1].view(np.uint32), expected[1].view(np.uint32))


def tricky_rows(rows: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """Float32 matrices with continuous values, heavy ties, duplicated columns, -inf
    (an excluded item), both zeros, and rows sorted so the top sits in one corner."""
    rng = np.random.default_rng(seed)
    continuous = rng.standard_normal((rows, n)).astype(np.float32)
    ties = rng.integers(-3, 4, size=(rows, n)).astype(np.float32)
    signed_zeros = ties.copy()
    signed_zeros[rng.random((rows, n)) < 0.3] = -0.0
    with_excluded = continuous.copy()
    with_excluded[np.arange(rows), rng.integers(0, n, size=rows)] = -np.inf
    return {
        "continuous": continuous,
        "ties": ties,
        "duplicated": continuous[:, rng.integers(0, max(1, n // 5), size=n)],
        "signed zeros": signed_zeros,
        "excluded": with_excluded,
        "sorted": np.sort(continuous, axis=1),
    }


@pytest.mark.parametrize(
    ("rows", "n", "k"),
    [(1, 1, 1), (5, 9, 9), (7, 40, 3), (64, 301, 1), (64, 301, 25), (33, 4000, 25), (3, 5000, 7)],
)
def test_threshold_selection_matches_a_full_sort(rows: int, n: int, k: int) -> None:
    for name, matrix in tricky_rows(rows, n, seed=rows * n + k).items():
        expected = stable_top(matrix, k)
        found = _top_rows(matrix, k)
        # It may only give up when a seventh of each row ties at the top value.
        assert found is not None or name in ("ties", "signed zeros"), name
        if found is not None:
            assert_same_top(found, expected)
        # The argpartition path it falls back to gives the same answer.
        assert_same_top(_top_rows_by_argpartition(matrix, k), expected)


def test_threshold_selection_gives_up_on_mass_ties() -> None:
    matrix = np.zeros((4, 1000), dtype=np.float32)
    matrix[:, 500] = 1
    assert _top_rows(matrix, 3) is None
    # top_k falls back and still breaks the ties by the lower index.
    queries = np.ones((4, 1), dtype=np.float32)
    gallery = np.zeros((1000, 1), dtype=np.float32)
    gallery[500] = 1
    indices, sims = top_k(queries, gallery, 3)
    np.testing.assert_array_equal(indices, [[500, 0, 1]] * 4)
    np.testing.assert_array_equal(sims, [[1, 0, 0]] * 4)


@pytest.mark.parametrize(("block_size", "k"), [(1, 3), (13, 25), (64, 500), (2048, 500), (50, 1)])
def test_top_k_exact_on_integer_data(block_size: int, k: int) -> None:
    # Small integers give exact float32 products, so float64 sorting is the exact answer;
    # duplicated gallery rows and zero rows give many ties, some at the k-th value.
    rng = np.random.default_rng(k + block_size)
    queries = rng.integers(-2, 3, size=(150, 6)).astype(np.float32)
    gallery = rng.integers(-2, 3, size=(500, 6)).astype(np.float32)
    gallery[300:400] = gallery[:100]
    gallery[::11] = 0
    indices, sims = top_k(queries, gallery, k, block_size=block_size)
    expected_indices, expected_sims = reference_top_k(queries, gallery, k)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(sims, expected_sims)
    exclude = rng.integers(-1, 500, size=150)
    indices, sims = top_k(queries, gallery, min(k, 499), block_size=block_size, exclude=exclude)
    expected_indices, expected_sims = reference_top_k(queries, gallery, min(k, 499), exclude)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(sims, expected_sims)


@pytest.mark.parametrize("block_size", [7, 100, 2048])
def test_top_k_equals_a_full_sort_of_its_products(block_size: int) -> None:
    # Continuous values at a width where the threshold groups columns (n >= 128 k).
    queries = random_unit(120, 24, seed=block_size)
    gallery = random_unit(4000, 24, seed=block_size + 1)
    gallery[2000:2100] = gallery[:100]
    indices, sims = top_k(queries, gallery, 25, block_size=block_size)
    expected = [np.empty((120, 25), dtype=np.int64), np.empty((120, 25), dtype=np.float32)]
    for first in range(0, 120, block_size):
        # Products of the very blocks top_k multiplies: sgemm rounding depends on the shape.
        block = np.empty((min(block_size, 120 - first), 4000), dtype=np.float32)
        _similarities(queries[first : first + block_size], gallery, out=block)
        at = slice(first, first + block.shape[0])
        expected[0][at], expected[1][at] = stable_top(block, 25)
    assert_same_top((indices, sims), expected)
    # Every gallery row, in order, when k is the gallery size.
    whole, _ = top_k(queries[:3], gallery[:300], 300, block_size=2)
    np.testing.assert_array_equal(np.sort(whole, axis=1), np.tile(np.arange(300), (3, 1)))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_top_k_overflowing_products_use_the_argpartition_path() -> None:
    queries = np.array([[1e30, 1e30], [1.0, 0.0]], dtype=np.float32)
    gallery = np.array([[1e30, -1e30], [1e30, 1e30], [-1e30, 0], [0, 1]], dtype=np.float32)
    assert not _products_stay_finite(queries, gallery)
    assert _products_stay_finite(queries / 1e30, gallery / 1e30)
    products = np.empty((2, 4), dtype=np.float32)
    _similarities(queries, gallery, out=products)
    found = top_k(queries, gallery, 2)
    assert_same_top(found, _top_rows_by_argpartition(products, 2))


def test_normalize_rows_rounds_like_one_float64_product() -> None:
    # Several of normalize_rows' row chunks, float64 input, zero rows, large values.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((700, 300)) * np.logspace(-20, 20, 700)[:, None]
    x[::9] = 0
    for data in (x, x.astype(np.float32)):
        matrix = np.asarray(data, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        expected = (matrix * scale[:, None]).astype(np.float32)
        np.testing.assert_array_equal(
            normalize_rows(data).view(np.uint32), expected.view(np.uint32)
        )
