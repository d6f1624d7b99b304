"""`pairs_swapped` is `random.Random(text).shuffle` of two items, for every text."""

from __future__ import annotations

import random

import numpy as np

from pipeline.pair_shuffle import pairs_swapped


def _python(texts: list[str]) -> list[bool]:
    swapped = []
    for text in texts:
        pair = [0, 1]
        random.Random(text).shuffle(pair)
        swapped.append(pair[0] == 1)
    return swapped


def test_the_order_is_cpythons_for_seeds_and_ids_of_every_length() -> None:
    ids = [*range(1, 1200), 99_999, 100_000, 10**9, 2**40, 7 * 10**15]
    texts = [f"{seed}:{pk}" for seed in (0, 1, -3, 42, 123_456_789) for pk in ids]
    texts += ["x", "caf\u00e9:1", "0:" + "9" * 80]  # other key lengths, non-ASCII
    got = pairs_swapped(texts)
    assert got.dtype == np.bool_ and got.tolist() == _python(texts)
    assert 0.45 < got.mean() < 0.55


def test_no_texts() -> None:
    assert pairs_swapped([]).tolist() == []
