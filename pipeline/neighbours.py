"""Exact cosine nearest neighbours by blocked matrix products (float32 sgemm)."""

from __future__ import annotations

import numpy as np

from pipeline.errors import InputError

# Rows handed to argpartition at once in top_k: its int64 index output is twice the size
# of the float32 similarities, so it gets a smaller slice than the product block.
_SELECT_ROWS = 256


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm as a new float32 array; zero rows stay zero."""
    matrix = _as_matrix(x, "x")
    # Norms in float64: squaring large float32 values would overflow to inf.
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    scale = np.zeros_like(norms)
    np.divide(1.0, norms, out=scale, where=norms > 0)
    return (matrix * scale[:, None]).astype(np.float32, copy=False)


def nearest_neighbours(
    unit: np.ndarray,
    *,
    start: int = 0,
    stop: int | None = None,
    block_size: int = 2048,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Most cosine-similar other row for each query row ``start..stop`` of ``unit``.

    ``unit`` should already have unit rows (see normalize_rows); similarity is the dot
    product. Every row of ``unit`` is a candidate except the query itself and rows with
    ``valid == False``; ties go to the lowest index. Returns int64 indices and float32
    similarities; a query that is invalid, or has no valid other row, gets -1 and NaN.
    Peak extra memory is about ``block_size x n`` float32.
    """
    matrix = _as_matrix(unit, "unit")
    n = matrix.shape[0]
    stop = n if stop is None else stop
    if not 0 <= start <= n:
        raise InputError(f"must be within 0..{n}, got {start}", field="start")
    if not start <= stop <= n:
        raise InputError(f"must be within {start}..{n}, got {stop}", field="stop")
    if block_size < 1:
        raise InputError(f"must be at least 1, got {block_size}", field="block_size")
    usable = _valid_mask(valid, n)

    count = stop - start
    best_index = np.full(count, -1, dtype=np.int64)
    best_sim = np.full(count, np.nan, dtype=np.float32)
    if usable is None:
        gallery = matrix
        gallery_rows = None
        column_of = np.arange(start, stop, dtype=np.int64)
    else:
        # Drop invalid rows from the gallery once instead of masking every block.
        gallery_rows = np.flatnonzero(usable)
        gallery = matrix[gallery_rows]
        position = np.full(n, -1, dtype=np.int64)
        position[gallery_rows] = np.arange(gallery_rows.size, dtype=np.int64)
        column_of = position[start:stop]
    if count == 0 or gallery.shape[0] == 0:
        return best_index, best_sim

    buffer = np.empty((min(block_size, count), gallery.shape[0]), dtype=np.float32)
    for first in range(start, stop, block_size):
        last = min(first + block_size, stop)
        block = buffer[: last - first]
        _similarities(matrix[first:last], gallery, out=block)
        rows = np.arange(last - first)
        own = column_of[first - start : last - start]
        in_gallery = own >= 0
        block[rows[in_gallery], own[in_gallery]] = -np.inf
        # argmax returns the first maximum, i.e. the lowest gallery (and row) index.
        best = block.argmax(axis=1)
        sims = block[rows, best]
        # -inf means the query itself was the only candidate; invalid queries are dropped.
        found = sims > -np.inf if usable is None else (sims > -np.inf) & usable[first:last]
        chosen = best if gallery_rows is None else gallery_rows[best]
        out = slice(first - start, last - start)
        best_index[out] = np.where(found, chosen, -1)
        best_sim[out] = np.where(found, sims, np.float32(np.nan))
    return best_index, best_sim


