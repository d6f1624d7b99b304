from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.eccv_embeddings import parse_ranked_lists
from pipeline.eccv_metrics import (
    RankedLists,
    load_positives,
    map_at_r,
    parse_positives,
    r_precision,
    rankings_from_embeddings,
    recall_at_k,
    retrieval_metrics,
)
from pipeline.errors import InputError

with warnings.catch_warnings():
    # eccv-caption warns at import when ujson / tqdm are missing; it falls back to json.
    warnings.simplefilter("ignore")
    from eccv_caption import Metrics

DATA = Path(__file__).resolve().parents[1] / "data" / "eccv"
I2T_FILE = DATA / "eccv_image_to_caption.subset.json"
T2I_FILE = DATA / "eccv_caption_to_image.subset.json"


def test_hand_computed_query() -> None:
    positives = {1, 2, 3}
    ranking = [1, 9, 2, 8, 3, 7]
    # P@1 = 1 (hit), P@2 = 1/2 (miss), P@3 = 2/3 (hit): mAP@R = (1 + 2/3) / 3.
    assert map_at_r(positives, ranking) == pytest.approx(5 / 9)
    assert r_precision(positives, ranking) == pytest.approx(2 / 3)
    assert recall_at_k(positives, ranking, 1) == 1.0
    assert recall_at_k({9}, ranking, 1) == 0.0
    assert recall_at_k({9}, ranking, 2) == 1.0


@pytest.mark.parametrize(
    ("correct", "expected"),
    [
        # The paper's user study with 8 positives (Section 4.1 / Appendix D.1).
        (range(2, 9), 0.660),  # (A) only top-1 is wrong
        ([1], 0.125),  # (B) only top-1 is correct
        ([6, 7, 8], 0.103),  # (C) top-1 to -5 wrong, the next three correct
        ([5], 0.025),  # (D) only top-5 is correct
        ([], 0.0),  # (E) all items are wrong
    ],
)
def test_map_at_r_matches_paper_user_study(correct: range | list[int], expected: float) -> None:
    positives = list(range(100, 108))
    correct = list(correct)
    # Position i (1-based) holds a positive when listed in ``correct``, else a negative.
    ranking = [100 + correct.index(i) if i in correct else 900 + i for i in range(1, 41)]
    assert map_at_r(positives, ranking) == pytest.approx(expected, abs=5e-4)


def test_recall_at_k_is_a_hit_rate() -> None:
    scores = retrieval_metrics(
        {1: [5], 2: [6, 7]},
        {1: [1, 2, 3, 4, 5, 8, 9, 10, 11, 12], 2: [7, 1, 2, 3, 4, 5, 8, 9, 10, 11]},
        ks=(1, 5, 10),
    )
    assert scores.recall_at_k == {1: 0.5, 5: 1.0, 10: 1.0}
    np.testing.assert_array_equal(scores.query_ids, [1, 2])
    np.testing.assert_array_equal(scores.per_query_recall_at_k[1], [0.0, 1.0])
    # Query 1: R = 1, miss at 1 -> 0. Query 2: R = 2, hit at 1, miss at 2 -> (1 + 0) / 2.
    np.testing.assert_allclose(scores.per_query_map_at_r, [0.0, 0.5])
    np.testing.assert_allclose(scores.per_query_r_precision, [0.0, 0.5])
    assert scores.map_at_r == pytest.approx(0.25)


def test_metrics_match_single_query_functions() -> None:
    rng = np.random.default_rng(3)
    positives = {q: rng.choice(50, size=int(rng.integers(1, 12)), replace=False) for q in range(30)}
    rankings = {q: rng.permutation(50).tolist() for q in range(30)}
    scores = retrieval_metrics(positives, rankings, ks=(1, 3))
    for i, query in enumerate(scores.query_ids.tolist()):
        assert scores.per_query_map_at_r[i] == pytest.approx(
            map_at_r(positives[query], rankings[query])
        )
        assert scores.per_query_r_precision[i] == pytest.approx(
            r_precision(positives[query], rankings[query])
        )
        assert scores.per_query_recall_at_k[3][i] == recall_at_k(
            positives[query], rankings[query], 3
        )


def _gallery_rankings(
    positives: dict[int, list[int]], gallery: list[int], seed: int, bonus: float
) -> dict[int, list[int]]:
    """Full seeded rankings of ``gallery``; ``bonus`` > 0 lifts positives towards the top."""
    rng = np.random.default_rng(seed)
    ids = np.asarray(gallery)
    rankings = {}
    for query, items in positives.items():
        score = rng.random(ids.size) + bonus * np.isin(ids, items)
        rankings[query] = ids[np.argsort(-score, kind="stable")].tolist()
    return rankings


