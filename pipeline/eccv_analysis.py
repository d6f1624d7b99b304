"""ECCV Caption analyses: benchmark precision/recall (Table 2), Kendall tau-b, model bias.

All scores are fractions in 0..1; the paper prints them as percentages.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pipeline.errors import InputError

# ---------------------------------------------------------------- Table 2: precision / recall


@dataclass(frozen=True)
class PrecisionRecall:
    """Precision and recall of a benchmark's positives against human-verified positives.

    ``n_queries`` is the paper's N (queries with a non-empty r'_i); recall averages over the
    ``n_recall_queries`` of them whose verified set t_i is non-empty (else its term is 0/0).
    ``skipped_queries`` counts queries of ``benchmark`` or ``judged`` left out because r'_i
    is empty.
    """

    precision: float
    recall: float
    n_queries: int
    n_recall_queries: int
    skipped_queries: int


def benchmark_precision_recall(
    benchmark: Mapping[int, Collection[int]],
    verified: Mapping[int, Collection[int]],
    *,
    judged: Mapping[int, Collection[int]],
) -> PrecisionRecall:
    """Precision and recall of ``benchmark`` (e.g. original COCO or CxC), Table 2 of the paper.

    The paper, Section 3.3: "Let t_i be the set of human-annotated positives for the query i
    and r_i be the set of positives for i in the target dataset. [...] we use
    r'_i = r_i ∩ h_i where h_i is the set of human-verified pairs for the query i (i.e., the
    top-5 items of our machine annotators). We filter out the case when r'_i = 0 for
    preventing an ill-defined result. We define precision and recall of a dataset as
    Prec = 1/N Σ_i |r'_i ∩ t_i| / |r'_i| and Recall = 1/N Σ_i 1 - |t_i \\ r'_i| / |t_i|."

    So only judged pairs count: ``benchmark`` = r_i, ``verified`` = t_i (the pairs humans
    called positive), ``judged`` = h_i (every pair humans judged, positive or not). A query
    counts only when some benchmark positive of it was judged. ``verified`` must lie
    within ``judged``.
    """
    for query, items in verified.items():
        seen = judged.get(query)
        if seen is None:
            if items:
                raise InputError(
                    "query has verified positives but no judged pairs",
                    record=query,
                    field="verified",
                )
            continue
        outside = set(items) - set(seen)
        if outside:
            raise InputError(
                f"verified positive {min(outside)} is not among the judged pairs",
                record=query,
                field="verified",
            )
    precisions: list[float] = []
    recalls: list[float] = []
    skipped = 0
    for query in sorted(set(benchmark) | set(judged)):
        kept = set(benchmark.get(query, ())) & set(judged.get(query, ()))
        if not kept:
            skipped += 1
            continue
        truth = set(verified.get(query, ()))
        precisions.append(len(kept & truth) / len(kept))
        if truth:
            recalls.append(1.0 - len(truth - kept) / len(truth))
    return PrecisionRecall(
        precision=_mean(precisions),
        recall=_mean(recalls),
        n_queries=len(precisions),
        n_recall_queries=len(recalls),
        skipped_queries=skipped,
    )


# ------------------------------------------------------------------------ Kendall tau-b


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of paired observations, in O(n log^2 n) vectorised numpy.

    ``tau_b = (n_c - n_d) / sqrt((n0 - n_x) (n0 - n_y))`` with n0 = n(n-1)/2 pairs, n_c / n_d
    concordant / discordant pairs and n_x / n_y pairs tied in x / y. NaN when it is
    undefined (fewer than two observations, or x or y constant), as in scipy.
    """
    a = _finite_vector(x, "x")
    b = _finite_vector(y, "y")
    if a.size != b.size:
        raise InputError(f"x has {a.size} values but y has {b.size}", field="y")
    n = a.size
    if n < 2:
        return math.nan
    order = np.lexsort((b, a))
    a_sorted, b_sorted = a[order], b[order]
    total = n * (n - 1) // 2
    x_ties = _tied_pairs(np.flatnonzero(np.diff(a_sorted) != 0), n)
    joint_change = (np.diff(a_sorted) != 0) | (np.diff(b_sorted) != 0)
    joint_ties = _tied_pairs(np.flatnonzero(joint_change), n)
    y_ties = _tied_pairs(np.flatnonzero(np.diff(np.sort(b)) != 0), n)
    if total in (x_ties, y_ties):
        return math.nan
    # Sorted by x then y, a discordant pair is exactly a strict inversion of the y sequence:
    # pairs tied in x are in ascending y order and so never inverted.
    dense_y = np.unique(b_sorted, return_inverse=True)[1].astype(np.int64).ravel()
    discordant = _strict_inversions(dense_y)
    difference = total - x_ties - y_ties + joint_ties - 2 * discordant
    # Integer product first: identical rankings then give exactly 1.0.
    return float(difference / math.sqrt((total - x_ties) * (total - y_ties)))


