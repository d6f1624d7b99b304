"""Reads of stored embeddings: a dataset's sets for the console and the API, one set by id
(for a run's inputs, inside the run's project), the runs that used a set, and the estimate
shown before a job starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.services import encoder_checkpoint_path
from annotation.models import Caption, Dataset, Project
from pipeline.encoders.estimate import encode_estimate
from pipeline.encoders.loading import model_config
from pipeline.errors import InputError


def embedding_sets_of(
    *, dataset: Dataset, projects: QuerySet[Project] | None = None
) -> QuerySet[EmbeddingSet]:
    """The dataset's stored sets with their jobs, newest first; only those of `projects` when
    given (a member sees their projects' sets, never another project's). `runs_used`: how
    many runs read each."""
    sets = EmbeddingSet.objects.filter(dataset=dataset)
    if projects is not None:
        sets = sets.filter(project__in=projects)
    return sets.select_related("job", "project").annotate(runs_used=Count("uses")).order_by("-pk")


def embedding_set_get(
    *, set_id: Any, dataset: Dataset | None = None, project: Project | None = None
) -> EmbeddingSet:
    """The set with this id (of `dataset` and of `project` when given); a refusal naming the
    `set` field. Another project's set is refused as one that does not exist: a run only reads
    its own project's sets, and another project's ids are not confirmed (issue 47)."""
    try:
        wanted = int(set_id)
    except (TypeError, ValueError):
        raise InputError("must be the id of a stored embedding set", field="set") from None
    found = EmbeddingSet.objects.filter(pk=wanted)
    if dataset is not None:
        found = found.filter(dataset=dataset)
    if project is not None:
        found = found.filter(project=project)
    embedding_set = found.select_related("dataset", "job", "project").first()
    if embedding_set is None:
        where = f" in project {project.name!r}" if project is not None else ""
        raise InputError(f"no embedding set {wanted} of this dataset{where}", field="set")
    return embedding_set


def embedding_set_image_ids(*, embedding_set: EmbeddingSet) -> list[int]:
    """The COCO ids of the images the set encoded (those unreadable when it ran are absent)."""
    import numpy as np  # here, not at start-up: the API's URLs load this module (issue 46)

    with np.load(Path(settings.MEDIA_ROOT) / embedding_set.file) as f:
        return [int(i) for i in f["image_ids"].tolist()]


def embedding_set_readable_images(*, embedding_set: EmbeddingSet) -> list[int] | None:
    """The COCO ids of the images the set encoded when it could not read them all (None when
    it read every one): what a demo draws its images from so that the model scores them."""
    if not embedding_set.counts.get("images_failed"):
        return None
    return embedding_set_image_ids(embedding_set=embedding_set)


def embedding_set_ready(
    *, set_id: Any, dataset: Dataset, project: Project | None, field: str = "set"
) -> EmbeddingSet:
    """A ready set of `dataset` in `project` (None: the default project, as runs made without
    one); a refusal naming `field` otherwise."""
    if project is None:
        from annotation.services.runs.projects import project_default

        project = project_default()
    try:
        embedding_set = embedding_set_get(set_id=set_id, dataset=dataset, project=project)
    except InputError as e:
        raise InputError(e.message, field=field) from None
    if embedding_set.state != EmbeddingState.READY:
        raise InputError(f"the embeddings are {embedding_set.state}, not ready", field=field)
    return embedding_set


def embedding_set_estimate(*, dataset: Dataset, checkpoint: str) -> dict[str, float | int]:
    """What encoding the dataset with the model in `checkpoint` would take, from its config
    alone (nothing loaded): counts, images/s, captions/s and seconds."""
    config = model_config(encoder_checkpoint_path(checkpoint=checkpoint))
    images = dataset.images.count()
    captions = Caption.objects.filter(dataset=dataset).count()
    estimate = encode_estimate(config, images=images, captions=captions)
    return {
        "images": images,
        "captions": captions,
        "images_per_s": round(estimate.images_per_s, 2),
        "captions_per_s": round(estimate.captions_per_s, 2),
        "seconds": round(estimate.seconds, 3),
    }
