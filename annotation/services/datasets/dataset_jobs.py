"""Imports as background jobs: the file (uploaded or on the server) is stored first, then a
Celery task validates and writes it while the Job row reports progress."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotation.errors import page_message
from annotation.models import EventAction, ImageSource, Job
from annotation.services.datasets.datasets import (
    DatasetImportResult,
    dataset_import,
    image_location_check,
)
from annotation.services.events import event_record
from annotation.services.files import media_path, path_component
from annotation.services.jobs.jobs import (
    job_create,
    job_fail,
    job_finished_result,
    job_progress,
    job_start,
    job_succeed,
)
from pipeline.errors import InputError

JOB_NAME = "dataset.import"


def upload_size_check(upload: UploadedFile, *, field: str = "file") -> None:
    """Refuse an upload over CROWDVL_MAX_UPLOAD_MB before a copy of it is kept."""
    limit = int(settings.CROWDVL_MAX_UPLOAD_MB)
    size = upload.size or 0
    if size > limit * 1024 * 1024:
        raise InputError(
            f"{size / 1024 / 1024:,.0f} MB is over the upload limit of {limit:,} MB "
            "(CROWDVL_MAX_UPLOAD_MB); put the file in the import folder and give its path",
            file=upload.name or "upload",
            field=field,
        )


def upload_store(*, upload: UploadedFile, folder: Path, suffix: str | None = None) -> Path:
    """Copy an upload (Django has already spooled a large one to a temporary file) into a new
    folder under `folder`, chunk by chunk, after the size check. The stored name keeps a safe
    form of the original's stem, with `suffix` or the original's own (sanitised)."""
    upload_size_check(upload)
    original = Path(upload.name or "upload")
    stem = path_component(original.stem, limit=100)  # a browser's name: a claim, never a path
    if suffix is None:
        suffix = re.sub(r"[^A-Za-z0-9.]+", "", original.suffix)[:10]
    target = media_path(folder, uuid.uuid4().hex, field="file")  # links resolved: under media
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{stem}{suffix}"
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


def dataset_upload_store(*, upload: UploadedFile) -> Path:
    """A COCO captions upload kept under MEDIA_ROOT/imports/ until its import job ends."""
    return upload_store(upload=upload, folder=uploads_folder(), suffix=".json")


def uploads_folder() -> Path:
    return media_path("imports", field="file")


def server_file(path: str, *, field: str = "path") -> Path:
    """A file the API may import by path: inside CROWDVL_IMPORT_DIR (links resolved), so an
    API client cannot make the server read any other file it can reach."""
    root = Path(settings.CROWDVL_IMPORT_DIR).resolve()
    resolved = (root / path).resolve()
    if not resolved.is_relative_to(root):
        raise InputError(
            "only files inside the import folder (CROWDVL_IMPORT_DIR) can be imported "
            "by path; upload the file instead",
            file=path,
            field=field,
        )
    return resolved


def dataset_import_start(
    *,
    path: str | Path,
    name: str | None = None,
    image_source: str = ImageSource.COCO_URL,
    image_location: str = "",
    uploaded: bool = False,
    source: str | None = None,
    update_image_source: bool = False,
) -> Job:
    """Record and enqueue an import job for a file already on this server. An `uploaded` file
    (stored by `dataset_upload_store`) is deleted when the job ends, whatever its outcome.
    `source`: the file as its user named it (an upload's own name, a path inside the import
    folder), which messages and the dataset show instead of the server's path."""
    from annotation import tasks

    image_location_check(
        image_source=image_source, image_location=image_location, file=source or str(path)
    )
    if not Path(path).is_file():
        raise InputError("no such file on the server", file=source or str(path), field="path")
    params = {
        "uploaded": uploaded,
        "path": str(path),
        "source": source or str(path),
        "name": name or Path(path).stem,
        "image_source": image_source,
        "image_location": image_location,
        "update_image_source": update_image_source,
    }
    with transaction.atomic():
        job = job_create(name=JOB_NAME, params=params)
        event_record(action=EventAction.DATASET_IMPORT_REQUESTED, data={"job": job.pk, **params})
        transaction.on_commit(lambda: tasks.dataset_import_task.delay(job.pk))
    return job


def dataset_import_upload(
    *,
    upload: UploadedFile,
    name: str | None = None,
    image_source: str = ImageSource.COCO_URL,
    image_location: str = "",
    update_image_source: bool = False,
) -> Job:
    """The console's import: where the images are is checked first (nothing is kept when it
    is refused), then the upload is stored and its import job started."""
    image_location_check(image_source=image_source, image_location=image_location, file=upload.name)
    return dataset_import_start(
        path=dataset_upload_store(upload=upload),
        name=name,
        image_source=image_source,
        image_location=image_location,
        uploaded=True,
        source=upload.name,
        update_image_source=update_image_source,
    )


def _upload_delete(params: dict) -> None:
    """Remove a stored upload once its import has ended (its sha256 stays on the dataset)."""
    if not params.get("uploaded"):
        return
    folder = Path(params["path"]).parent
    if folder.parent.resolve() == uploads_folder().resolve():
        shutil.rmtree(folder, ignore_errors=True)


def dataset_import_job(*, job_id: int) -> None:
    """The import task's body. A bad file fails the job with the error naming file, record
    and field (retrying cannot help); a redelivered finished job does nothing."""
    if job_finished_result(job_id=job_id) is not None:
        return
    job = job_start(job_id=job_id, message="importing")
    params = job.params
    try:
        result = dataset_import(
            path=params["path"],
            name=params["name"],
            image_source=params["image_source"],
            image_location=params["image_location"],
            progress=lambda pct, msg: job_progress(job_id=job_id, progress=pct, message=msg),
            source=params.get("source"),  # jobs queued before issue 25 have none
            update_image_source=bool(params.get("update_image_source")),
        )
    except InputError as exc:
        job_fail(job_id=job_id, error=str(exc))
        located = {"file": exc.file, "record": exc.record, "field": exc.field}
        # A console page shows the refusal in its own words (`error` names CLI options).
        page = {"page_error": page_message(exc)} if exc.page else {}
        Job.objects.filter(pk=job_id).update(result={**located, **page})
        _upload_delete(params)
        return
    _upload_delete(params)
    summary = {
        "dataset": result.dataset.pk,
        "name": result.dataset.name,
        "created": result.created,
        "images": result.images,
        "captions": result.captions,
        "skipped_images": result.skipped_images,
        "warnings": result.warnings[:100],
        "image_files": result.image_files,
        "image_source_changed": result.source_changed,
    }
    if result.created:
        event_record(
            action=EventAction.DATASET_IMPORTED, data={"job": job_id, **summary, "warnings": []}
        )
    job_succeed(job_id=job_id, result=summary, message=import_summary(result))


def import_summary(result: DatasetImportResult) -> str:
    """One line on what an import did, for the job page and the command line."""
    if result.created:
        verb = "imported"
    elif result.source_changed:
        verb = "already imported; its image source changed:"
    else:
        verb = "already imported, nothing changed:"
    files = "" if result.image_files is None else f", {result.image_files} image files found"
    return f"{verb} {result.images} images, {result.captions} captions{files}"
