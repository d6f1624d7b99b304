from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pipeline.eccv_candidates import (
    CANDIDATE,
    GOLD_NEGATIVE,
    GOLD_POSITIVE,
    NEGATIVE_ANSWERS,
    POSITIVE_ANSWERS,
    Candidate,
    ModelRanking,
    PairSet,
    Proposal,
    hits_needed,
    pack_hits,
    proposal_counts,
    propose,
    sample_gold_negatives,
    subsample_queries,
    top_pairs,
)
from pipeline.errors import InputError

RANKINGS = {
    "a": ModelRanking(
        i2t={1: [10, 11, 12], 2: [20, 10, 21]},
        t2i={10: [1, 2, 3], 20: [2, 3, 1]},
    ),
    "b": ModelRanking(
        i2t={1: [11, 13, 10], 2: [20, 21, 22]},
        t2i={10: [3, 1, 2], 20: [2, 1, 3]},
    ),
}


def test_propose_merges_duplicates_hand_computed() -> None:
    candidates = propose(RANKINGS, k=2)
    by_pair = {c.pair: c.proposals for c in candidates}
    assert [c.pair for c in candidates] == sorted(by_pair)
    assert by_pair == {
        (1, 10): (Proposal("i2t", "a", 1), Proposal("t2i", "a", 1), Proposal("t2i", "b", 2)),
        (1, 11): (Proposal("i2t", "a", 2), Proposal("i2t", "b", 1)),
        (1, 13): (Proposal("i2t", "b", 2),),
        (1, 20): (Proposal("t2i", "b", 2),),
        (2, 10): (Proposal("i2t", "a", 2), Proposal("t2i", "a", 2)),
        (2, 20): (
            Proposal("i2t", "a", 1),
            Proposal("i2t", "b", 1),
            Proposal("t2i", "a", 1),
            Proposal("t2i", "b", 1),
        ),
        (2, 21): (Proposal("i2t", "b", 2),),
        (3, 10): (Proposal("t2i", "b", 1),),
        (3, 20): (Proposal("t2i", "a", 2),),
    }
    counts = proposal_counts(candidates)
    # (2 image + 2 caption queries) x 2 models x k = 2.
    assert (counts.proposed, counts.unique) == (16, 9)
    assert counts.per_model == {"a": 8, "b": 8}
    assert counts.per_direction == {"i2t": 8, "t2i": 8}
    first = candidates[0]
    assert first.models == frozenset({"a", "b"})
    assert first.directions == frozenset({"i2t", "t2i"})
    assert first.best_rank == 1


def test_propose_with_one_model_and_chosen_models() -> None:
    only_b = propose(RANKINGS, k=1, models=["b"])
    assert [c.pair for c in only_b] == [(1, 11), (2, 20), (3, 10)]
    assert all(c.models == {"b"} for c in only_b)


def test_paper_scale_proposal_counts() -> None:
    # 1,261 image and 1,333 caption queries, 5 models, top-5: (1,261 + 1,333) x 5 x 5 = 64,850.
    rng = np.random.default_rng(0)
    images = rng.choice(5000, size=1261, replace=False).tolist()
    captions = (rng.choice(25000, size=1333, replace=False) + 100_000).tolist()
    gallery_images = np.arange(5000)
    gallery_captions = np.arange(100_000, 125_000)
    models = {}
    for name in ["PVSE", "VSRN", "PCME", "ViLT", "CLIP"]:
        # Each model draws its top-5 from a small per-query pool, so models overlap a lot.
        i2t = {
            q: rng.choice(gallery_captions[q : q + 9], 5, replace=False).tolist() for q in images
        }
        t2i = {
            q: rng.choice(gallery_images[q % 4990 : q % 4990 + 9], 5, replace=False).tolist()
            for q in captions
        }
        models[name] = ModelRanking(i2t=i2t, t2i=t2i)
    candidates = propose(models, k=5)
    counts = proposal_counts(candidates)
    assert counts.proposed == 64_850
    assert counts.unique == len({c.pair for c in candidates})
    assert counts.unique < counts.proposed
    assert counts.per_model == {name: 12_970 for name in models}


def test_k_larger_than_ranking_is_an_error() -> None:
    with pytest.raises(InputError) as info:
        propose(RANKINGS, k=4)
    assert info.value.field == "k"
    assert info.value.file == "a"
    assert info.value.record == 1
    with pytest.raises(InputError) as info:
        propose(RANKINGS, k=0)
    assert info.value.field == "k"


