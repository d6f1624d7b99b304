"""ECCV Caption's post-processed positives made a column at a time (issue 32): the links of
the run's queries from their original COCO pairs, the people's verified candidates and
imported CxC positives, each link once with the sources that give it, exclusions dropped.
`selectors.eccv_positives` gives them as dicts; the export takes the columns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from django.db.models import Q

from annotation.flows.eccv.config_ids import run_config_ids
from annotation.flows.eccv.models import ExternalPositive
from annotation.flows.eccv.settings import eccv_settings
from annotation.models import Caption, Run
from annotation.selectors.arrow_rows import arrow_columns, numpy_ints

SOURCES = ("coco", "cxc", "human")  # bit n of a link's sources is SOURCES[n] (sorted names)
Pairs = tuple[np.ndarray, np.ndarray]  # (image, caption) COCO ids, int64


def _pairs(table: pa.Table) -> Pairs:
    image, caption = (
        numpy_ints(table.column(name)).astype(np.int64) for name in ("image", "caption")
    )
    return image, caption


def query_originals(run: Run) -> Pairs:
    """(image, caption) of the captions of the run's image queries and of its caption queries:
    the original COCO pairs of the queries. The database reads the query lists from the run's
    row (no id list is sent); the run's recorded query lists decide."""
    table = arrow_columns(
        Caption.objects.filter(dataset=run.dataset).filter(
            Q(image__coco_id__in=run_config_ids(run, "query_images"))
            | Q(coco_id__in=run_config_ids(run, "query_captions"))
        ),
        {"image": ("image__coco_id", pa.int64()), "caption": ("coco_id", pa.int64())},
    )
    image, caption = _pairs(table)
    settings = eccv_settings(run)
    keep = _isin(image, settings.query_images) | _isin(caption, settings.query_captions)
    return image[keep], caption[keep]


def cxc_pairs(run: Run) -> Pairs:
    """(image, caption) of the run's imported CxC positives."""
    return _pairs(
        arrow_columns(
            ExternalPositive.objects.filter(run=run),
            {"image": ("image__coco_id", pa.int64()), "caption": ("caption__coco_id", pa.int64())},
        )
    )


def _isin(values: np.ndarray, wanted: Iterable[int]) -> np.ndarray:
    return np.isin(values, np.fromiter(wanted, np.int64))


def _grouped(keys: np.ndarray, values: np.ndarray, queries: list[int]) -> dict[int, list[int]]:
    """For each of `queries` (in their order) that has any, its values sorted."""
    if not keys.size:
        return {}
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    groups = dict(
        zip(
            keys[starts].tolist(),
            (v.tolist() for v in np.split(values, starts[1:])),
            strict=True,
        )
    )
    return {q: groups[q] for q in queries if q in groups}


@dataclass
class PositiveLinks:
    """Every link once, in (image, caption) order, with its sources (bits of SOURCES); the
    positives of each query that kept any; what the exclusions dropped."""

    image: np.ndarray
    caption: np.ndarray
    sources: np.ndarray
    i2t: dict[int, list[int]]
    t2i: dict[int, list[int]]
    dropped: int
    queries_without_positives: dict[str, Any]

    def sources_of(self, image: np.ndarray, caption: np.ndarray) -> np.ndarray:
        """The sources (bits) of each (image, caption) pair; 0 where it is not a link."""
        if not self.image.size:
            return np.zeros(image.size, dtype=np.int64)
        at = np.searchsorted(_key(self.image, self.caption), _key(image, caption))
        at = at.clip(0, self.image.size - 1)
        found = (self.image[at] == image) & (self.caption[at] == caption)
        return np.where(found, self.sources[at], 0)


def _key(image: np.ndarray, caption: np.ndarray) -> np.ndarray:
    """One number per pair, in (image, caption) order: COCO ids are below 2**31 (checked
    where links are made; a pair outside that range is then simply no link)."""
    return image.astype(np.int64) << 31 | (caption.astype(np.int64) & (2**31 - 1))


def positive_links(
    *,
    query_images: Sequence[int],
    query_captions: Sequence[int],
    bad_images: set[int],
    bad_captions: set[int],
    originals: Pairs | None,
    human: Pairs,
    cxc: Pairs,
) -> PositiveLinks:
    """The links of the queries (`originals` None: no "coco" source), excluded images and
    captions dropped (and counted)."""
    image_queries = [i for i in query_images if i not in bad_images]
    caption_queries = [c for c in query_captions if c not in bad_captions]
    parts = [(human, SOURCES.index("human")), (cxc, SOURCES.index("cxc"))]
    if originals is not None:
        image, caption = originals
        keep = _isin(image, image_queries) | _isin(caption, caption_queries)
        parts.append(((image[keep], caption[keep]), SOURCES.index("coco")))
    image = np.concatenate([p[0] for p, _ in parts]).astype(np.int64)
    caption = np.concatenate([p[1] for p, _ in parts]).astype(np.int64)
    bit = np.concatenate([np.full(p[0].size, 1 << b, dtype=np.int64) for p, b in parts])
    for ids, name in ((image, "image"), (caption, "caption")):
        if ids.size and not 0 <= int(ids.min()) <= int(ids.max()) < 2**31:
            raise ValueError(f"a positive link's {name} id is outside 0..2**31")
    order = np.lexsort((caption, image))
    image, caption, bit = image[order], caption[order], bit[order]
    first = np.ones(image.size, dtype=bool)
    first[1:] = (image[1:] != image[:-1]) | (caption[1:] != caption[:-1])
    starts = np.flatnonzero(first)
    sources = np.bitwise_or.reduceat(bit, starts) if bit.size else bit
    image, caption = image[starts], caption[starts]
    dropped_mask = _isin(image, bad_images) | _isin(caption, bad_captions)
    kept_i, kept_c = image[~dropped_mask], caption[~dropped_mask]
    to_image = _isin(kept_i, image_queries)
    to_caption = _isin(kept_c, caption_queries)
    i2t = _grouped(kept_i[to_image], kept_c[to_image], image_queries)
    t2i = _grouped(kept_c[to_caption], kept_i[to_caption], caption_queries)
    return PositiveLinks(
        image=image,
        caption=caption,
        sources=sources,
        i2t=i2t,
        t2i=t2i,
        dropped=int(dropped_mask.sum()),
        # Reported, not silently dropped: these queries cannot be evaluated.
        queries_without_positives={
            "i2t": sum(1 for q in image_queries if q not in i2t),
            "t2i": sum(1 for q in caption_queries if q not in t2i),
            "i2t_ids": [q for q in image_queries if q not in i2t],
            "t2i_ids": [q for q in caption_queries if q not in t2i],
        },
    )


def source_names(bits: int) -> list[str]:
    """The names of the sources in `bits`, sorted."""
    return [name for n, name in enumerate(SOURCES) if bits >> n & 1]
