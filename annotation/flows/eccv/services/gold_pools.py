"""Where the paper's ECCV gold items come from: original COCO pairs (gold positives) and
pairs in no model's top-25 (gold negatives)."""

from __future__ import annotations

import numpy as np

from annotation.flows.eccv.selectors import eccv_exclusions
from annotation.flows.eccv.services.runs import eccv_gallery, eccv_workdir
from annotation.models import Caption, Run
from pipeline.eccv_candidates import PairSet


def eccv_gold_pools(*, run: Run) -> tuple[set[tuple[int, int]], PairSet, list[int], list[int]]:
    """Original COCO pairs (gold positives), pairs to avoid for gold negatives, and the ids."""
    originals = set(
        Caption.objects.filter(dataset=run.dataset).values_list("image__coco_id", "coco_id")
    )
    path = eccv_workdir(run) / "top_pairs.npy"
    excluded = PairSet(np.load(path)) if path.exists() else PairSet(np.zeros(0, dtype=np.int64))
    image_ids = sorted(run.dataset.images.values_list("coco_id", flat=True))
    gallery = eccv_gallery(run=run)
    if gallery is not None:
        originals = {(i, c) for i, c in originals if i in gallery[0]}
        image_ids = [i for i in image_ids if i in gallery[0]]
    # Gold items never use the paper's invalid captions or excluded images: a worker judging
    # "a a a" against its own image would fail a gold positive through no fault of theirs.
    bad_captions, bad_images = eccv_exclusions(run=run)
    originals = {(i, c) for i, c in originals if i not in bad_images and c not in bad_captions}
    image_ids = [i for i in image_ids if i not in bad_images]
    caption_ids = sorted(c for _, c in originals)
    return originals, excluded, image_ids, caption_ids
