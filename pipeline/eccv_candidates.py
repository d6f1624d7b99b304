"""ECCV Caption candidates: model proposals, merging, gold items, HIT packing, query sampling.

The paper (Section 3.2): "We pre-select top-5 captions and images retrieved by the five
models. After we remove the duplicate pairs from the (1,261 + 1,333) x 5 x 5 = 64,850
pairs, 46,424 pairs remain." and "Each HIT contains 20 pairs consisting of 18
machine-retrieved pairs to be annotated, 1 true positive (i.e., an original positive
pair), and 1 true negative (random pair, not in the top-25 of any model)."

Pairs are always ``(image_id, caption_id)``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.eccv_vocabulary import (
    CANDIDATE,
    DIRECTIONS,
    GOLD_NEGATIVE,
    GOLD_POSITIVE,
    I2T,
    NEGATIVE_ANSWERS,
    POSITIVE_ANSWERS,
)
from pipeline.errors import InputError

Pair = tuple[int, int]

# Pair keys: image id in the high 32 bits, caption id in the low 32 (COCO ids are far smaller).
_SHIFT = 32
_ID_LIMIT = 1 << _SHIFT
_MASK = _ID_LIMIT - 1

# Gold-negative sampling enumerates the whole grid when few pairs are free and the grid
# is at most this big; otherwise it draws and rejects.
_ENUMERATE_LIMIT = 10_000_000


@dataclass(frozen=True)
class ModelRanking:
    """One model's ranked retrievals: ``i2t`` image id -> caption ids, ``t2i`` caption id ->
    image ids, best first."""

    i2t: Mapping[int, Sequence[int]]
    t2i: Mapping[int, Sequence[int]]


@dataclass(frozen=True, order=True)
class Proposal:
    """``model`` ranked the pair at ``rank`` (1-based) for the query of ``direction``
    (the image for ``i2t``, the caption for ``t2i``)."""

    direction: str
    model: str
    rank: int


@dataclass(frozen=True)
class Candidate:
    """A merged candidate pair and every proposal of it, sorted by direction, model, rank."""

    image_id: int
    caption_id: int
    proposals: tuple[Proposal, ...]

    @property
    def pair(self) -> Pair:
        return (self.image_id, self.caption_id)

    @property
    def models(self) -> frozenset[str]:
        return frozenset(proposal.model for proposal in self.proposals)

    @property
    def directions(self) -> frozenset[str]:
        return frozenset(proposal.direction for proposal in self.proposals)

    @property
    def best_rank(self) -> int:
        return min(proposal.rank for proposal in self.proposals)


@dataclass(frozen=True)
class ProposalCounts:
    """Proposals before merging (one per model, query and rank) and pairs after."""

    proposed: int
    unique: int
    per_model: dict[str, int]
    per_direction: dict[str, int]


@dataclass(frozen=True)
class HitItem:
    """One question of a HIT; ``expected`` (server side only) is empty for candidates."""

    position: int
    image_id: int
    caption_id: int
    kind: str
    expected: frozenset[str]

    @property
    def is_gold(self) -> bool:
        return self.kind != CANDIDATE


@dataclass(frozen=True)
class HitPlan:
    """The questions of one HIT in display order."""

    index: int
    items: tuple[HitItem, ...]


@dataclass(frozen=True)
class QuerySample:
    """Query ids chosen for annotation, ascending."""

    image_ids: tuple[int, ...]
    caption_ids: tuple[int, ...]


class PairSet(AbstractSet[Pair]):
    """An immutable set of ``(image_id, caption_id)`` pairs held as sorted unique int64 keys
    ``image_id << 32 | caption_id``: 8 bytes a pair, where a Python set of tuples takes
    about 170 (3.75M top-25 pairs at COCO 5k-test scale: 30 MB instead of 650 MB)."""

    __slots__ = ("keys",)

    def __init__(self, keys: np.ndarray) -> None:
        self.keys = _sorted_unique(np.asarray(keys, dtype=np.int64))
        self.keys.flags.writeable = False

    @classmethod
    def from_pairs(cls, pairs: Iterable[Pair]) -> PairSet:
        return cls(_pair_keys(list(pairs), "pairs"))

    @classmethod
    def _from_iterable(cls, items: Iterable[Any]) -> AbstractSet[Any]:
        # The Set mixins (&, |, -) build results with this; theirs may hold other items.
        return frozenset(items)

    def __contains__(self, pair: object) -> bool:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return False
        image, caption = pair
        if not all(
            isinstance(v, int | np.integer) and 0 <= v < _ID_LIMIT for v in (image, caption)
        ):
            return False
        key = (int(image) << _SHIFT) | int(caption)
        at = int(np.searchsorted(self.keys, key))
        return at < self.keys.size and int(self.keys[at]) == key

    def __len__(self) -> int:
        return int(self.keys.size)

    def __iter__(self) -> Iterator[Pair]:
        return zip((self.keys >> _SHIFT).tolist(), (self.keys & _MASK).tolist(), strict=True)


def propose(
    model_rankings: Mapping[str, ModelRanking],
    k: int = 5,
    *,
    models: Sequence[str] | None = None,
    min_models: int = 1,
) -> list[Candidate]:
    """Every model's top-``k`` captions per image query and top-``k`` images per caption
    query, merged into one Candidate per distinct ``(image_id, caption_id)``.

    ``models`` picks which models to use (default: all); every one of them must be present
    and rank the same image and caption queries. Candidates come sorted by image id, then
    caption id. A ranking shorter than ``k`` is an InputError with field ``k``.
    """
    names = _chosen_models(model_rankings, models, min_models)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"must be a positive integer, got {k!r}", field="k")
    queries = {
        direction: _shared_queries(model_rankings, names, direction) for direction in DIRECTIONS
    }
    table = [
        Proposal(direction=direction, model=name, rank=rank)
        for direction in DIRECTIONS
        for name in names
        for rank in range(1, k + 1)
    ]
    images: list[np.ndarray] = []
    captions: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    for d, direction in enumerate(DIRECTIONS):
        query_ids = queries[direction]
        if query_ids.size == 0:
            continue
        for m, name in enumerate(names):
            ranking = getattr(model_rankings[name], direction)
            top = _top_matrix(ranking, query_ids, k, model=name, direction=direction)
            repeated = np.repeat(query_ids, k)
            images.append(repeated if direction == I2T else top.ravel())
            captions.append(top.ravel() if direction == I2T else repeated)
            # Codes index ``table``; sorted codes order proposals by direction, model, rank.
            base = (d * len(names) + m) * k
            codes.append(np.tile(np.arange(base, base + k, dtype=np.int64), query_ids.size))
    if not codes:
        return []
    image = np.concatenate(images)
    caption = np.concatenate(captions)
    code = np.concatenate(codes)
    order = np.lexsort((code, caption, image))
    image, caption, code = image[order], caption[order], code[order]
    change = np.flatnonzero((np.diff(image) != 0) | (np.diff(caption) != 0)) + 1
    starts = np.concatenate(([0], change)).tolist()
    ends = np.concatenate((change, [image.size])).tolist()
    code_list = code.tolist()
    lookup = table.__getitem__
    # Most pairs are proposed once: their one-proposal tuples are shared, built once.
    singles = [(proposal,) for proposal in table]
    return [
        Candidate(
            image_id,
            caption_id,
            singles[code_list[start]]
            if end - start == 1
            else tuple(map(lookup, code_list[start:end])),
        )
        for image_id, caption_id, start, end in zip(
            image[starts].tolist(), caption[starts].tolist(), starts, ends, strict=True
        )
    ]


def proposal_counts(candidates: Iterable[Candidate]) -> ProposalCounts:
    """How many proposals were merged into how many candidates (paper: 64,850 -> 46,424)."""
    per_model: dict[str, int] = {}
    per_direction: dict[str, int] = {direction: 0 for direction in DIRECTIONS}
    proposed = unique = 0
    for candidate in candidates:
        unique += 1
        for proposal in candidate.proposals:
            proposed += 1
            per_model[proposal.model] = per_model.get(proposal.model, 0) + 1
            per_direction[proposal.direction] = per_direction.get(proposal.direction, 0) + 1
    return ProposalCounts(
        proposed=proposed,
        unique=unique,
        per_model=dict(sorted(per_model.items())),
        per_direction=per_direction,
    )


def top_pairs(model_rankings: Mapping[str, ModelRanking], depth: int = 25) -> PairSet:
    """Every pair in some model's top-``depth`` in either direction (gold negatives avoid
    these). Each ranking must hold at least ``depth`` distinct ids."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError(f"must be a positive integer, got {depth!r}", field="depth")
    keys: list[np.ndarray] = []
    for name in sorted(model_rankings):
        for direction in DIRECTIONS:
            ranking = getattr(model_rankings[name], direction)
            query_ids = np.asarray(sorted(ranking), dtype=np.int64)
            if query_ids.size == 0:
                continue
            top = _top_matrix(
                ranking, query_ids, depth, model=name, direction=direction, field="depth"
            )
            repeated = np.repeat(query_ids, depth)
            if direction == I2T:
                keys.append(_keys(repeated, top.ravel(), "model_rankings"))
            else:
                keys.append(_keys(top.ravel(), repeated, "model_rankings"))
    return PairSet(np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64))