def top_list_tau(other_ranks: Sequence[float]) -> float:
    """tau-b between a model's top list (positions 0..n-1) and another model's ranks of the same
    items, as the paper's Table A.1(a) compares two annotators' top-25 retrievals.

    With the other model's full-gallery ranks no item is "missing": two unrelated models give
    tau near 0, not the strong negative value that tying every unlisted item would produce.
    Ranks that are NaN (the other model cannot rank the item) are left out.
    """
    ranks = np.asarray(other_ranks, dtype=np.float64)
    keep = ~np.isnan(ranks)
    if keep.sum() < 2:
        return math.nan
    return kendall_tau_b(np.flatnonzero(keep).astype(np.float64), ranks[keep])


def list_ranks(ranking: Sequence[int], items: Sequence[int]) -> list[float]:
    """An item's position in a ranked list, NaN for items the list does not hold (a list
    says nothing about where its unlisted items rank)."""
    place = {item: float(i) for i, item in enumerate(ranking)}
    return [place.get(item, math.nan) for item in items]


@dataclass(frozen=True)
class RankingAgreement:
    """Per-query top_list_tau of model A's top ``depth`` list against model B's ranks, and
    the mean over the queries where it is defined (``n_defined`` of them)."""

    depth: int
    mean_tau: float
    n_defined: int
    per_query: dict[int, float]
    # Where B ranks A's first item, averaged (1 = B's first too; Table A.1(b)).
    mean_rank_of_top1: float


def ranking_agreement(
    top_lists: Mapping[int, Sequence[int]],
    other_ranks: Mapping[int, Sequence[float]],
    *,
    depth: int = 25,
) -> RankingAgreement:
    """Compare model A's top lists with model B's (0-based) ranks of the same items, query by
    query. ``other_ranks[q][i]`` is B's rank of ``top_lists[q][i]`` (NaN: unknown)."""
    if depth < 1:
        raise InputError(f"must be at least 1, got {depth}", field="depth")
    missing = set(top_lists) ^ set(other_ranks)
    if missing:
        query = min(missing)
        side = "other_ranks" if query in top_lists else "top_lists"
        raise InputError("query is ranked by only one of the models", record=query, field=side)
    per_query: dict[int, float] = {}
    firsts: list[float] = []
    for query in sorted(top_lists):
        top = list(top_lists[query])[:depth]
        ranks = list(other_ranks[query])[: len(top)]
        if len(set(top)) != len(top):
            raise InputError("ranking repeats an id", record=query, field="top_lists")
        if len(ranks) != len(top):
            raise InputError(
                "needs a rank for every listed item", record=query, field="other_ranks"
            )
        per_query[query] = top_list_tau(ranks)
        if ranks and not math.isnan(ranks[0]):
            firsts.append(ranks[0] + 1)
    defined = [tau for tau in per_query.values() if not math.isnan(tau)]
    return RankingAgreement(
        depth=depth,
        mean_tau=_mean(defined),
        n_defined=len(defined),
        per_query=per_query,
        mean_rank_of_top1=_mean(firsts),
    )


def _finite_vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("must be a sequence of numbers", field=name) from None
    if array.ndim != 1:
        raise InputError(f"must be 1-D, got shape {array.shape}", field=name)
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array))[0])
        raise InputError("NaN or infinity", record=bad, field=name)
    return array