@pytest.fixture(scope="module")
def eccv_sample() -> tuple[dict[int, list[int]], dict[int, list[int]], list[int], list[int]]:
    i2t = load_positives(I2T_FILE)
    t2i = load_positives(T2I_FILE)
    captions = sorted({c for items in i2t.values() for c in items} | set(t2i))
    images = sorted({i for items in t2i.values() for i in items} | set(i2t))
    return i2t, t2i, captions, images


@pytest.fixture(scope="module")
def reference() -> Metrics:
    metrics = Metrics()
    metrics.set_eccv_gts(str(I2T_FILE), str(T2I_FILE))
    return metrics


@pytest.mark.parametrize(("seed", "bonus"), [(0, 0.0), (1, 0.0), (2, 0.6), (3, 0.9)])
def test_matches_eccv_caption_package(
    eccv_sample: tuple[dict[int, list[int]], dict[int, list[int]], list[int], list[int]],
    reference: Metrics,
    seed: int,
    bonus: float,
) -> None:
    i2t, t2i, captions, images = eccv_sample
    retrieved = {
        "i2t": _gallery_rankings(i2t, captions, seed, bonus),
        "t2i": _gallery_rankings(t2i, images, seed + 100, bonus),
    }
    expected = reference.eccv_metrics(retrieved, "all")
    for direction, positives in (("i2t", i2t), ("t2i", t2i)):
        ours = retrieval_metrics(positives, retrieved[direction], ks=(1, 5, 10))
        assert ours.map_at_r == pytest.approx(expected["eccv_map_at_r"][direction], abs=1e-12)
        assert ours.r_precision == pytest.approx(expected["eccv_rprecision"][direction], abs=1e-12)
        assert ours.recall_at_k[1] == pytest.approx(expected["eccv_r1"][direction], abs=1e-12)
        for k in (5, 10):
            theirs = reference.eccv_recalls(retrieved, direction, K=k)[direction]
            assert ours.recall_at_k[k] == pytest.approx(theirs, abs=1e-12)
    if bonus == 0.0:
        # A random ranking of ~2,600 captions almost never finds one of ~17 positives first.
        assert ours.recall_at_k[1] < 0.1
    else:
        assert 0.2 < ours.map_at_r < 0.95


def test_real_sample_known_values(
    eccv_sample: tuple[dict[int, list[int]], dict[int, list[int]], list[int], list[int]],
) -> None:
    i2t, t2i, captions, _ = eccv_sample
    assert (len(i2t), sum(map(len, i2t.values()))) == (165, 2871)
    assert (len(t2i), sum(map(len, t2i.values()))) == (183, 1541)
    # A perfect ranking: positives first (in file order), then the rest of the gallery.
    perfect = {q: items + [c for c in captions if c not in set(items)] for q, items in i2t.items()}
    scores = retrieval_metrics(i2t, perfect)
    assert (scores.map_at_r, scores.r_precision, scores.recall_at_k[1]) == (1.0, 1.0, 1.0)
    # Positives pushed just past R: every query scores 0 on all three R-based metrics.
    late = {
        q: [c for c in captions if c not in set(items)][: len(items)] + items
        for q, items in i2t.items()
    }
    scores = retrieval_metrics(i2t, late, ks=(1,))
    assert (scores.map_at_r, scores.r_precision, scores.recall_at_k[1]) == (0.0, 0.0, 0.0)


def test_rankings_for_unknown_queries_are_ignored() -> None:
    scores = retrieval_metrics({1: [2]}, {1: list(range(2, 12)), 5: list(range(10))})
    assert scores.ignored_queries == 1
    assert scores.query_ids.tolist() == [1]


def test_missing_ranking_names_file_query_and_field() -> None:
    with pytest.raises(InputError) as info:
        retrieval_metrics({1: [2], 7: [3]}, {1: list(range(2, 12))}, file="model.json")
    assert (info.value.file, info.value.record, info.value.field) == ("model.json", 7, "ranking")


def test_ranking_shorter_than_r_is_rejected() -> None:
    with pytest.raises(InputError) as info:
        retrieval_metrics({4: [1, 2, 3]}, {4: [1, 2]}, ks=(1,), file="run.json")
    assert (info.value.file, info.value.record, info.value.field) == ("run.json", 4, "ranking")
    assert "R = 3" in info.value.message
    with pytest.raises(InputError, match="largest K = 10"):
        retrieval_metrics({4: [1]}, {4: [1, 2, 3]})
    with pytest.raises(InputError):
        r_precision([1, 2, 3], [1, 2])


def test_duplicate_ids_in_the_read_prefix_are_rejected() -> None:
    with pytest.raises(InputError, match="repeats") as info:
        retrieval_metrics({4: [1]}, {4: [1, 2, 3, 2]}, ks=(4,))
    assert (info.value.record, info.value.field) == (4, "ranking")
    with pytest.raises(InputError, match="repeats"):
        map_at_r([1], [1, 1])


def test_ids_past_the_read_prefix_are_not_read_but_a_file_checks_them() -> None:
    # The metrics read max(R, K) ids, as eccv-caption does; a ranking file is checked whole.
    scores = retrieval_metrics({4: [1]}, {4: [1, 2, 3, 2]}, ks=(1,))
    assert scores.map_at_r == 1.0
    with pytest.raises(InputError, match="twice") as info:
        parse_ranked_lists(
            '{"i2t": {"4": [1, 2, 3, 2]}, "t2i": {"1": [4]}}',
            file="model.json",
            known_image_ids=[4],
            known_caption_ids=[1, 2, 3],
        )
    assert (info.value.file, info.value.record, info.value.field) == ("model.json", 4, "i2t")


def test_plain_dicts_and_a_ranked_matrix_give_the_same_scores() -> None:
    rng = np.random.default_rng(5)
    ids = np.arange(200, 260)
    ranked = np.stack([rng.permutation(ids)[:30] for _ in range(40)])
    queries = np.arange(1000, 1040)
    positives = {int(q): rng.choice(ids, size=int(rng.integers(1, 12)), replace=False).tolist()
                 for q in queries}  # fmt: skip
    # Ragged dict lists (each at least max(R, K) long) and one query the positives lack.
    lists = {int(q): row[: max(10, len(positives[int(q)])) + int(q) % 7].tolist()
             for q, row in zip(queries, ranked, strict=True)}  # fmt: skip
    lists[5] = [200, 201]
    matrix = RankedLists(queries, ranked)
    a = retrieval_metrics(positives, matrix, ks=(1, 5, 10))
    b = retrieval_metrics(positives, lists, ks=(1, 5, 10))
    assert (a.map_at_r, a.r_precision, a.recall_at_k) == (b.map_at_r, b.r_precision, b.recall_at_k)
    np.testing.assert_array_equal(a.per_query_map_at_r, b.per_query_map_at_r)
    assert b.ignored_queries == 1 and a.ignored_queries == 0


def test_query_without_positives_is_rejected() -> None:
    with pytest.raises(InputError) as info:
        retrieval_metrics({4: []}, {4: [1, 2]}, ks=(1,))
    assert (info.value.record, info.value.field) == (4, "positives")


@pytest.mark.parametrize("ks", [(), (0,), (1, -2), (True,)])
def test_bad_ks(ks: tuple) -> None:
    with pytest.raises(InputError) as info:
        retrieval_metrics({1: [1]}, {1: [1]}, ks=ks)
    assert info.value.field == "ks"


def test_rankings_from_embeddings() -> None:
    gallery = np.array([[0.0, 1.0], [1.0, 0.1], [-1.0, 0.0], [2.0, 0.2]])
    queries = np.array([[3.0, 0.0], [0.0, -1.0]])
    ranked = rankings_from_embeddings([7, 8], queries, [10, 20, 30, 40], gallery, 3)
    # Rows 20 and 40 are the same direction: the tie goes to the earlier row.
    assert ranked == {7: [20, 40, 10], 8: [30, 20, 40]}
    assert all(isinstance(v, int) for v in ranked[7])


def test_rankings_from_embeddings_validation() -> None:
    vecs = np.eye(3)
    with pytest.raises(InputError) as info:
        rankings_from_embeddings([1, 2, 3], vecs, [4, 5, 6], vecs, 4)
    assert info.value.field == "k"
    with pytest.raises(InputError) as info:
        rankings_from_embeddings([1, 2], vecs, [4, 5, 6], vecs, 1)
    assert info.value.field == "query_vecs"
    with pytest.raises(InputError) as info:
        rankings_from_embeddings([1, 2, 3], vecs, [4, 5, 4], vecs, 1)
    assert (info.value.record, info.value.field) == (4, "gallery_ids")


