from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from pipeline.eccv_analysis import (
    JudgedPair,
    benchmark_precision_recall,
    bias_of,
    graded_scores,
    kendall_tau_b,
    list_ranks,
    model_bias,
    ranking_agreement,
    top_list_tau,
)
from pipeline.errors import InputError

# ------------------------------------------------------------------ precision / recall


def test_benchmark_precision_recall_hand_computed() -> None:
    judged = {1: ["a", "b", "c", "d"], 2: ["e", "f"], 3: ["g"], 5: ["z"]}
    verified = {1: ["a", "b", "c"], 2: ["e"], 3: [], 5: ["z"]}
    benchmark = {1: ["a", "x"], 2: ["f"], 3: ["g"], 4: ["y"]}
    result = benchmark_precision_recall(benchmark, verified, judged=judged)
    # Query 1: r' = {a}: precision 1, recall 1 - |{b, c}| / 3 = 1/3.
    # Query 2: r' = {f}: precision 0, recall 1 - |{e}| / 1 = 0.
    # Query 3: r' = {g}: precision 0, no verified positives -> left out of recall.
    # Query 4: nothing judged, query 5: no benchmark positive -> r' empty, skipped.
    assert result.precision == pytest.approx(1 / 3)
    assert result.recall == pytest.approx(1 / 6)
    assert (result.n_queries, result.n_recall_queries, result.skipped_queries) == (3, 2, 2)


def test_benchmark_precision_recall_perfect_benchmark() -> None:
    judged = {1: [1, 2, 3], 2: [4, 5]}
    verified = {1: [1, 2], 2: [5]}
    result = benchmark_precision_recall(verified, verified, judged=judged)
    assert (result.precision, result.recall) == (1.0, 1.0)


def test_verified_must_be_judged() -> None:
    with pytest.raises(InputError) as info:
        benchmark_precision_recall({1: [1]}, {1: [1, 9]}, judged={1: [1, 2]})
    assert (info.value.record, info.value.field) == (1, "verified")
    with pytest.raises(InputError):
        benchmark_precision_recall({}, {3: [1]}, judged={})


# ------------------------------------------------------------------------ Kendall tau


def test_kendall_tau_b_hand_computed() -> None:
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # Ties: 3 concordant, 1 discordant, 1 pair tied in x, 1 in y: 2 / sqrt(5 * 5).
    assert kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.4)
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0


@pytest.mark.parametrize("seed", range(6))
def test_kendall_tau_b_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(2, 80))
        x = rng.integers(0, int(rng.integers(1, 10)), size=n)
        y = x + rng.integers(-2, 3, size=n) if rng.random() < 0.5 else rng.integers(0, 6, size=n)
        expected = kendalltau(x, y, variant="b").statistic
        got = kendall_tau_b(x, y)
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_b_large_input_matches_scipy() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1000, size=50_000)
    y = x + rng.normal(0, 300, size=50_000).round()
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_kendall_tau_b_undefined_and_bad_input() -> None:
    assert math.isnan(kendall_tau_b([1], [2]))
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    with pytest.raises(InputError) as info:
        kendall_tau_b([1, 2], [1, 2, 3])
    assert info.value.field == "y"
    with pytest.raises(InputError) as info:
        kendall_tau_b([1, float("nan")], [1, 2])
    assert (info.value.record, info.value.field) == (1, "x")


def test_top_list_tau_compares_a_top_list_with_the_other_models_full_ranks() -> None:
    assert top_list_tau([0, 1, 2]) == 1.0  # B ranks A's list in the same order
    assert top_list_tau([2, 1, 0]) == -1.0
    assert top_list_tau([1, 0, 3]) == pytest.approx(kendalltau([0, 1, 2], [1, 0, 3]).statistic)
    # B ranks A's top-25 far down, in an unrelated order: tau near 0, not the -2k/(3k-1) = -0.68
    # that tying every unlisted item below both lists gave.
    rng = np.random.default_rng(0)
    unrelated = [
        top_list_tau(rng.permutation(np.arange(1000, 26000))[:25].tolist()) for _ in range(400)
    ]
    assert abs(float(np.mean(unrelated))) < 0.02
    assert math.isnan(top_list_tau([math.nan, 3.0, math.nan]))  # fewer than two known


def test_list_ranks_leave_unlisted_items_unknown() -> None:
    ranks = list_ranks([7, 8, 9], [9, 1, 7])
    assert ranks[0] == 2.0 and math.isnan(ranks[1]) and ranks[2] == 0.0
    # Two disjoint lists: nothing to compare, so undefined rather than strongly negative.
    assert math.isnan(top_list_tau(list_ranks(list(range(100, 125)), list(range(25)))))


def test_ranking_agreement() -> None:
    top = {1: [1, 2, 3, 9], 2: [5, 6], 3: [7]}
    other = {1: [0, 1, 2, 40], 2: [1, 0], 3: [4]}
    result = ranking_agreement(top, other, depth=3)
    assert result.per_query[1] == 1.0  # cut to depth 3: same order
    assert result.per_query[2] == -1.0
    assert math.isnan(result.per_query[3])  # one item: tau undefined
    assert (result.mean_tau, result.n_defined) == (0.0, 2)
    assert result.mean_rank_of_top1 == pytest.approx((1 + 2 + 5) / 3)
    with pytest.raises(InputError) as info:
        ranking_agreement(top, {1: [0], 2: [5]})
    assert (info.value.record, info.value.field) == (3, "other_ranks")