def _tied_pairs(change: np.ndarray, n: int) -> int:
    """Pairs inside runs of equal values, given where a sorted sequence changes value."""
    bounds = np.concatenate(([0], change + 1, [n]))
    runs = np.diff(bounds).astype(np.int64)
    return int((runs * (runs - 1) // 2).sum())


def _strict_inversions(values: np.ndarray) -> int:
    """Pairs i < j with values[i] > values[j] (values: small non-negative ints).

    Bottom-up merge sort, one level at a time: at each level every right block counts,
    for each element, the larger elements of its left partner block with one global
    searchsorted on keys ``pair * span + value`` (left blocks are sorted, so their keys
    are globally sorted). Then each pair of blocks is merged by sorting the same keys.
    """
    n = values.size
    current = values.astype(np.int64, copy=True)
    span = int(current.max()) + 1 if n else 1
    index = np.arange(n, dtype=np.int64)
    inversions = 0
    width = 1
    while width < n:
        pair = index // (2 * width)
        keys = pair * span + current
        right = (index // width) % 2 == 1
        left_keys = keys[~right]
        right_keys = keys[right]
        right_pair = pair[right]
        left_end = np.searchsorted(left_keys, (right_pair + 1) * span, side="left")
        not_larger = np.searchsorted(left_keys, right_keys, side="right")
        inversions += int((left_end - not_larger).sum())
        current = current[np.argsort(keys, kind="stable")]
        width *= 2
    return inversions


# --------------------------------------------------------------------------- model bias

# The paper's graded match m_i(x) (Appendix E.3, Eq. E.4).
SCORE_YES = 1.0
SCORE_PARTIALLY_YES = 0.5
SCORE_NO = 0.0


@dataclass(frozen=True)
class JudgedPair:
    """One human-judged candidate: ``score`` is 1 for "100% YES", 0.5 for "Partially YES"
    and 0 otherwise; ``proposers`` are the annotator models that proposed it."""

    query_id: int
    item_id: int
    proposers: frozenset[str]
    score: float


@dataclass(frozen=True)
class GradedScores:
    """A model's graded R@1 and R-Precision averaged over ``n_queries`` queries."""

    recall_at_1: float
    r_precision: float
    n_queries: int


@dataclass(frozen=True)
class Bias:
    """B_Theta (mean |s_Theta - s_All| over all models) and its self / non-self parts.

    ``self_bias`` averages the models in Theta, ``non_self_bias`` the others (NaN when
    there are none).
    """

    total: float
    self_bias: float
    non_self_bias: float


@dataclass(frozen=True)
class SubsetBias:
    """Every model's scores on the dataset annotated from the proposals of ``subset``."""

    subset: tuple[str, ...]
    n_pairs: int
    recall_at_1: dict[str, float]
    r_precision: dict[str, float]
    recall_bias: Bias
    precision_bias: Bias


@dataclass(frozen=True)
class SizeBias:
    """Mean bias over all subsets of one size (the paper's Figure E.2)."""

    size: int
    n_subsets: int
    recall_bias: Bias
    precision_bias: Bias


@dataclass(frozen=True)
class ModelBias:
    """Model bias of a machine-in-the-loop dataset; ``all`` is the Theta = All dataset."""

    models: tuple[str, ...]
    all: SubsetBias
    subsets: tuple[SubsetBias, ...]
    by_size: dict[int, SizeBias]


def graded_scores(
    pairs: Iterable[JudgedPair], ranking: Mapping[int, Sequence[int]]
) -> GradedScores:
    """A model's graded R@1 and R-Precision on judged ``pairs`` (paper, Appendix E.3).

    "m_i(x) = 1 if i-th retrieved item of x is annotated as '100% YES', 0.5 if [...]
    'Partially YES', 0 otherwise"; "R@1 = 1/N Σ_n m_1(x_n)"; "Let R(x) be the total
    number of matched items for the input x. R-P = 1/N Σ_n 1/R(x) Σ_{i=1..R(x)} m_i(x_n)."
    Here R(x) counts the pairs of ``x`` with a score above 0, unjudged retrieved items
    score 0, and the N queries are those with R(x) >= 1.
    """
    by_query = _scores_by_query(pairs)
    recall: list[float] = []
    precision: list[float] = []
    for query in sorted(by_query):
        scores = by_query[query]
        r = sum(1 for value in scores.values() if value > 0)
        if r == 0:
            continue
        if query not in ranking:
            raise InputError("no ranking for this query", record=query, field="ranking")
        top = list(ranking[query])[:r]
        if len(top) < r:
            raise InputError(
                f"ranking has {len(top)} ids but the query has R = {r} matched items",
                record=query,
                field="ranking",
            )
        if len(set(top)) != r:
            raise InputError("ranking repeats an id", record=query, field="ranking")
        recall.append(scores.get(top[0], 0.0))
        precision.append(sum(scores.get(item, 0.0) for item in top) / r)
    return GradedScores(
        recall_at_1=_mean(recall), r_precision=_mean(precision), n_queries=len(recall)
    )


def bias_of(
    s_theta: Mapping[str, float], s_all: Mapping[str, float], subset: Collection[str]
) -> Bias:
    """B_Theta, self-bias and non-self-bias from per-model scores (paper, Eq. E.5).

    "B_Theta := 1/5 Σ_{phi in All} |s_Theta(phi) - s_All(phi)|" (1/5: the paper's five
    models; here 1/|All|); self-bias "1/|Theta| Σ_{phi in Theta} |s_Theta(phi) -
    s_All(phi)|"; non-self-bias the same over the models outside Theta.
    """
    if set(s_theta) != set(s_all):
        raise InputError("s_Theta and s_All must score the same models", field="s_theta")
    unknown = set(subset) - set(s_all)
    if unknown:
        raise InputError(f"unknown model {sorted(unknown)[0]!r}", field="subset")
    gap = {model: abs(s_theta[model] - s_all[model]) for model in s_all}
    inside = [gap[model] for model in sorted(gap) if model in subset]
    outside = [gap[model] for model in sorted(gap) if model not in subset]
    return Bias(
        total=_mean(list(gap.values())), self_bias=_mean(inside), non_self_bias=_mean(outside)
    )


def model_bias(
    pairs: Sequence[JudgedPair],
    rankings: Mapping[str, Mapping[int, Sequence[int]]],
    *,
    subsets: Iterable[Collection[str]] | None = None,
) -> ModelBias:
    """Model bias of every subset Theta of the annotator models (paper, Appendix E.3).

    ``rankings`` maps each model (All) to its ranked retrievals per query. The dataset of
    Theta keeps the judged pairs proposed by at least one model in Theta; s_Theta(phi) is
    graded_scores of model phi on it, for R@1 and R-Precision, and s_All uses every
    proposed pair. ``subsets`` defaults to every non-empty subset of All.
    """
    models = tuple(sorted(rankings))
    if not models:
        raise InputError("need at least one model", field="rankings")
    seen: set[tuple[int, int]] = set()
    for pair in pairs:
        key = (pair.query_id, pair.item_id)
        if key in seen:
            raise InputError(f"pair {key} is listed twice", record=pair.query_id, field="pairs")
        seen.add(key)
        if not (0.0 <= pair.score <= 1.0):
            raise InputError(
                f"score must be within 0..1, got {pair.score!r}",
                record=pair.query_id,
                field="score",
            )
        stray = set(pair.proposers) - set(models)
        if stray:
            raise InputError(
                f"proposed by {sorted(stray)[0]!r}, which has no rankings",
                record=pair.query_id,
                field="proposers",
            )
    if subsets is None:
        chosen = [
            combo for size in range(1, len(models) + 1) for combo in combinations(models, size)
        ]
    else:
        chosen = []
        for subset in subsets:
            combo = tuple(sorted(set(subset)))
            if not combo or not set(combo) <= set(models):
                raise InputError(f"not a non-empty subset of {models}: {combo}", field="subsets")
            chosen.append(combo)

    def evaluate(subset: tuple[str, ...]) -> tuple[int, dict[str, GradedScores]]:
        members = set(subset)
        kept = [pair for pair in pairs if pair.proposers & members]
        scores: dict[str, GradedScores] = {}
        for model in models:
            try:
                scores[model] = graded_scores(kept, rankings[model])
            except InputError as exc:
                raise InputError(
                    exc.message, file=model, record=exc.record, field=exc.field
                ) from None
        return len(kept), scores

    all_count, all_scores = evaluate(models)
    s_all_recall = {model: all_scores[model].recall_at_1 for model in models}
    s_all_precision = {model: all_scores[model].r_precision for model in models}

    def summarise(
        subset: tuple[str, ...], count: int, scores: dict[str, GradedScores]
    ) -> SubsetBias:
        recall = {model: scores[model].recall_at_1 for model in models}
        precision = {model: scores[model].r_precision for model in models}
        return SubsetBias(
            subset=subset,
            n_pairs=count,
            recall_at_1=recall,
            r_precision=precision,
            recall_bias=bias_of(recall, s_all_recall, subset),
            precision_bias=bias_of(precision, s_all_precision, subset),
        )

    everything = summarise(models, all_count, all_scores)
    results = tuple(
        everything if subset == models else summarise(subset, *evaluate(subset))
        for subset in chosen
    )
    by_size: dict[int, SizeBias] = {}
    for size in sorted({len(result.subset) for result in results}):
        group = [result for result in results if len(result.subset) == size]
        by_size[size] = SizeBias(
            size=size,
            n_subsets=len(group),
            recall_bias=_mean_bias([result.recall_bias for result in group]),
            precision_bias=_mean_bias([result.precision_bias for result in group]),
        )
    return ModelBias(models=models, all=everything, subsets=results, by_size=by_size)


def _scores_by_query(pairs: Iterable[JudgedPair]) -> dict[int, dict[int, float]]:
    by_query: dict[int, dict[int, float]] = {}
    for pair in pairs:
        scores = by_query.setdefault(pair.query_id, {})
        if pair.item_id in scores:
            raise InputError(
                f"pair ({pair.query_id}, {pair.item_id}) is listed twice",
                record=pair.query_id,
                field="pairs",
            )
        scores[pair.item_id] = float(pair.score)
    return by_query


def _mean_bias(values: list[Bias]) -> Bias:
    return Bias(
        total=_mean([value.total for value in values]),
        self_bias=_mean([value.self_bias for value in values]),
        non_self_bias=_mean([value.non_self_bias for value in values]),
    )


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan
