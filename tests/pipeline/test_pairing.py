import json

import numpy as np
import pytest

from pipeline.neighbours import nearest_neighbours, normalize_rows
from pipeline.pairing import DEGENERATE_RANDOM_MEDIAN, cosine_summary, pairs_both_orders


def test_every_edge_in_both_orders_once():
    # 0<->1 mutual; 2's neighbour is 1, 3's is 2; 4 has no vector.
    graph = pairs_both_orders(np.array([1, 0, 1, 2, -1]))
    assert graph.edges == 3 and graph.mutual == 1
    assert graph.ordered.tolist() == [[0, 1], [1, 0], [1, 2], [2, 1], [2, 3], [3, 2]]
    # 1 and 2 are positives of two pairs each: one pair per image could not do that.
    positives = graph.ordered[:, 0].tolist()
    assert positives.count(1) == 2 and positives.count(2) == 2


def test_the_paper_count_is_twice_the_edges():
    rng = np.random.default_rng(0)
    unit = normalize_rows(rng.standard_normal((500, 16)).astype(np.float32))
    nn, _ = nearest_neighbours(unit, start=0, stop=500)
    graph = pairs_both_orders(nn)
    assert len(graph.ordered) == 2 * graph.edges
    assert len({tuple(p) for p in graph.ordered.tolist()}) == len(graph.ordered)
    assert graph.edges == 500 - graph.mutual  # each image adds an edge; mutual ones coincide
    for i, j in enumerate(nn):
        assert [i, j] in graph.ordered.tolist() and [j, i] in graph.ordered.tolist()


def test_bad_neighbour_vectors_are_refused():
    with pytest.raises(ValueError, match="own nearest neighbour"):
        pairs_both_orders(np.array([0, 0]))
    with pytest.raises(ValueError, match="outside"):
        pairs_both_orders(np.array([5, 0]))


def test_real_bison_records_have_the_structure_both_orders_give(reference_data):
    """In the published records every ordered pair is distinct, a positive has up to 7
    negatives and 124 of 668 unordered pairs appear in both orders: what pairing every
    nearest-neighbour edge in both orders produces, and what one pair per image cannot."""
    doc = json.loads(
        (reference_data / "bison_annotations.cocoval2014.subset.reconstructed.json").read_text()
    )
    pairs = []
    for record in doc["data"]:
        true = record["true_image_id"]
        (negative,) = [c["image_id"] for c in record["image_candidates"] if c["image_id"] != true]
        pairs.append((true, negative))
    assert len(set(pairs)) == len(pairs) == 792
    negatives: dict[int, set[int]] = {}
    for positive, negative in pairs:
        negatives.setdefault(positive, set()).add(negative)
    assert max(len(n) for n in negatives.values()) == 7
    unordered = {frozenset(p) for p in pairs}
    assert len(unordered) == 668
    assert sum(1 for a, b in set(pairs) if (b, a) in set(pairs)) // 2 == 124


def test_a_spread_space_is_not_degenerate_and_a_collapsed_one_is():
    rng = np.random.default_rng(1)
    spread = normalize_rows(rng.standard_normal((300, 32)).astype(np.float32))
    nn, sims = nearest_neighbours(spread, start=0, stop=300)
    summary = cosine_summary(spread, sims)
    assert not summary.degenerate and summary.warning() is None
    assert summary.random_median < 0.2 < summary.nn_median
    # Every vector a tiny perturbation of one direction: all pairs at cosine ~1.
    common = rng.standard_normal(32)
    collapsed = normalize_rows((common + 1e-4 * rng.standard_normal((300, 32))).astype(np.float32))
    nn, sims = nearest_neighbours(collapsed, start=0, stop=300)
    summary = cosine_summary(collapsed, sims)
    assert summary.degenerate and summary.random_median >= DEGENERATE_RANDOM_MEDIAN
    assert "degenerate" in summary.warning()
    assert summary == cosine_summary(collapsed, sims)  # seeded
