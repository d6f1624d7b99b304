"""Exact cosine nearest neighbours by blocked matrix products (float32 sgemm)."""

from __future__ import annotations

import numpy as np

from pipeline.embedding_storage import chunk_rows, unit_rows_into
from pipeline.errors import InputError

# float64 values per chunk in normalize_rows (256 KiB: stays in cache).
_NORMALIZE_ELEMENTS = 1 << 15
# Rows handed to the selection at once in top_k: keeps its temporaries (a boolean mask, the
# group maxima, or argpartition's int64 output on the fallback path) small next to the block.
_SELECT_ROWS = 256
# Columns folded into one maximum when _top_rows picks its threshold: the partition then runs
# on 1/32 of a row while the threshold still passes only about k + a few values.
_GROUP = 32
# _top_rows gives up (top_k falls back to argpartition) when more than this fraction of a
# slice passes the threshold, which only many ties at the k-th value cause.
_MAX_PASSING = 1 / 16
# Bound on |dot product| (largest |value| of each side times the width) below which no partial
# sum can reach float32 infinity whatever the summation order, so the products hold no NaN.
_SAFE_BOUND = 1e37
# Gallery rows converted from float16 to float32 at once in top_k (64 MiB at 512-d).
_HALF_GALLERY_ROWS = 32768