def test_fewer_models_than_asked() -> None:
    with pytest.raises(InputError) as info:
        propose(RANKINGS, models=["a", "b", "c"], k=1)
    assert info.value.field == "models"
    assert "'c'" in info.value.message
    with pytest.raises(InputError) as info:
        propose(RANKINGS, k=1, min_models=5)
    assert info.value.field == "models"
    with pytest.raises(InputError) as info:
        propose({}, k=1)
    assert info.value.field == "models"


def test_models_must_rank_the_same_queries() -> None:
    partial = {**RANKINGS, "c": ModelRanking(i2t={1: [10, 11]}, t2i=RANKINGS["a"].t2i)}
    with pytest.raises(InputError) as info:
        propose(partial, k=1)
    assert (info.value.file, info.value.record, info.value.field) == ("c", 2, "i2t")


def test_repeated_id_in_top_k() -> None:
    bad = {"a": ModelRanking(i2t={1: [10, 10, 11]}, t2i={})}
    with pytest.raises(InputError) as info:
        propose(bad, k=2)
    assert (info.value.file, info.value.record, info.value.field) == ("a", 1, "i2t")
    assert len(propose(bad, k=1)) == 1


def test_top_pairs() -> None:
    pairs = top_pairs(RANKINGS, depth=2)
    assert isinstance(pairs, PairSet)
    assert pairs == {c.pair for c in propose(RANKINGS, k=2)}
    with pytest.raises(InputError) as info:
        top_pairs(RANKINGS, depth=25)
    assert info.value.field == "depth"


def test_pair_set() -> None:
    pairs = PairSet.from_pairs([(2, 5), (1, 7), (2, 5)])
    assert len(pairs) == 2
    assert list(pairs) == [(1, 7), (2, 5)]
    assert (1, 7) in pairs and (7, 1) not in pairs
    assert "x" not in pairs and (-1, 7) not in pairs and (1, 2, 3) not in pairs
    assert ("1", 7) not in pairs
    assert pairs == {(1, 7), (2, 5)}
    assert pairs & {(1, 7), (3, 3)} == {(1, 7)}
    assert pairs.keys.tolist() == [(1 << 32) | 7, (2 << 32) | 5]
    with pytest.raises(InputError):
        PairSet.from_pairs([(1, 2**32)])
    with pytest.raises(InputError):
        PairSet.from_pairs([(1, 2, 3)])  # type: ignore[list-item]


# ------------------------------------------------------------------------------- HITs


def _candidates(n: int) -> list[Candidate]:
    return [Candidate(i, 1000 + i, (Proposal("i2t", "a", 1),)) for i in range(n)]


def test_pack_hits_structure() -> None:
    candidates = _candidates(40)
    positives = [(500 + i, 600 + i) for i in range(10)]
    negatives = [(700 + i, 800 + i) for i in range(10)]
    plans = pack_hits(candidates, positives, negatives, seed=3)
    assert hits_needed(40) == len(plans) == 3
    # 40 candidates over 3 HITs: 14, 13, 13, each plus one gold of each kind.
    assert [len(plan.items) for plan in plans] == [16, 15, 15]
    seen: Counter[tuple[int, int]] = Counter()
    for index, plan in enumerate(plans):
        assert plan.index == index
        assert [item.position for item in plan.items] == list(range(len(plan.items)))
        kinds = Counter(item.kind for item in plan.items)
        assert kinds[GOLD_POSITIVE] == kinds[GOLD_NEGATIVE] == 1
        for item in plan.items:
            pair = (item.image_id, item.caption_id)
            seen[pair] += 1
            if item.kind == GOLD_POSITIVE:
                assert pair in positives and item.expected == POSITIVE_ANSWERS and item.is_gold
            elif item.kind == GOLD_NEGATIVE:
                assert pair in negatives and item.expected == NEGATIVE_ANSWERS and item.is_gold
            else:
                assert item.kind == CANDIDATE and item.expected == frozenset()
                assert not item.is_gold
    assert {c.pair for c in candidates} <= set(seen)
    assert max(seen.values()) == 1  # every candidate and gold used once
    # Golds are not always in the same slot.
    assert len({[i.kind for i in p.items].index(GOLD_POSITIVE) for p in plans}) > 1


def test_pack_hits_full_hits_and_determinism() -> None:
    candidates = [(i, 1000 + i) for i in range(36)]
    golds = ([(500 + i, 0) for i in range(2)], [(700 + i, 0) for i in range(2)])
    plans = pack_hits(candidates, *golds, seed=1)
    assert [len(plan.items) for plan in plans] == [20, 20]
    assert pack_hits(candidates, *golds, seed=1) == plans
    assert pack_hits(candidates, *golds, seed=2) != plans


