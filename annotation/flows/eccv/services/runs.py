"""An ECCV Caption run: its creation with the query sample drawn, the gallery a split limits
it to, and its folder of job files (its settings: `annotation/flows/eccv/settings.py`)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from django.conf import settings

from annotation.encoders.selectors import embedding_set_image_ids, embedding_set_ready
from annotation.flows.eccv.config_ids import run_config_ids
from annotation.flows.eccv.settings import EccvSettings
from annotation.models import Caption, Dataset, Project, Run, RunKind
from annotation.run_settings import run_settings
from annotation.services.runs.runs import run_check_config, run_create
from pipeline.eccv_candidates import subsample_queries
from pipeline.errors import InputError
from pipeline.splits import load_split


def eccv_workdir(run: Run) -> Path:
    """The run's folder for the proposal job's files (rankings, embeddings, top pairs)."""
    path = Path(settings.MEDIA_ROOT) / "runs" / str(run.pk) / "eccv"
    path.mkdir(parents=True, exist_ok=True)
    return path


def eccv_run_create(
    *,
    dataset: Dataset,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
    image_query_pool: Collection[int] | None = None,
) -> Run:
    """An ECCV run with its query sample drawn now (seeded), over the whole gallery.
    `image_query_pool` (COCO ids) limits the image queries to those images, e.g. the ones an
    image-text model could read (every annotator must rank every query); the run's config
    records how many there were."""
    config = run_check_config(kind=RunKind.ECCV, config=config or {})
    given = EccvSettings.from_config(config)
    recorded: dict[str, Any] = {}
    image_ids = list(dataset.images.values_list("coco_id", flat=True))
    caption_rows = list(
        Caption.objects.filter(dataset=dataset).values_list("coco_id", "image__coco_id")
    )
    caption_ids = [c for c, _ in caption_rows]
    if given.split:
        # Queries and gallery both come from the split (the paper: the COCO 5k test split).
        path = str(given.split)
        split = load_split(path)
        wanted = set(split.image_ids)
        image_ids = [i for i in image_ids if i in wanted]
        if not image_ids:
            raise InputError(
                f"none of the split's {len(wanted)} images is in dataset {dataset.name!r}",
                file=path,
                field="split",
            )
        caption_ids = [c for c, owner in caption_rows if owner in wanted]
        recorded["split"] = {
            "file": path,
            "sha256": split.sha256,
            "images_in_split": len(wanted),
            "images_in_dataset": len(image_ids),
            **split.provenance,
        }
        recorded["gallery_images"] = sorted(image_ids)
    query_images = image_ids
    if given.image_query_set is not None and image_query_pool is None:
        image_query_pool = _encoded_images(dataset, project, given.image_query_set)
    if image_query_pool is not None:
        pool = set(image_query_pool)
        query_images = [i for i in image_ids if i in pool]
        if not query_images:
            raise InputError("none of these images is in the run's gallery", field="image_queries")
        recorded["image_query_pool"] = len(query_images)
    sample = subsample_queries(
        query_images,
        caption_ids,
        min(given.image_queries, len(query_images)),
        min(given.caption_queries, len(caption_ids)),
        given.seed,
    )
    if given.k > min(len(image_ids), len(caption_ids)):
        raise InputError(
            f"k={given.k} is larger than the gallery ({len(image_ids)} images, "
            f"{len(caption_ids)} captions)",
            field="k",
        )
    recorded["query_images"] = list(sample.image_ids)
    recorded["query_captions"] = list(sample.caption_ids)
    return run_create(
        dataset=dataset,
        kind=RunKind.ECCV,
        name=name,
        config={**config, **recorded},
        project=project,
        owner=owner,
    )


def _encoded_images(dataset: Dataset, project: Project | None, set_id: Any) -> list[int]:
    """The images a stored embedding set of the run's project encoded: the image queries an
    image-text model can rank (the console's and the API's way to `image_query_pool`)."""
    embedding_set = embedding_set_ready(
        set_id=set_id, dataset=dataset, project=project, field="image_query_set"
    )
    return embedding_set_image_ids(embedding_set=embedding_set)


def eccv_gallery(*, run: Run) -> tuple[set[int], set[int]] | None:
    """The image and caption ids a split limits the run to (None: the whole dataset). The
    database reads the gallery from the run's row: no id list is sent (issue 32)."""
    gallery = run_settings(run, EccvSettings).gallery_images
    if gallery is None:
        return None
    images = set(gallery)
    rows = Caption.objects.filter(
        dataset=run.dataset, image__coco_id__in=run_config_ids(run, "gallery_images")
    ).values_list("coco_id", "image__coco_id")
    return images, {caption for caption, image in rows if image in images}
