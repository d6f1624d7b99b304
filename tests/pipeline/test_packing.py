import random

import pytest

from pipeline.packing import pack_disjoint


def _shows(images, hit):
    seen = [image for i in hit for image in images[i]]
    return len(seen) == len(set(seen))


def test_no_hit_shows_an_image_twice_and_every_item_is_packed_once():
    # BISON-like: a chain of pairs in both orders, each with two captions (four triples per
    # pair share both images).
    rng = random.Random(5)
    images = []
    for a in range(60):
        b = (a + 1) % 60
        images += [frozenset({a, b})] * 4
    rng.shuffle(images)
    packed = pack_disjoint(images, 10)
    assert packed.shared == 0
    assert sorted(i for hit in packed.hits for i in hit) == list(range(len(images)))
    assert all(len(hit) <= 10 and _shows(images, hit) for hit in packed.hits)
    # Nearly every HIT is full: the packing does not waste HITs on conflicts.
    assert len(packed.hits) <= len(images) // 10 + 4


def test_items_keep_their_order_where_they_do_not_clash():
    images = [frozenset({i, 100 + i}) for i in range(7)]
    assert pack_disjoint(images, 3).hits == [[0, 1, 2], [3, 4, 5], [6]]


def test_an_item_clashing_with_every_open_hit_opens_a_new_one():
    images = [frozenset({1, 2}), frozenset({2, 3}), frozenset({4, 5}), frozenset({1, 9})]
    assert pack_disjoint(images, 4).hits == [[0, 2], [1, 3]]


def test_a_hit_size_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        pack_disjoint([frozenset({1})], 0)