def hits_needed(
    n_candidates: int, *, pairs_per_hit: int = 20, golds: tuple[int, int] = (1, 1)
) -> int:
    """Number of HITs pack_hits makes for ``n_candidates`` (so callers can draw golds)."""
    per_hit = _candidates_per_hit(pairs_per_hit, golds)
    return math.ceil(n_candidates / per_hit) if n_candidates > 0 else 0


def pack_hits(
    candidates: Sequence[Candidate | Pair],
    gold_positives: Sequence[Pair],
    gold_negatives: Sequence[Pair],
    *,
    pairs_per_hit: int = 20,
    golds: tuple[int, int] = (1, 1),
    seed: int,
) -> list[HitPlan]:
    """Pack candidates into HITs of ``pairs_per_hit`` questions with gold items.

    ``golds`` = (gold positives, gold negatives) per HIT; the rest of each HIT is
    candidates, in a seeded random order so a HIT mixes queries. The HIT count is
    hits_needed(); candidates are spread evenly, so HIT sizes differ by at most one.
    Gold pairs that are also candidates are not used as golds; each gold is used once.
    Positions within a HIT are shuffled. Gold positives expect POSITIVE_ANSWERS, gold
    negatives NEGATIVE_ANSWERS.
    """
    per_hit = _candidates_per_hit(pairs_per_hit, golds)
    n_positive, n_negative = golds
    pairs = [_as_pair(item, "candidates", index) for index, item in enumerate(candidates)]
    where: dict[Pair, int] = {}
    for index, pair in enumerate(pairs):
        if pair in where:
            raise InputError(
                f"pair {pair} is listed twice (also item {where[pair]})",
                record=index,
                field="candidates",
            )
        where[pair] = index
    if not pairs:
        return []
    n_hits = math.ceil(len(pairs) / per_hit)
    positive_pool = _gold_pool(gold_positives, "gold_positives", where)
    negative_pool = _gold_pool(gold_negatives, "gold_negatives", where)
    both = set(positive_pool) & set(negative_pool)
    if both:
        raise InputError(
            f"pair {min(both)} is both a gold positive and a gold negative", field="gold_negatives"
        )
    for pool, count, name in (
        (positive_pool, n_positive, "gold_positives"),
        (negative_pool, n_negative, "gold_negatives"),
    ):
        if len(pool) < n_hits * count:
            raise InputError(
                f"{n_hits} HITs need {n_hits * count} gold pairs that are not candidates, "
                f"got {len(pool)}",
                field=name,
            )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    positives = [
        positive_pool[i] for i in rng.permutation(len(positive_pool))[: n_hits * n_positive]
    ]
    negatives = [
        negative_pool[i] for i in rng.permutation(len(negative_pool))[: n_hits * n_negative]
    ]
    plans: list[HitPlan] = []
    for index, chunk in enumerate(np.array_split(order, n_hits)):
        entries: list[tuple[Pair, str, frozenset[str]]] = [
            (pairs[i], CANDIDATE, frozenset()) for i in chunk.tolist()
        ]
        entries += [
            (pair, GOLD_POSITIVE, POSITIVE_ANSWERS)
            for pair in positives[index * n_positive : (index + 1) * n_positive]
        ]
        entries += [
            (pair, GOLD_NEGATIVE, NEGATIVE_ANSWERS)
            for pair in negatives[index * n_negative : (index + 1) * n_negative]
        ]
        shuffled = rng.permutation(len(entries)).tolist()
        items = tuple(
            HitItem(
                position=position,
                image_id=entries[source][0][0],
                caption_id=entries[source][0][1],
                kind=entries[source][1],
                expected=entries[source][2],
            )
            for position, source in enumerate(shuffled)
        )
        plans.append(HitPlan(index=index, items=items))
    return plans


def sample_gold_negatives(
    image_ids: Sequence[int],
    caption_ids: Sequence[int],
    excluded_pairs: Collection[Pair],
    n: int,
    seed: int,
    *,
    original_pairs: Collection[Pair],
) -> list[Pair]:
    """``n`` distinct random ``(image_id, caption_id)`` pairs, neither excluded nor original.

    ``excluded_pairs`` should hold every pair in some model's top-25 (top_pairs gives a
    compact PairSet); ``original_pairs`` the dataset's own image-caption pairs. Ids are
    taken in ascending order, so the result depends only on the id sets and ``seed``.
    """
    images = _sorted_ids(image_ids, "image_ids")
    captions = _sorted_ids(caption_ids, "caption_ids")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"must be a non-negative integer, got {n!r}", field="n")
    if n == 0:
        return []
    _keys(images[:1], captions[:1], "image_ids")
    _keys(images[-1:], captions[-1:], "caption_ids")
    blocked = _sorted_unique(
        np.concatenate(
            (
                _pair_keys(excluded_pairs, "excluded_pairs"),
                _pair_keys(original_pairs, "original_pairs"),
            )
        )
    )
    in_grid = np.isin(blocked >> _SHIFT, images) & np.isin(blocked & _MASK, captions)
    total = images.size * captions.size
    available = total - int(in_grid.sum())
    if n > available:
        raise InputError(
            f"only {available} pairs are neither excluded nor original, asked for {n}", field="n"
        )
    rng = np.random.default_rng(seed)
    if 2 * n > available and total <= _ENUMERATE_LIMIT:
        # Few free pairs: rejection sampling would spin, so list them and choose.
        grid = (np.repeat(images, captions.size) << _SHIFT) | np.tile(captions, images.size)
        free = grid[~np.isin(grid, blocked, assume_unique=True)]
        chosen = free[rng.choice(free.size, size=n, replace=False)]
    else:
        parts: list[np.ndarray] = []
        found = 0
        while found < n:
            draws = 2 * (n - found) + 16
            keys = (images[rng.integers(images.size, size=draws)] << _SHIFT) | captions[
                rng.integers(captions.size, size=draws)
            ]
            keys = keys[~np.isin(keys, blocked)]
            # Keep each new key's first draw, in draw order.
            _, first = np.unique(keys, return_index=True)
            keys = keys[np.sort(first)]
            if parts:
                keys = keys[~np.isin(keys, np.concatenate(parts))]
            keys = keys[: n - found]
            parts.append(keys)
            found += keys.size
        chosen = np.concatenate(parts)
    return list(zip((chosen >> _SHIFT).tolist(), (chosen & _MASK).tolist(), strict=True))


def subsample_queries(
    image_ids: Sequence[int],
    caption_ids: Sequence[int],
    n_images: int,
    n_captions: int,
    seed: int,
) -> QuerySample:
    """A seeded uniform sample of image and caption queries (paper: 1,261 of 5,000 images,
    1,333 of 25,000 captions), independent of the input order."""
    images = _sorted_ids(image_ids, "image_ids")
    captions = _sorted_ids(caption_ids, "caption_ids")
    for name, count, pool in (("n_images", n_images, images), ("n_captions", n_captions, captions)):
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= pool.size:
            raise InputError(f"must be between 0 and {pool.size}, got {count!r}", field=name)
    rng = np.random.default_rng(seed)
    chosen_images = np.sort(images[rng.choice(images.size, size=n_images, replace=False)])
    chosen_captions = np.sort(captions[rng.choice(captions.size, size=n_captions, replace=False)])
    return QuerySample(
        image_ids=tuple(chosen_images.tolist()), caption_ids=tuple(chosen_captions.tolist())
    )


def _chosen_models(
    model_rankings: Mapping[str, ModelRanking], models: Sequence[str] | None, min_models: int
) -> list[str]:
    if models is None:
        names = sorted(model_rankings)
    else:
        if isinstance(models, str):
            raise InputError("must be a list of model names, not one string", field="models")
        missing = [name for name in models if name not in model_rankings]
        if missing:
            raise InputError(
                f"asked for {len(models)} models but {missing[0]!r} has no rankings "
                f"(have: {', '.join(sorted(model_rankings)) or 'none'})",
                field="models",
            )
        if len(set(models)) != len(models):
            raise InputError("a model is listed twice", field="models")
        names = sorted(models)
    if len(names) < max(min_models, 1):
        raise InputError(
            f"need at least {max(min_models, 1)} models, got {len(names)}", field="models"
        )
    return names