def test_parse_positives_validation() -> None:
    assert parse_positives('{"5": [1, 2]}', file="p.json") == {5: [1, 2]}
    cases = [
        ('{"x5": [1]}', "x5", "query id"),
        ('{"05": [1]}', "05", "query id"),
        ('{"5": []}', 5, "positives"),
        ('{"5": [1, 1]}', 5, "positives"),
        ('{"5": [true]}', 5, "positives"),
        ('{"5": "1"}', 5, "positives"),
    ]
    for raw, record, field in cases:
        with pytest.raises(InputError) as info:
            parse_positives(raw, file="p.json")
        assert (info.value.file, info.value.record, info.value.field) == ("p.json", record, field)


def _table(rankings: dict[int, list[int]]) -> RankedLists:
    ids = np.array(list(rankings), dtype=np.int64)
    return RankedLists(ids, np.array([rankings[q] for q in ids.tolist()], dtype=np.int64))


@pytest.mark.parametrize(("seed", "bonus"), [(0, 0.0), (2, 0.6), (3, 0.9)])
def test_a_ranked_matrix_scores_as_its_lists_and_as_eccv_caption(
    eccv_sample: tuple[dict[int, list[int]], dict[int, list[int]], list[int], list[int]],
    reference: Metrics,
    seed: int,
    bonus: float,
) -> None:
    """The whole-matrix path gives the list path's numbers and the package's."""
    i2t, t2i, captions, images = eccv_sample
    retrieved = {
        "i2t": _gallery_rankings(i2t, captions, seed, bonus),
        "t2i": _gallery_rankings(t2i, images, seed + 100, bonus),
    }
    expected = reference.eccv_metrics(retrieved, "all")
    for direction, positives in (("i2t", i2t), ("t2i", t2i)):
        lists = {q: v[:60] for q, v in retrieved[direction].items()}
        table = _table(lists)
        fast = retrieval_metrics(positives, table, ks=(1, 5, 10))
        slow = retrieval_metrics(positives, dict(table), ks=(1, 5, 10))
        assert fast.query_ids.tolist() == slow.query_ids.tolist()
        np.testing.assert_allclose(fast.per_query_map_at_r, slow.per_query_map_at_r, atol=1e-15)
        assert np.array_equal(fast.per_query_r_precision, slow.per_query_r_precision)
        for k in (1, 5, 10):
            assert np.array_equal(fast.per_query_recall_at_k[k], slow.per_query_recall_at_k[k])
        assert fast.map_at_r == pytest.approx(expected["eccv_map_at_r"][direction], abs=1e-12)
        assert fast.r_precision == pytest.approx(expected["eccv_rprecision"][direction], abs=1e-12)
        assert fast.recall_at_k[1] == pytest.approx(expected["eccv_r1"][direction], abs=1e-12)


def test_a_ranked_matrix_is_checked_like_lists() -> None:
    table = _table({1: [2, 3, 4], 5: [6, 7, 8], 9: [1, 2, 3]})
    assert retrieval_metrics({1: [2, 2]}, table, ks=(1,)).map_at_r == 1.0  # a repeat counts once
    assert retrieval_metrics({1: [3]}, table, ks=(1,)).ignored_queries == 2
    cases = [
        ({1: [2], 7: [3]}, (1,), 7, "ranking", "no ranking"),
        ({5: [1, 2, 3, 4]}, (1,), 5, "ranking", "R = 4"),
        ({1: [2]}, (5,), 1, "ranking", "largest K = 5"),
        ({9: []}, (1,), 9, "positives", "no positives"),
    ]
    for positives, ks, record, field, message in cases:
        with pytest.raises(InputError) as info:
            retrieval_metrics(positives, table, ks=ks, file="m.npz")
        assert (info.value.file, info.value.record, info.value.field) == ("m.npz", record, field)
        assert message in info.value.message


def test_ranked_lists_are_read_only_and_come_from_embeddings() -> None:
    vecs = np.random.default_rng(0).normal(size=(6, 4))
    ranked = rankings_from_embeddings([1, 2, 3], vecs[:3], [10, 11, 12], vecs[3:], 2)
    assert isinstance(ranked, RankedLists) and ranked.ranked.shape == (3, 2)
    assert {q: ranked[q] for q in ranked} == dict(ranked)
    with pytest.raises(TypeError):
        ranked[1] = [10]
    with pytest.raises(TypeError):
        del ranked[1]
    again = pickle.loads(pickle.dumps(ranked))
    assert again == ranked and np.array_equal(again.ranked, ranked.ranked)