# -------------------------------------------------------------------------- model bias


def test_bias_of_reproduces_paper_example() -> None:
    # Table E.1(a), text-to-image R@1: the "PVSE" column against the "All" column.
    s_pvse = {"PVSE": 76.5, "VSRN": 68.0, "PCME": 67.7, "ViLT": 59.5, "CLIP": 51.7}
    s_all = {"PVSE": 76.6, "VSRN": 80.1, "PCME": 77.4, "ViLT": 72.4, "CLIP": 64.3}
    bias = bias_of(s_pvse, s_all, {"PVSE"})
    assert bias.total == pytest.approx(9.48)  # the paper rounds to 9.5
    assert bias.self_bias == pytest.approx(0.1)
    assert bias.non_self_bias == pytest.approx(11.825)  # the paper: 11.8
    assert math.isnan(bias_of(s_all, s_all, s_all.keys()).non_self_bias)


def _pair(query: int, item: int, proposers: str, score: float) -> JudgedPair:
    return JudgedPair(query, item, frozenset(proposers), score)


PAIRS = [
    _pair(1, 11, "A", 1.0),
    _pair(1, 12, "B", 1.0),
    _pair(1, 13, "AB", 0.5),
    _pair(2, 24, "B", 1.0),
    _pair(2, 25, "A", 0.0),
]
RANKINGS = {
    "A": {1: [11, 13, 12], 2: [25, 24]},
    "B": {1: [12, 11, 13], 2: [24, 25]},
}


def test_graded_scores_hand_computed() -> None:
    pairs = [_pair(1, 1, "A", 1.0), _pair(1, 2, "A", 0.5), _pair(1, 3, "A", 0.0)]
    pairs += [_pair(2, 4, "A", 1.0), _pair(3, 5, "A", 0.0)]
    scores = graded_scores(pairs, {1: [2, 3, 1], 2: [4, 9]})
    # Query 1: R = 2, top-1 is "Partially YES" (0.5), R-P = (0.5 + 0) / 2. Query 2: 1 and 1.
    # Query 3 has no positive (R = 0) and is not evaluated.
    assert scores.recall_at_1 == pytest.approx(0.75)
    assert scores.r_precision == pytest.approx(0.625)
    assert scores.n_queries == 2


def test_model_bias_hand_computed() -> None:
    result = model_bias(PAIRS, RANKINGS)
    assert result.models == ("A", "B")
    # All: query 1 has R = 3, query 2 has R = 1.
    assert result.all.recall_at_1 == pytest.approx({"A": 0.5, "B": 1.0})
    assert result.all.r_precision == pytest.approx({"A": 2.5 / 6, "B": (2.5 / 3 + 1) / 2})
    by_subset = {r.subset: r for r in result.subsets}
    only_a = by_subset[("A",)]
    # Theta = {A}: pairs 11, 13 (query 1, R = 2) and 25 (query 2, R = 0, not evaluated).
    assert only_a.n_pairs == 3
    assert only_a.recall_at_1 == pytest.approx({"A": 1.0, "B": 0.0})
    assert only_a.r_precision == pytest.approx({"A": 0.75, "B": 0.5})
    assert only_a.recall_bias.total == pytest.approx(0.75)
    assert only_a.recall_bias.self_bias == pytest.approx(0.5)
    assert only_a.recall_bias.non_self_bias == pytest.approx(1.0)
    assert only_a.precision_bias.total == pytest.approx((1 / 3 + 5 / 12) / 2)
    only_b = by_subset[("B",)]
    assert only_b.recall_at_1 == pytest.approx({"A": 0.0, "B": 1.0})
    assert only_b.r_precision == pytest.approx({"A": 0.125, "B": 0.75})
    assert only_b.recall_bias.total == pytest.approx(0.25)
    assert only_b.precision_bias.self_bias == pytest.approx(1 / 6)
    size_one = result.by_size[1]
    assert size_one.n_subsets == 2
    assert size_one.recall_bias.total == pytest.approx(0.5)
    assert size_one.recall_bias.self_bias == pytest.approx(0.25)
    assert size_one.recall_bias.non_self_bias == pytest.approx(0.75)
    assert result.by_size[2].recall_bias.total == 0.0


def test_model_bias_chosen_subsets() -> None:
    result = model_bias(PAIRS, RANKINGS, subsets=[["B"]])
    assert [r.subset for r in result.subsets] == [("B",)]
    with pytest.raises(InputError) as info:
        model_bias(PAIRS, RANKINGS, subsets=[["C"]])
    assert info.value.field == "subsets"


@pytest.mark.parametrize(
    ("pairs", "field"),
    [
        ([*PAIRS, _pair(1, 11, "B", 1.0)], "pairs"),
        ([_pair(1, 11, "C", 1.0)], "proposers"),
        ([_pair(1, 11, "A", 1.5)], "score"),
        ([_pair(1, 11, "A", float("nan"))], "score"),
        ([_pair(7, 11, "A", 1.0)], "ranking"),
    ],
)
def test_model_bias_validation(pairs: list[JudgedPair], field: str) -> None:
    with pytest.raises(InputError) as info:
        model_bias(pairs, RANKINGS)
    assert info.value.field == field


def test_ranking_shorter_than_r_names_the_model() -> None:
    short = {"A": {1: [11], 2: [25]}, "B": RANKINGS["B"]}
    with pytest.raises(InputError) as info:
        model_bias(PAIRS, short)
    assert (info.value.file, info.value.record, info.value.field) == ("A", 1, "ranking")