def _shared_queries(
    model_rankings: Mapping[str, ModelRanking], names: list[str], direction: str
) -> np.ndarray:
    """The query ids every chosen model ranks in ``direction`` (they must agree), ascending."""
    first = set(getattr(model_rankings[names[0]], direction))
    for name in names[1:]:
        other = set(getattr(model_rankings[name], direction))
        if other != first:
            query = min(other ^ first)
            missing_from = name if query in first else names[0]
            raise InputError(
                f"model {missing_from!r} does not rank this query; all models must rank "
                "the same queries",
                file=missing_from,
                record=query,
                field=direction,
            )
    return np.asarray(sorted(first), dtype=np.int64)


def _top_matrix(
    ranking: Mapping[int, Sequence[int]],
    query_ids: np.ndarray,
    k: int,
    *,
    model: str,
    direction: str,
    field: str = "k",
) -> np.ndarray:
    """``queries x k`` int64 matrix of each query's first ``k`` ranked ids."""
    matrix = getattr(ranking, "ranked", None)
    if isinstance(matrix, np.ndarray) and matrix.ndim == 2 and matrix.shape[1] >= k:
        # A RankedLists: slice the matrix it was built from, no list per query.
        held = np.asarray(ranking.query_ids, dtype=np.int64)  # type: ignore[attr-defined]
        order = np.argsort(held, kind="stable")
        ordered = held[order]
        at = np.minimum(np.searchsorted(ordered, query_ids), max(held.size - 1, 0))
        distinct = held.size > 0 and bool((ordered[1:] != ordered[:-1]).all())
        if distinct and bool((ordered[at] == query_ids).all()):
            return _check_repeats(
                matrix[order[at], :k].astype(np.int64, copy=False), query_ids, k, model, direction
            )
    rows = []
    gallery = "captions" if direction == I2T else "images"
    for query in query_ids.tolist():
        ranked = ranking[query]
        if len(ranked) < k:
            raise InputError(
                f"{direction} ranks only {len(ranked)} {gallery} for this query; "
                f"{field} = {k} needs at least {k}",
                file=model,
                record=query,
                field=field,
            )
        rows.append(ranked[:k])
    top = np.asarray(rows)
    if not np.issubdtype(top.dtype, np.integer):
        raise InputError("ranked ids must be integers", file=model, field=direction)
    return _check_repeats(top.astype(np.int64, copy=False), query_ids, k, model, direction)


