"""ECCV annotators' rankings: each annotator's top-`GOLD_DEPTH` lists for the run's image
and caption queries, from its ranked-list file or its vectors, and the copies the proposal
job saves in the run's folder."""

from __future__ import annotations

import json
from pathlib import Path

from annotation.flows.eccv.models import Annotator, AnnotatorKind
from annotation.flows.eccv.services.embeddings import annotator_embeddings
from annotation.flows.eccv.services.runs import eccv_gallery, eccv_workdir
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import GOLD_DEPTH
from annotation.models import Caption
from pipeline.eccv_candidates import ModelRanking
from pipeline.eccv_embeddings import load_ranked_lists, model_ranking, restrict_gallery
from pipeline.errors import InputError


def annotator_ranking(*, annotator: Annotator, depth: int = GOLD_DEPTH) -> ModelRanking:
    """The annotator's top-`depth` lists for the run's image and caption queries."""
    run = annotator.run
    settings = eccv_settings(run)
    image_queries, caption_queries = settings.query_images, settings.query_captions
    if annotator.kind == AnnotatorKind.RANKINGS:
        # Sets only here: an embeddings part checks its ids against arrays (2M captions as a
        # set of Python ints cost ~150 MB, which a part would hold while it ranks).
        ranking = load_ranked_lists(
            annotator.source,
            known_image_ids=set(run.dataset.images.values_list("coco_id", flat=True)),
            known_caption_ids=set(
                Caption.objects.filter(dataset=run.dataset).values_list("coco_id", flat=True)
            ),
            min_length=settings.k,
        )
        for direction, queries in (("i2t", image_queries), ("t2i", caption_queries)):
            lists = getattr(ranking, direction)
            missing = [q for q in queries if q not in lists]
            if missing:
                raise InputError(
                    "no ranked list for this query",
                    file=annotator.source,
                    record=missing[0],
                    field=direction,
                )
        gallery = eccv_gallery(run=run)
        if gallery is None:
            return ranking
        images, captions = gallery
        return ModelRanking(
            i2t={q: [c for c in ranked if c in captions] for q, ranked in ranking.i2t.items()},
            t2i={q: [i for i in ranked if i in images] for q, ranked in ranking.t2i.items()},
        )
    embeddings = annotator_embeddings(annotator=annotator)
    assert embeddings is not None
    gallery = eccv_gallery(run=run)
    if gallery is not None:
        embeddings = restrict_gallery(embeddings, *gallery)
    depth = min(depth, embeddings.image_ids.size, embeddings.caption_ids.size)
    # The embeddings were loaded for this ranking alone: normalise them in place, no copy.
    return model_ranking(
        embeddings,
        depth=depth,
        image_queries=image_queries,
        caption_queries=caption_queries,
        overwrite=True,
    )


def eccv_saved_ranking(*, annotator: Annotator) -> ModelRanking | None:
    """The rankings the proposal job saved for `annotator`, if it has run."""
    path = eccv_workdir(annotator.run) / f"ranking-{annotator.pk}.json"
    return ranking_load(path) if path.exists() else None


def ranking_save(path: Path, ranking: ModelRanking) -> None:
    """Write `ranking` to `path` (through a temporary file: a reader never sees half of it)."""
    data = {
        "i2t": {str(k): list(map(int, v)) for k, v in ranking.i2t.items()},
        "t2i": {str(k): list(map(int, v)) for k, v in ranking.t2i.items()},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def ranking_load(path: Path) -> ModelRanking:
    """A ranking as `ranking_save` wrote it."""
    data = json.loads(path.read_text())
    return ModelRanking(
        i2t={int(k): v for k, v in data["i2t"].items()},
        t2i={int(k): v for k, v in data["t2i"].items()},
    )