def top_k(
    queries: np.ndarray,
    gallery: np.ndarray,
    k: int,
    *,
    block_size: int = 2048,
    exclude: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` gallery rows with the largest dot product for each query row.

    Returns int64 indices and float32 similarities, each ``n_queries x k``, ordered by
    decreasing similarity with ties broken by lower gallery index. ``exclude[i]`` is a
    gallery index query ``i`` must not return (-1 for none).
    """
    q = _as_matrix(queries, "queries")
    g = _as_matrix(gallery, "gallery")
    if q.shape[1] != g.shape[1]:
        raise InputError(
            f"queries have {q.shape[1]} columns but gallery has {g.shape[1]}", field="gallery"
        )
    n_queries, n_gallery = q.shape[0], g.shape[0]
    if block_size < 1:
        raise InputError(f"must be at least 1, got {block_size}", field="block_size")
    skip = _exclude_array(exclude, n_queries, n_gallery)
    available = n_gallery - (1 if skip is not None and (skip >= 0).any() else 0)
    if not 1 <= k <= available:
        raise InputError(
            f"must be between 1 and {available} (gallery size"
            f"{' minus the excluded item' if available < n_gallery else ''}), got {k}",
            field="k",
        )

    indices = np.empty((n_queries, k), dtype=np.int64)
    sims = np.empty((n_queries, k), dtype=np.float32)
    if n_queries == 0:
        return indices, sims
    buffer = np.empty((min(block_size, n_queries), n_gallery), dtype=np.float32)
    for first in range(0, n_queries, block_size):
        last = min(first + block_size, n_queries)
        block = buffer[: last - first]
        _similarities(q[first:last], g, out=block)
        if skip is not None:
            rows = np.flatnonzero(skip[first:last] >= 0)
            block[rows, skip[first:last][rows]] = -np.inf
        for sub in range(0, last - first, _SELECT_ROWS):
            part = block[sub : sub + _SELECT_ROWS]
            chosen = _select_top(part, k)
            chosen_sims = np.take_along_axis(part, chosen, axis=1)
            # Primary key: similarity descending; secondary: index ascending.
            order = np.lexsort((chosen, -chosen_sims), axis=1)
            at = slice(first + sub, first + sub + part.shape[0])
            indices[at] = np.take_along_axis(chosen, order, axis=1)
            sims[at] = np.take_along_axis(chosen_sims, order, axis=1)
    return indices, sims


def _similarities(queries: np.ndarray, gallery: np.ndarray, *, out: np.ndarray) -> None:
    """``out = queries @ gallery.T`` through SGEMM."""
    if queries.shape == gallery.shape and queries.ctypes.data == gallery.ctypes.data:
        # numpy sends A @ A.T on one buffer to SSYRK, which some OpenBLAS builds get wrong
        # (numpy issues 31776, 19685); a copy of the queries keeps it on SGEMM.
        queries = queries.copy()
    np.matmul(queries, gallery.T, out=out)


def _select_top(sims: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k largest values per row (unordered), lowest index on ties."""
    n = sims.shape[1]
    chosen = np.argpartition(sims, n - k, axis=1)[:, n - k :]
    threshold = np.take_along_axis(sims, chosen, axis=1).min(axis=1)
    # argpartition picks arbitrarily among values equal to the k-th largest; redo those rows.
    tied = np.flatnonzero((sims >= threshold[:, None]).sum(axis=1) > k)
    for row in tied.tolist():
        values = sims[row]
        above = np.flatnonzero(values > threshold[row])
        equal = np.flatnonzero(values == threshold[row])[: k - above.size]
        chosen[row] = np.concatenate([above, equal])
    return chosen


def _as_matrix(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` as a C-contiguous finite float32 matrix (no copy when it already is one)."""
    matrix = np.ascontiguousarray(x, dtype=np.float32)
    if matrix.ndim != 2:
        raise InputError(f"must be a 2-D array, got shape {matrix.shape}", field=name)
    if not np.isfinite(matrix).all():
        bad = int(np.flatnonzero(~np.isfinite(matrix).all(axis=1))[0])
        raise InputError("contains NaN or infinity", record=bad, field=name)
    return matrix


def _valid_mask(valid: np.ndarray | None, n: int) -> np.ndarray | None:
    """Boolean mask of length n, or None when every row is valid."""
    if valid is None:
        return None
    mask = np.asarray(valid)
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise InputError(
            f"must be a boolean array of length {n}, got {mask.dtype} {mask.shape}", field="valid"
        )
    return None if mask.all() else mask


def _exclude_array(exclude: np.ndarray | None, n_queries: int, n_gallery: int) -> np.ndarray | None:
    if exclude is None:
        return None
    skip = np.asarray(exclude)
    if skip.shape != (n_queries,) or not np.issubdtype(skip.dtype, np.integer):
        raise InputError(
            f"must be an integer array of length {n_queries}, got {skip.dtype} {skip.shape}",
            field="exclude",
        )
    if n_queries and (skip.min() < -1 or skip.max() >= n_gallery):
        raise InputError(f"values must be -1 or a gallery index < {n_gallery}", field="exclude")
    return skip.astype(np.int64, copy=False)