def normalize_rows(x: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """Rows scaled to unit L2 norm as a new float32 array; zero rows stay zero.

    With ``in_place`` the result is written over ``x`` when ``x`` is a writeable C-contiguous
    float32 matrix (the caller gives it up; at 2M captions a copy costs the matrix's size);
    the values are the same bit for bit, each chunk being read before it is overwritten.
    A float16 matrix gives float16 unit rows (float16 storage; see top_k).
    """
    matrix = _as_matrix(x, "x", keep_half=True)
    if matrix.dtype == np.float16:
        reuse = in_place and matrix is x and matrix.flags.writeable
        half = matrix if reuse else np.empty(matrix.shape, dtype=np.float16)
        step = chunk_rows(matrix.shape[1])
        for first in range(0, matrix.shape[0], step):
            unit_rows_into(matrix[first : first + step], half[first : first + step])
        return half
    # Norms in float64: squaring large float32 values would overflow to inf.
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    scale = np.zeros_like(norms)
    np.divide(1.0, norms, out=scale, where=norms > 0)
    n, width = matrix.shape
    reuse = in_place and matrix is x and matrix.flags.writeable
    out = matrix if reuse else np.empty((n, width), dtype=np.float32)
    # Scale in float64 and round to float32 as before, but a few rows at a time: a float64
    # copy of the whole matrix costs more (page faults, cache misses) than the arithmetic.
    rows = max(1, _NORMALIZE_ELEMENTS // max(1, width))
    wide = np.empty((min(rows, n), width), dtype=np.float64)
    for first in range(0, n, rows):
        last = min(first + rows, n)
        chunk = wide[: last - first]
        np.multiply(matrix[first:last], scale[first:last, None], out=chunk)
        out[first:last] = chunk
    return out


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


# The most one block of products holds (float32), whatever the gallery's size. Below it (any
# gallery up to ~32,000 rows at 2,048 queries, e.g. COCO's 5k test split) blocks are as they
# always were; a larger gallery gets fewer query rows per block, so memory stays put.
BLOCK_BYTES = 256 * 1024 * 1024


def block_rows(block_size: int, n_gallery: int) -> int:
    """Query rows per block: `block_size`, fewer when that would exceed BLOCK_BYTES."""
    return max(1, min(block_size, BLOCK_BYTES // max(1, 4 * n_gallery)))


def top_k(
    queries: np.ndarray,
    gallery: np.ndarray,
    k: int,
    *,
    block_size: int = 2048,
    exclude: np.ndarray | None = None,
    replace: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` gallery rows with the largest dot product for each query row.

    Returns int64 indices and float32 similarities, each ``n_queries x k``, ordered by
    decreasing similarity with ties broken by lower gallery index. ``exclude[i]`` is a
    gallery index query ``i`` must not return (-1 for none). ``replace = (cols, values)``,
    both ``n_queries x m``, sets query ``i``'s similarity to gallery ``cols[i, j]`` to
    ``values[i, j]`` (finite; -1 in ``cols`` for none) before selecting.

    float16 inputs stay float16 in memory: blocks of them are converted to float32 and the
    products accumulate in float32 (see _top_k_half).
    """
    q = _as_matrix(queries, "queries", keep_half=True)
    g = _as_matrix(gallery, "gallery", keep_half=True)
    if q.shape[1] != g.shape[1]:
        raise InputError(
            f"queries have {q.shape[1]} columns but gallery has {g.shape[1]}", field="gallery"
        )
    n_queries, n_gallery = q.shape[0], g.shape[0]
    if block_size < 1:
        raise InputError(f"must be at least 1, got {block_size}", field="block_size")
    block_size = block_rows(block_size, n_gallery)
    skip = _exclude_array(exclude, n_queries, n_gallery)
    swap = _replace_arrays(replace, n_queries, n_gallery)
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
    # The threshold selection needs NaN-free similarities; NaN only comes from an overflow.
    threshold_ok = _products_stay_finite(q, g)
    if q.dtype == np.float16 or g.dtype == np.float16:
        _top_k_half(q, g, k, skip, swap, threshold_ok, out=(indices, sims))
        return indices, sims
    buffer = np.empty((min(block_size, n_queries), n_gallery), dtype=np.float32)
    for first in range(0, n_queries, block_size):
        last = min(first + block_size, n_queries)
        block = buffer[: last - first]
        # The same products in the same blocks as ever: sgemm rounds an entry differently
        # depending on the block's shape, and callers rely on the exact float32 values.
        _similarities(q[first:last], g, out=block)
        if swap is not None:
            cols, values = swap[0][first:last], swap[1][first:last]
            hit_rows, hit_at = np.nonzero(cols >= 0)
            block[hit_rows, cols[hit_rows, hit_at]] = values[hit_rows, hit_at]
        if skip is not None:
            rows = np.flatnonzero(skip[first:last] >= 0)
            block[rows, skip[first:last][rows]] = -np.inf
        for sub in range(0, last - first, _SELECT_ROWS):
            part = block[sub : sub + _SELECT_ROWS]
            found = _top_rows(part, k) if threshold_ok else None
            at = slice(first + sub, first + sub + part.shape[0])
            indices[at], sims[at] = _top_rows_by_argpartition(part, k) if found is None else found
    return indices, sims


def _top_k_half(
    q: np.ndarray,
    g: np.ndarray,
    k: int,
    skip: np.ndarray | None,
    swap: tuple[np.ndarray, np.ndarray] | None,
    threshold_ok: bool,
    *,
    out: tuple[np.ndarray, np.ndarray],
) -> None:
    """top_k for float16 storage: the gallery a chunk of rows at a time, converted to float32,
    each chunk's top k kept, and the chunks' candidates merged per query (similarity
    descending, lower gallery index on ties, as top_k orders them)."""
    indices, sims = out
    n_gallery = g.shape[0]
    chunk = min(_HALF_GALLERY_ROWS, n_gallery)
    rows = max(1, min(q.shape[0], BLOCK_BYTES // (4 * chunk)))
    buffer = np.empty(rows * chunk, dtype=np.float32)
    for first in range(0, q.shape[0], rows):
        last = min(first + rows, q.shape[0])
        block_q = q[first:last].astype(np.float32)
        found_index: list[np.ndarray] = []
        found_sims: list[np.ndarray] = []
        for start in range(0, n_gallery, chunk):
            stop = min(start + chunk, n_gallery)
            block = buffer[: (last - first) * (stop - start)].reshape(last - first, stop - start)
            np.matmul(block_q, g[start:stop].astype(np.float32).T, out=block)
            if swap is not None:
                cols, values = swap[0][first:last], swap[1][first:last]
                hit_rows, hit_at = np.nonzero((cols >= start) & (cols < stop))
                block[hit_rows, cols[hit_rows, hit_at] - start] = values[hit_rows, hit_at]
            if skip is not None:
                own = skip[first:last]
                hit = np.flatnonzero((own >= start) & (own < stop))
                block[hit, own[hit] - start] = -np.inf
            depth = min(k, stop - start)
            for sub in range(0, last - first, _SELECT_ROWS):
                part = block[sub : sub + _SELECT_ROWS]
                picked = _top_rows(part, depth) if threshold_ok else None
                index, value = _top_rows_by_argpartition(part, depth) if picked is None else picked
                found_index.append(index + start)
                found_sims.append(value)
        per_chunk = -(-(last - first) // _SELECT_ROWS)
        index = np.concatenate(
            [np.concatenate(found_index[c::per_chunk], axis=1) for c in range(per_chunk)]
        )
        value = np.concatenate(
            [np.concatenate(found_sims[c::per_chunk], axis=1) for c in range(per_chunk)]
        )
        order = np.lexsort((index, -value), axis=1)[:, :k]
        indices[first:last] = np.take_along_axis(index, order, axis=1)
        sims[first:last] = np.take_along_axis(value, order, axis=1)


def gallery_ranks(
    queries: np.ndarray,
    gallery: np.ndarray,
    items: np.ndarray,
    *,
    block_size: int = 2048,
    replace: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Where chosen gallery rows rank for each query over the whole gallery.

    ``items`` is ``n_queries x m`` gallery indices (-1 for none); the result holds, for each,
    how many gallery rows have a strictly larger dot product (0 = first), or -1. ``replace``
    is as in `top_k`. The products are computed in the same blocks as `top_k`'s.
    """
    q = _as_matrix(queries, "queries")
    g = _as_matrix(gallery, "gallery")
    if q.shape[1] != g.shape[1]:
        raise InputError(
            f"queries have {q.shape[1]} columns but gallery has {g.shape[1]}", field="gallery"
        )
    wanted = np.asarray(items)
    if wanted.ndim != 2 or wanted.shape[0] != q.shape[0]:
        raise InputError(f"must be n_queries x m, got {wanted.shape}", field="items")
    if wanted.size and (wanted.min() < -1 or wanted.max() >= g.shape[0]):
        raise InputError(f"values must be -1 or a gallery index < {g.shape[0]}", field="items")
    swap = _replace_arrays(replace, q.shape[0], g.shape[0])
    block_size = block_rows(block_size, g.shape[0])  # the same blocks as `top_k`'s
    ranks = np.full(wanted.shape, -1, dtype=np.int64)
    if q.shape[0] == 0:
        return ranks
    buffer = np.empty((min(block_size, q.shape[0]), g.shape[0]), dtype=np.float32)
    for first in range(0, q.shape[0], block_size):
        last = min(first + block_size, q.shape[0])
        block = buffer[: last - first]
        _similarities(q[first:last], g, out=block)
        if swap is not None:
            cols, values = swap[0][first:last], swap[1][first:last]
            hit_rows, hit_at = np.nonzero(cols >= 0)
            block[hit_rows, cols[hit_rows, hit_at]] = values[hit_rows, hit_at]
        chosen = wanted[first:last]
        for row in range(last - first):
            present = chosen[row] >= 0
            targets = block[row, chosen[row][present]]
            ranks[first + row, present] = (block[row][None, :] > targets[:, None]).sum(axis=1)
    return ranks


def _similarities(queries: np.ndarray, gallery: np.ndarray, *, out: np.ndarray) -> None:
    """``out = queries @ gallery.T`` through SGEMM."""
    if queries.shape == gallery.shape and queries.ctypes.data == gallery.ctypes.data:
        # numpy sends A @ A.T on one buffer to SSYRK, which some OpenBLAS builds get wrong
        # (numpy issues 31776, 19685); a copy of the queries keeps it on SGEMM.
        queries = queries.copy()
    np.matmul(queries, gallery.T, out=out)


def _products_stay_finite(queries: np.ndarray, gallery: np.ndarray) -> bool:
    """True when no dot product of a query and a gallery row can overflow float32.

    Every partial sum is at most ``width * max|q| * max|g|`` times (1 + rounding error) in
    any order, so below _SAFE_BOUND the products are finite and hold no NaN.
    """
    if queries.size == 0 or gallery.size == 0:
        return True
    q_max = max(float(queries.max()), -float(queries.min()))
    g_max = max(float(gallery.max()), -float(gallery.min()))
    # The width limit keeps that rounding factor (about 1 + width * 2**-24) below 2.
    width = queries.shape[1]
    return width < 2**22 and width * q_max * g_max < _SAFE_BOUND


def _top_rows(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Indices and values of the k largest per row, best first, lower index on ties.

    Exact for values without NaN: split each row into disjoint groups and take the k-th
    largest group maximum as a threshold; k groups reach it, so at least k values do and the
    top k all pass. Only the few passing values get sorted. Returns None (use
    _top_rows_by_argpartition) when too many values pass or the sort key does not fit.
    """
    rows, n = sims.shape
    col_bits = (n - 1).bit_length()
    row_bits = (rows - 1).bit_length()
    if row_bits + 32 + col_bits > 64:
        return None
    group = max(1, min(_GROUP, n // (4 * k)))
    if group == 1:
        maxima = sims
    else:
        # Group j holds columns j, j + width, ...: an elementwise maximum of contiguous
        # slices, far cheaper than a maximum over short runs of adjacent columns.
        width = n // group
        maxima = sims[:, : width * group].reshape(rows, group, width).max(axis=1)
        if width * group < n:
            maxima = np.concatenate([maxima, sims[:, width * group :]], axis=1)
    count = maxima.shape[1]
    threshold = np.partition(maxima, count - k, axis=1)[:, count - k]
    passing = sims >= threshold[:, None]
    if np.count_nonzero(passing) > max(rows * 4 * k, sims.size * _MAX_PASSING):
        return None
    # flatnonzero: np.nonzero on a 2-D mask is several times slower.
    flat = np.flatnonzero(passing)
    row, col = np.divmod(flat, n)
    # One uint64 per candidate: row, then similarity descending, then column ascending.
    key = (
        (row.astype(np.uint64) << np.uint64(32 + col_bits))
        | (_descending_keys(sims.ravel()[flat]).astype(np.uint64) << np.uint64(col_bits))
        | col.astype(np.uint64)
    )
    key.sort()
    per_row = np.bincount(row, minlength=rows)
    starts = np.cumsum(per_row) - per_row
    best = key[starts[:, None] + np.arange(k)]
    indices = (best & np.uint64((1 << col_bits) - 1)).astype(np.int64)
    return indices, np.take_along_axis(sims, indices, axis=1)


def _descending_keys(values: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is the descending order of float32 ``values``.

    -0.0 gets the key of 0.0: the two compare equal, so their order must come from the index.
    """
    bits = (values + np.float32(0)).view(np.uint32)
    # Non-negative floats order like their bits; flip them below the negative ones, whose
    # bits already grow as the values fall.
    return np.where(bits >= np.uint32(0x80000000), bits, bits ^ np.uint32(0x7FFFFFFF))


def _top_rows_by_argpartition(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """_top_rows for any input (NaN and many ties included), through argpartition."""
    chosen = _select_top(sims, k)
    chosen_sims = np.take_along_axis(sims, chosen, axis=1)
    # Primary key: similarity descending; secondary: index ascending.
    order = np.lexsort((chosen, -chosen_sims), axis=1)
    return np.take_along_axis(chosen, order, axis=1), np.take_along_axis(chosen_sims, order, axis=1)


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


def _as_matrix(x: np.ndarray, name: str, *, keep_half: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous finite float32 matrix (no copy when it already is one);
    with ``keep_half`` a float16 ``x`` stays float16 and is checked a chunk at a time."""
    if keep_half and isinstance(x, np.ndarray) and x.dtype == np.float16:
        half = np.ascontiguousarray(x)
        if half.ndim != 2:
            raise InputError(f"must be a 2-D array, got shape {half.shape}", field=name)
        step = chunk_rows(half.shape[1])
        for first in range(0, half.shape[0], step):
            finite = np.isfinite(half[first : first + step]).all(axis=1)
            if not finite.all():
                bad = first + int(np.flatnonzero(~finite)[0])
                raise InputError("contains NaN or infinity", record=bad, field=name)
        return half
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


def _replace_arrays(
    replace: tuple[np.ndarray, np.ndarray] | None, n_queries: int, n_gallery: int
) -> tuple[np.ndarray, np.ndarray] | None:
    if replace is None:
        return None
    cols = np.asarray(replace[0])
    values = np.asarray(replace[1], dtype=np.float32)
    if (
        cols.ndim != 2
        or cols.shape[0] != n_queries
        or cols.shape != values.shape
        or not np.issubdtype(cols.dtype, np.integer)
    ):
        raise InputError(
            f"must be two n_queries x m arrays (integer columns, values), got "
            f"{cols.dtype} {cols.shape} and {values.shape}",
            field="replace",
        )
    if cols.size and (cols.min() < -1 or cols.max() >= n_gallery):
        raise InputError(f"columns must be -1 or a gallery index < {n_gallery}", field="replace")
    if not np.isfinite(values[cols >= 0]).all():
        raise InputError("replacement similarities must be finite", field="replace")
    return cols.astype(np.int64, copy=False), values


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