def _check_repeats(
    top: np.ndarray, query_ids: np.ndarray, k: int, model: str, direction: str
) -> np.ndarray:
    repeats = np.flatnonzero((np.diff(np.sort(top, axis=1), axis=1) == 0).any(axis=1))
    if repeats.size:
        raise InputError(
            f"the top {k} repeat an id",
            file=model,
            record=int(query_ids[repeats[0]]),
            field=direction,
        )
    return top


def _candidates_per_hit(pairs_per_hit: int, golds: tuple[int, int]) -> int:
    if len(golds) != 2 or any(
        isinstance(g, bool) or not isinstance(g, int) or g < 0 for g in golds
    ):
        raise InputError(
            f"must be (gold positives, gold negatives) per HIT, got {golds!r}", field="golds"
        )
    per_hit = pairs_per_hit - sum(golds)
    if per_hit < 1:
        raise InputError(
            f"{pairs_per_hit} pairs per HIT leave no room for candidates next to {sum(golds)} "
            "gold pairs",
            field="pairs_per_hit",
        )
    return per_hit


def _as_pair(item: Candidate | Pair | Sequence[int], field: str, index: int) -> Pair:
    if isinstance(item, Candidate):
        return item.pair
    if len(item) != 2 or any(
        isinstance(v, bool) or not isinstance(v, int | np.integer) for v in item
    ):
        raise InputError(
            f"must be an (image_id, caption_id) pair of integers, got {item!r}",
            record=index,
            field=field,
        )
    return (int(item[0]), int(item[1]))


def _gold_pool(golds: Sequence[Pair], field: str, candidates: Mapping[Pair, int]) -> list[Pair]:
    pool: dict[Pair, None] = {}
    for index, item in enumerate(golds):
        pair = _as_pair(item, field, index)
        if pair not in candidates:
            pool[pair] = None
    return list(pool)


def _keys(images: np.ndarray, captions: np.ndarray, field: str) -> np.ndarray:
    """Pair keys of equal-length id arrays; ids must be within 0 .. 2**32 - 1."""
    for ids in (images, captions):
        if ids.size and (ids.min() < 0 or ids.max() >= _ID_LIMIT):
            raise InputError(f"ids must be within 0..{_ID_LIMIT - 1}", field=field)
    return (images.astype(np.int64) << _SHIFT) | captions.astype(np.int64)


def _pair_keys(pairs: Collection[Pair], field: str) -> np.ndarray:
    """Sorted unique keys of ``pairs`` (no copy for a PairSet)."""
    if isinstance(pairs, PairSet):
        return pairs.keys
    array = np.asarray(list(pairs))
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.integer):
        raise InputError("must hold (image_id, caption_id) pairs of integers", field=field)
    return _sorted_unique(_keys(array[:, 0], array[:, 1], field))


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values; numpy 2's hash-based np.unique is ~6x slower on int64 keys."""
    ordered = np.sort(keys)
    if ordered.size < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _sorted_ids(ids: Sequence[int], field: str) -> np.ndarray:
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise InputError("must be a 1-D sequence of integer ids", field=field)
    unique, counts = np.unique(array.astype(np.int64, copy=False), return_counts=True)
    if (counts > 1).any():
        raise InputError("id appears twice", record=int(unique[counts > 1][0]), field=field)
    return unique
