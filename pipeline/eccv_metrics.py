"""ECCV Caption retrieval metrics (mAP@R, R-Precision, R@K) on ranked id lists.

Definitions follow the paper (Musgrave et al.'s mAP@R and R-Precision) and agree with the
``eccv-caption`` package's ``compute_eccv_metrics`` / ``compute_r_at_k``: for a query with R
distinct positives and ``hit(i)`` = 1 when the i-th retrieved id is a positive,

* ``P@i = (hits among the first i) / i``
* mAP@R ``= (1/R) * sum_{i=1..R} P@i * hit(i)``
* R-Precision ``= P@R``
* R@K ``= 1`` if any of the first K ids is a positive, else 0 (a hit rate, as in COCO
  retrieval papers, not the fraction of positives found).

Means are plain averages over queries, reported as fractions in 0..1 like the package
(the paper's tables show percentages).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice
from pathlib import Path
from typing import Any, cast

import numpy as np

from pipeline.errors import InputError
from pipeline.jsonio import decode_json, describe
from pipeline.neighbours import normalize_rows, top_k


@dataclass(frozen=True, eq=False)
class RetrievalScores:
    """Mean and per-query metrics; per-query arrays follow ``query_ids``."""

    map_at_r: float
    r_precision: float
    recall_at_k: dict[int, float]
    query_ids: np.ndarray
    per_query_map_at_r: np.ndarray
    per_query_r_precision: np.ndarray
    per_query_recall_at_k: dict[int, np.ndarray]
    # Queries in ``rankings`` without positives; the metrics skip them, as eccv-caption does.
    ignored_queries: int = 0


class RankedLists(dict[int, list[int]]):
    """Top-k lists as the plain dict every reader expects (query id -> gallery ids, best
    first), keeping the matrix they were read from so `retrieval_metrics` can score it whole
    instead of list by list: `query_ids` (n,) and `ranked` (n x k) gallery ids. Rows come from
    a top-k selection (`rankings_from_embeddings`), which never repeats a gallery row, so no
    row repeats an id. Read-only, so the dict and the matrix cannot drift apart."""

    def __init__(self, query_ids: np.ndarray, ranked: np.ndarray) -> None:
        super().__init__(zip(query_ids.tolist(), ranked.tolist(), strict=True))
        self.query_ids = query_ids
        self.ranked = ranked

    def __setitem__(self, key: int, value: list[int]) -> None:
        raise TypeError("RankedLists is read-only; copy it with dict(...) to change it")

    def __delitem__(self, key: int) -> None:
        raise TypeError("RankedLists is read-only; copy it with dict(...) to change it")

    def __reduce__(self) -> tuple[type[RankedLists], tuple[np.ndarray, np.ndarray]]:
        return (RankedLists, (self.query_ids, self.ranked))  # pickle fills no items one by one


def map_at_r(positives: Collection[int], ranking: Sequence[int]) -> float:
    """mAP@R of one ranked list (see the module docstring)."""
    hits, r = _query_hits(positives, ranking, 0)
    precision = np.cumsum(hits[:r]) / np.arange(1, r + 1)
    return float((precision * hits[:r]).sum() / r)


def r_precision(positives: Collection[int], ranking: Sequence[int]) -> float:
    """R-Precision: the fraction of positives among the first R retrieved ids."""
    hits, r = _query_hits(positives, ranking, 0)
    return float(hits[:r].sum() / r)


def recall_at_k(positives: Collection[int], ranking: Sequence[int], k: int) -> float:
    """1.0 when one of the first ``k`` retrieved ids is a positive, else 0.0.

    Like retrieval_metrics, needs a ranking of at least ``max(R, k)`` distinct ids.
    """
    _check_ks((k,))
    hits, _ = _query_hits(positives, ranking, k)
    return float(hits[:k].any())


def retrieval_metrics(
    positives: Mapping[int, Collection[int]],
    rankings: Mapping[int, Sequence[int]],
    *,
    ks: Sequence[int] = (1, 5, 10),
    file: str = "rankings",
) -> RetrievalScores:
    """mAP@R, R-Precision and R@K over every query of ``positives``, in its order.

    Every query needs a ranking at least ``max(R, max(ks))`` long, where R is its number of
    distinct positives, whose ids up to there are distinct; otherwise InputError names
    ``file``, the query id (record) and field ``ranking``. Ids past that prefix are not read
    (as eccv-caption does not): a ranking file's whole lists are checked where it is read
    (`pipeline.eccv_embeddings.parse_ranked_lists`). A query with no positives is an error
    too (field ``positives``): its metrics would be 0/0.
    """
    _check_ks(ks)
    if isinstance(rankings, RankedLists):
        return _table_metrics(positives, rankings.query_ids, rankings.ranked, ks, file)
    query_ids, table, keys = _prefix_table(positives, rankings, max(ks), file)
    scores = _table_metrics(positives, query_ids, table, ks, file, keys)
    return replace(scores, ignored_queries=len(rankings.keys() - positives.keys()))


def _prefix_table(
    positives: Mapping[int, Collection[int]],
    rankings: Mapping[int, Sequence[int]],
    deepest: int,
    file: str,
) -> tuple[np.ndarray, np.ndarray, PositiveKeys]:
    """The prefixes of plain-dict rankings that the metrics read, checked, as one matrix
    (rows shorter than the widest padded with an id no query has as a positive), so that
    dict input is scored by the same whole-array steps as a ranked matrix. Python touches
    each list twice (its length, its prefix); every check runs on arrays."""
    query_ids = np.fromiter(positives.keys(), dtype=np.int64, count=len(positives))
    if query_ids.size == 0:
        raise InputError("no queries with positives", file=file, field="positives")
    found = [rankings.get(q) for q in positives]
    if None in found:
        missing = next(q for q, ranking in zip(positives, found, strict=True) if ranking is None)
        raise InputError("no ranking for this query", file=file, record=missing, field="ranking")
    lists = cast(list[Sequence[int]], found)
    keys = _positive_keys(positives, query_ids.size, file)
    r_arr, span = keys.r, keys.span
    if (r_arr == 0).any():
        empty = int(query_ids[np.flatnonzero(r_arr == 0)[0]])
        raise InputError("the query has no positives", file=file, record=empty, field="positives")
    needed = np.maximum(r_arr, deepest)
    have = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    _check_long_enough(have, r_arr, deepest, query_ids, file)
    # Each list's prefix read straight into the array (no sliced copies to make and free).
    prefixes = chain.from_iterable(map(islice, lists, needed.tolist()))
    flat = np.fromiter(prefixes, dtype=np.int64, count=int(needed.sum()))
    if flat.min() < 0:
        raise InputError("ids must be non-negative integers", file=file, field="ranking")
    filler = max(int(flat.max()), span - 1) + 1  # never a positive
    table = np.full((query_ids.size, int(needed.max())), filler, dtype=np.int64)
    starts = np.cumsum(needed) - needed
    table[
        np.repeat(np.arange(query_ids.size), needed),
        np.arange(flat.size) - np.repeat(starts, needed),
    ] = flat
    ordered = np.sort(table, axis=1)
    repeats = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != filler)).sum(axis=1)
    if repeats.any():
        row = int(np.flatnonzero(repeats)[0])
        raise InputError(
            f"ranking repeats {int(repeats[row])} id(s)",
            file=file,
            record=int(query_ids[row]),
            field="ranking",
        )
    return query_ids, table, keys


def _check_long_enough(
    have: np.ndarray, r: np.ndarray, deepest: int, query_ids: np.ndarray, file: str
) -> None:
    """Every query's ranking holds at least max(R, largest K) ids (`have` per query)."""
    needed = np.maximum(r, deepest)
    if (have < needed).any():
        short = int(np.flatnonzero(have < needed)[0])
        raise InputError(
            f"ranking has {int(have[short])} ids but needs at least {int(needed[short])} "
            f"(R = {int(r[short])} positives, largest K = {deepest})",
            file=file,
            record=int(query_ids[short]),
            field="ranking",
        )


@dataclass(frozen=True)
class PositiveKeys:
    """Positives as sorted distinct (query row, id) keys `row * span + id` (repeats inside
    one query's list count once) and each query's number of distinct positives R."""

    keys: np.ndarray
    r: np.ndarray
    span: int

    def widened(self, largest: int) -> PositiveKeys:
        """The same keys with a span above `largest` too (a ranked id is looked up as
        `row * span + id`)."""
        if largest < self.span:
            return self
        span = largest + 1
        rows, ids = np.divmod(self.keys, self.span)
        return PositiveKeys(rows * span + ids, self.r, span)


def _positive_keys(positives: Mapping[int, Collection[int]], n: int, file: str) -> PositiveKeys:
    counts = np.fromiter(map(len, positives.values()), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(positives.values()), dtype=np.int64, count=counts.sum())
    if flat.min(initial=0) < 0:
        raise InputError("ids must be non-negative integers", file=file, field="positives")
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    span = int(flat.max(initial=0)) + 1
    keys = np.sort(owner * span + flat)
    keys = keys[np.diff(keys, prepend=-1) != 0]  # keys are >= 0: the first is always kept
    return PositiveKeys(keys, np.bincount(keys // span, minlength=n), span)


def _table_metrics(
    positives: Mapping[int, Collection[int]],
    table_ids: np.ndarray,
    table_ranked: np.ndarray,
    ks: Sequence[int],
    file: str,
    known_keys: PositiveKeys | None = None,
) -> RetrievalScores:
    """`retrieval_metrics` over a ranked matrix: the same numbers from whole-array steps (one
    searchsorted for every hit), reading only the columns the metrics look at. With
    `known_keys` (the positives' keys, made by `_prefix_table`), the matrix's rows are the
    positives' queries in order, so no row is looked up."""
    deepest = max(ks)
    rows: np.ndarray | slice
    if known_keys is not None:
        query_ids, rows = table_ids, slice(None)
    else:
        query_ids = np.fromiter(positives.keys(), dtype=np.int64, count=len(positives))
        if query_ids.size == 0:
            raise InputError("no queries with positives", file=file, field="positives")
        order = np.argsort(table_ids, kind="stable")
        sorted_ids = table_ids[order]
        place = np.minimum(np.searchsorted(sorted_ids, query_ids), sorted_ids.size - 1)
        found = sorted_ids[place] == query_ids
        if not found.all():
            missing = int(query_ids[np.flatnonzero(~found)[0]])
            raise InputError(
                "no ranking for this query", file=file, record=missing, field="ranking"
            )
        rows = order[place]
    made = known_keys or _positive_keys(positives, query_ids.size, file)
    made = made.widened(int(table_ranked.max(initial=0)))
    keys, r_arr, span = made.keys, made.r, made.span
    if (r_arr == 0).any():
        empty = int(query_ids[np.flatnonzero(r_arr == 0)[0]])
        raise InputError("the query has no positives", file=file, record=empty, field="positives")
    depth = table_ranked.shape[1]
    needed = np.maximum(r_arr, deepest)
    _check_long_enough(np.full(r_arr.size, depth), r_arr, deepest, query_ids, file)
    width = int(needed.max())
    ranked = table_ranked[rows, :width]
    wanted = np.arange(query_ids.size, dtype=np.int64)[:, None] * span + ranked
    at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    hits = keys[at] == wanted
    seen = np.cumsum(hits, axis=1, dtype=np.int64)
    rank = np.arange(width, dtype=np.int64)
    precision_at = seen / (rank + 1)
    contribution = np.where(hits & (rank < r_arr[:, None]), precision_at, 0.0)
    per_map = contribution.sum(axis=1) / r_arr
    every = np.arange(query_ids.size)
    per_rp = seen[every, r_arr - 1] / r_arr
    per_recall = {k: (seen[:, k - 1] > 0).astype(np.float64) for k in ks}
    ignored = 0 if known_keys is not None else int((~np.isin(table_ids, query_ids)).sum())
    return RetrievalScores(
        map_at_r=float(per_map.mean()),
        r_precision=float(per_rp.mean()),
        recall_at_k={k: float(values.mean()) for k, values in per_recall.items()},
        query_ids=query_ids,
        per_query_map_at_r=per_map,
        per_query_r_precision=per_rp,
        per_query_recall_at_k=per_recall,
        ignored_queries=ignored,
    )


def rankings_from_embeddings(
    query_ids: Sequence[int] | np.ndarray,
    query_vecs: np.ndarray,
    gallery_ids: Sequence[int] | np.ndarray,
    gallery_vecs: np.ndarray,
    k: int,
    *,
    block_size: int = 2048,
    replace: tuple[np.ndarray, np.ndarray] | None = None,
    in_place: bool = False,
) -> RankedLists:
    """The ``k`` most cosine-similar gallery ids per query id, best first.

    Ties go to the earlier gallery row (see pipeline.neighbours.top_k); ``replace`` gives
    cosines to use instead for some (query row, gallery row) pairs. With ``in_place`` the
    gallery matrix is normalised over itself (see normalize_rows).
    """
    queries = _ids_array(query_ids, "query_ids", np.shape(query_vecs), "query_vecs")
    gallery = _ids_array(gallery_ids, "gallery_ids", np.shape(gallery_vecs), "gallery_vecs")
    if not 1 <= k <= gallery.size:
        raise InputError(f"must be between 1 and {gallery.size} (gallery size), got {k}", field="k")
    index, _ = top_k(
        normalize_rows(query_vecs),
        normalize_rows(gallery_vecs, in_place=in_place),
        k,
        block_size=block_size,
        replace=replace,
    )
    return RankedLists(queries, gallery[index])


def load_positives(path: str | Path) -> dict[int, list[int]]:
    """Read an ECCV positives file (``eccv_image_to_caption.json`` layout)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    return parse_positives(raw, file=name)


def parse_positives(raw: bytes | str, *, file: str) -> dict[int, list[int]]:
    """Validate ``{"<query id>": [positive ids]}``: int ids, non-empty, no repeats."""
    doc = decode_json(raw, file=file)
    if not isinstance(doc, dict):
        raise InputError(f"top level must be a JSON object, got {describe(doc)}", file=file)
    out: dict[int, list[int]] = {}
    for key, value in doc.items():
        query = parse_id_key(key, file=file, field="query id")
        out[query] = _id_list(value, file=file, record=query, field="positives")
    return out


def parse_id_key(key: str, *, file: str, field: str) -> int:
    """A JSON object key holding a non-negative decimal id, e.g. ``"191069"``."""
    if not (key.isascii() and key.isdigit()) or (len(key) > 1 and key[0] == "0"):
        raise InputError(f"not a decimal id: {key[:40]!r}", file=file, record=key, field=field)
    return int(key)


def _id_list(value: Any, *, file: str, record: int, field: str) -> list[int]:
    if not isinstance(value, list) or not value:
        raise InputError(
            f"must be a non-empty list of ids, got {describe(value)}",
            file=file,
            record=record,
            field=field,
        )
    seen: set[int] = set()
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int):
            raise InputError(
                f"item {position} must be an integer id, got {describe(item)}",
                file=file,
                record=record,
                field=field,
            )
        if item in seen:
            raise InputError(f"id {item} appears twice", file=file, record=record, field=field)
        seen.add(item)
    return value


def _hit_list(
    positives: Collection[int], ranking: Sequence[int], deepest: int
) -> tuple[list[bool], int]:
    """Whether each of the first ``max(R, deepest)`` ranked ids is a positive, and R."""
    positive_set = set(positives)
    r = len(positive_set)
    if r == 0:
        raise InputError("the query has no positives", field="positives")
    # Set of the ranking catches repeats; a repeated id would count twice in P@i.
    distinct = len(set(ranking))
    if distinct != len(ranking):
        raise InputError(f"ranking repeats {len(ranking) - distinct} id(s)", field="ranking")
    needed = max(r, deepest)
    if len(ranking) < needed:
        raise InputError(
            f"ranking has {len(ranking)} ids but needs at least {needed} "
            f"(R = {r} positives, largest K = {deepest})",
            field="ranking",
        )
    return [item in positive_set for item in ranking[:needed]], r


def _query_hits(
    positives: Collection[int], ranking: Sequence[int], deepest: int
) -> tuple[np.ndarray, int]:
    hit_list, r = _hit_list(positives, ranking, deepest)
    return np.asarray(hit_list, dtype=bool), r


def _check_ks(ks: Sequence[int]) -> None:
    if len(ks) == 0:
        raise InputError("need at least one K", field="ks")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise InputError(f"K must be a positive integer, got {k!r}", field="ks")


def _ids_array(
    ids: Sequence[int] | np.ndarray, name: str, shape: tuple[int, ...], vecs: str
) -> np.ndarray:
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise InputError("must be a 1-D sequence of integer ids", field=name)
    if len(shape) != 2 or shape[0] != array.size:
        raise InputError(
            f"{array.size} ids but {vecs} has shape {shape}; need one row per id", field=vecs
        )
    unique, counts = np.unique(array, return_counts=True)
    if (counts > 1).any():
        raise InputError("id appears twice", record=int(unique[counts > 1][0]), field=name)
    return array.astype(np.int64, copy=False)
