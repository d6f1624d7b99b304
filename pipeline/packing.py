"""HITs whose questions share no image (issue 25).

A worker who sees one image in two questions can link them: with the public COCO captions,
the query of one question tells which image is which in the other. Packing keeps every HIT's
questions image-disjoint; what a worker sees across HITs is the claim's rule.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Packed:
    """HITs as lists of indexes into the input, and how many HITs share an image anyway."""

    hits: list[list[int]]
    shared: int


def pack_disjoint(images: Sequence[frozenset[Hashable]], size: int) -> Packed:
    """Pack items (each given by the set of images it shows) into HITs of at most `size`,
    keeping the input order as far as possible: each item goes into the first HIT that is
    not full and shows none of its images, else into a new HIT. Every HIT but a few is full
    when an image appears in few items; `shared` is always 0 (an item never clashes with an
    empty HIT), kept so callers can assert it."""
    if size < 1:
        raise ValueError("size must be at least 1")
    hits: list[list[int]] = []
    shown: list[set[Hashable]] = []
    # HITs that still have room, in creation order: full ones are never looked at again.
    open_hits: list[int] = []
    for index, item_images in enumerate(images):
        target = next((h for h in open_hits if not shown[h] & item_images), None)
        if target is None:
            target = len(hits)
            hits.append([])
            shown.append(set())
            open_hits.append(target)
        hits[target].append(index)
        shown[target] |= item_images
        if len(hits[target]) >= size:
            open_hits.remove(target)
    shared = sum(1 for hit in hits if _clashes([images[i] for i in hit]))
    return Packed(hits=hits, shared=shared)


def _clashes(items: Sequence[frozenset[Hashable]]) -> bool:
    seen: set[Hashable] = set()
    for item_images in items:
        if seen & item_images:
            return True
        seen |= item_images
    return False