def test_pack_hits_skips_gold_pairs_that_are_candidates() -> None:
    candidates = [(i, 1000 + i) for i in range(18)]
    plans = pack_hits(candidates, [(0, 1000), (9, 9)], [(8, 8)], seed=0)
    gold = {(i.image_id, i.caption_id) for i in plans[0].items if i.kind == GOLD_POSITIVE}
    assert gold == {(9, 9)}
    with pytest.raises(InputError) as info:
        pack_hits(candidates, [(0, 1000)], [(8, 8)], seed=0)
    assert info.value.field == "gold_positives"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"pairs_per_hit": 2}, "pairs_per_hit"),
        ({"golds": (1,)}, "golds"),
        ({"golds": (-1, 1)}, "golds"),
    ],
)
def test_pack_hits_validation(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        pack_hits([(1, 2)], [(3, 4)], [(5, 6)], seed=0, **kwargs)
    assert info.value.field == field


def test_pack_hits_rejects_duplicates_and_overlapping_golds() -> None:
    with pytest.raises(InputError) as info:
        pack_hits([(1, 2), (1, 2)], [(3, 4)], [(5, 6)], seed=0)
    assert (info.value.record, info.value.field) == (1, "candidates")
    with pytest.raises(InputError) as info:
        pack_hits([(1, 2)], [(3, 4)], [(3, 4)], seed=0)
    assert info.value.field == "gold_negatives"
    assert pack_hits([], [], [], seed=0) == []


# -------------------------------------------------------------------- gold negatives


def test_gold_negatives_exhaust_a_small_grid() -> None:
    excluded = {(1, 10), (2, 11)}
    original = {(3, 12)}
    pairs = sample_gold_negatives(
        [3, 1, 2], [10, 11, 12, 13], excluded, 9, 0, original_pairs=original
    )
    free = {(i, c) for i in (1, 2, 3) for c in (10, 11, 12, 13)} - excluded - original
    assert set(pairs) == free and len(pairs) == 9
    with pytest.raises(InputError) as info:
        sample_gold_negatives([1, 2, 3], [10, 11, 12, 13], excluded, 10, 0, original_pairs=original)
    assert info.value.field == "n"


def test_gold_negatives_by_rejection() -> None:
    images = list(range(300))
    captions = list(range(1000, 2500))
    excluded = {(i, 1000 + (i * 7 + j) % 1500) for i in images for j in range(25)}
    original = {(i, 1000 + 5 * i + j) for i in images for j in range(5)}
    pairs = sample_gold_negatives(images, captions, excluded, 500, 42, original_pairs=original)
    assert len(pairs) == len(set(pairs)) == 500
    assert not set(pairs) & (excluded | original)
    assert all(i in range(300) and 1000 <= c < 2500 for i, c in pairs)
    again = sample_gold_negatives(
        images[::-1], captions, PairSet.from_pairs(excluded), 500, 42, original_pairs=original
    )
    assert again == pairs
    other = sample_gold_negatives(images, captions, excluded, 500, 43, original_pairs=original)
    assert other != pairs


def test_gold_negative_validation() -> None:
    with pytest.raises(InputError) as info:
        sample_gold_negatives([1, 1], [2], set(), 1, 0, original_pairs=set())
    assert (info.value.record, info.value.field) == (1, "image_ids")
    with pytest.raises(InputError) as info:
        sample_gold_negatives([1], [2], set(), -1, 0, original_pairs=set())
    assert info.value.field == "n"


# ------------------------------------------------------------------------- queries


def test_subsample_queries() -> None:
    images = list(range(5000))
    captions = list(range(10_000, 35_000))
    sample = subsample_queries(images, captions, 1261, 1333, seed=0)
    assert len(sample.image_ids) == 1261 and len(set(sample.image_ids)) == 1261
    assert len(sample.caption_ids) == 1333
    assert list(sample.image_ids) == sorted(sample.image_ids)
    assert set(sample.caption_ids) <= set(captions)
    assert subsample_queries(images[::-1], captions, 1261, 1333, seed=0) == sample
    assert subsample_queries(images, captions, 1261, 1333, seed=1) != sample
    with pytest.raises(InputError) as info:
        subsample_queries(images, captions, 5001, 1, seed=0)
    assert info.value.field == "n_images"
