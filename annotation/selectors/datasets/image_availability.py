"""Whether a batch's images can be shown before workers see it: a local folder's files exist,
a remote source's images were fetched into the cache by the image job. A batch with images
that cannot be shown is not published (workers would see grey boxes)."""

from __future__ import annotations

from pathlib import Path

from django.db.models import Q

from annotation.errors import ServiceError
from annotation.models import Batch, Image, ImageSource, Job, JobState
from annotation.providers import provider_for
from annotation.services.datasets.images import cache_path_for


def local_files_found(*, folder: Path, file_names: list[str]) -> int:
    """How many of `file_names` are files inside `folder` (links resolved, never outside)."""
    root = folder.resolve()
    found = 0
    for name in file_names:
        path = (root / name).resolve()
        found += root in path.parents and path.is_file()
    return found


def batch_images(batch: Batch) -> list[Image]:
    """Every image a question of `batch` shows."""
    shown = Q(pk__in=batch.hits.values("questions__item__positive")) | Q(
        pk__in=batch.hits.values("questions__item__negative")
    )
    return list(Image.objects.filter(shown).select_related("dataset").distinct())


def batch_images_check(*, batch: Batch) -> None:
    """Refuse to publish a batch whose images cannot all be shown, with the reason and what to
    do; simulated workers look at no image."""
    if provider_for(batch.provider).simulated:
        return
    images = batch_images(batch)
    if not images:
        return
    dataset = images[0].dataset
    if dataset.image_source == ImageSource.LOCAL_DIR:
        found = local_files_found(
            folder=Path(dataset.image_location), file_names=[i.file_name for i in images]
        )
        missing = len(images) - found
        if missing:
            raise ServiceError(
                f"{missing} of {len(images)} images of batch {batch.pk} are not in dataset "
                f"{dataset.name!r}'s image folder: workers would see grey boxes. Put the files "
                "there (or re-import the dataset with the right folder), then publish."
            )
        return
    missing = sum(not cache_path_for(i.pk).exists() for i in images)
    if not missing:
        return
    job = Job.objects.filter(name="images.cache", params__batch=batch.pk).order_by("-pk").first()
    if job is not None and job.state in (JobState.PENDING, JobState.RUNNING):
        raise ServiceError(
            f"{missing} of {len(images)} images of batch {batch.pk} are still being fetched "
            f"(job {job.pk}, {job.progress:.0f}%): publish when it has finished."
        )
    raise ServiceError(
        f"{missing} of {len(images)} images of batch {batch.pk} could not be fetched from "
        f"dataset {dataset.name!r}'s {dataset.get_image_source_display()}: workers would see "
        "grey boxes. Check the source (URLs, prefix) and fetch again by creating a new batch."
    )
