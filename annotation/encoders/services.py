"""Encode a dataset's images and captions with an image-text model: a job split into chunks
(one chunk a subtask), each chunk's rows saved as its own file, so a resumed job recomputes
only chunks that never finished; the last chunk's subtask assembles the stored set."""

from __future__ import annotations

import functools
import logging
import math
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction

from annotation.encoders.models import EmbeddingSet, EmbeddingSetUse, EmbeddingState
from annotation.encoders.names import model_name_check
from annotation.models import Caption, Dataset, EventAction, Image, Job, Project, Run
from annotation.services.events import event_record
from annotation.services.files import media_path, path_component
from annotation.services.jobs.job_timing import phase_setup
from annotation.services.jobs.jobs import (
    job_create,
    job_enqueue,
    job_fail,
    job_finishing,
    job_live,
    job_part_done,
    job_parts_set,
    job_start,
    job_succeed,
)
from annotation.services.runs.projects import project_default
from pipeline.encoders.estimate import encode_estimate
from pipeline.encoders.loading import (
    checkpoint_sha256,
    model_config,
    preprocessing_of,
    preprocessing_sha256,
)
from pipeline.errors import InputError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("annotation.encoders")

JOB_NAME = "encoders.encode"
CHUNK_IMAGES = 256
CHUNK_CAPTIONS = 2048
DTYPES = ("float16", "float32")
DEVICES = ("auto", "cpu", "cuda")
FAILED_NAMES_KEPT = 100


def encoder_checkpoint_path(*, checkpoint: str) -> Path:
    """A model folder inside CROWDVL_IMPORT_DIR (relative to it, or absolute within it)."""
    if not checkpoint:
        raise InputError("name a model folder inside the import folder", field="checkpoint")
    root = Path(settings.CROWDVL_IMPORT_DIR).resolve()
    path = (root / checkpoint).resolve()
    if not path.is_relative_to(root):
        raise InputError(
            "only model folders inside the import folder (CROWDVL_IMPORT_DIR) can be used",
            file=checkpoint,
            field="checkpoint",
        )
    if not path.is_dir():
        raise InputError("model folder does not exist", file=checkpoint, field="checkpoint")
    return path


def encoder_device(*, device: str) -> str:
    """`auto` is CUDA when the installed torch reports a device, else the CPU; `cuda` without
    one is refused here, before a job starts, not by the job's first chunk."""
    if device not in DEVICES:
        raise InputError(f"must be one of {', '.join(DEVICES)}", field="device")
    if device == "cpu":
        return device
    try:
        import torch

        cuda = bool(torch.cuda.is_available())
    except ImportError:  # the encoders extra is not installed: the job will say so
        cuda = False
    if cuda:
        return "cuda"
    if device == "cuda":
        raise InputError("the installed torch reports no CUDA device", field="device")
    return "cpu"


def _media(relative: str) -> Path:
    return media_path(relative)  # links resolved: never outside MEDIA_ROOT


def _parts_dir(embedding_set: EmbeddingSet) -> Path:
    return _media(f"embeddings/{embedding_set.dataset_id}/{embedding_set.pk}.parts")


def embedding_set_start(
    *,
    dataset: Dataset,
    checkpoint: str,
    project: Project | None = None,
    model_name: str = "",
    dtype: str = "float32",
    device: str = "cpu",
    license: str = "",
    source: str = "",
    chunk_images: int = CHUNK_IMAGES,
    chunk_captions: int = CHUNK_CAPTIONS,
) -> EmbeddingSet:
    """The dataset's embeddings by the model in `checkpoint` (a transformers folder inside
    CROWDVL_IMPORT_DIR), for `project`'s runs (None: the default project, as runs made without
    one): the project's stored set when one exists for the same model name, weights and
    preprocessing, else a new set whose encoding job starts after commit. The set's
    `counts["estimate"]` holds the expected rates and seconds."""
    model_name = model_name_check(model_name)  # before anything is read or written
    project = project or project_default()
    path = encoder_checkpoint_path(checkpoint=checkpoint)
    described = model_config(path)
    if dtype not in DTYPES:
        raise InputError(f"must be one of {', '.join(DTYPES)}", field="dtype")
    device = encoder_device(device=device)
    if chunk_images < 1 or chunk_captions < 1:
        raise InputError("chunks hold at least one item", field="chunk_images")
    name = model_name or path.name[:200]
    preprocessing = preprocessing_of(path)
    sha = checkpoint_sha256(path)
    images, captions = dataset.images.count(), Caption.objects.filter(dataset=dataset).count()
    estimate = encode_estimate(described, images=images, captions=captions)
    with transaction.atomic():
        embedding_set, created = EmbeddingSet.objects.select_for_update().get_or_create(
            project=project,
            dataset=dataset,
            model_name=name,
            checkpoint_sha256=sha,
            preprocessing_sha256=preprocessing_sha256(preprocessing),
            defaults={
                "family": described["model_type"],
                "checkpoint": str(path.relative_to(Path(settings.CROWDVL_IMPORT_DIR).resolve())),
                "preprocessing": preprocessing,
                "license": license[:200],
                "source": source[:500],
                "dtype": dtype,
                "device": device,
            },
        )
        if embedding_set.state == EmbeddingState.READY:
            return embedding_set  # stored once, reused by every run of the dataset
        if embedding_set.job_id and job_live(job_id=embedding_set.job_id):
            return embedding_set
        job = job_create(
            name=JOB_NAME,
            params={
                "set": embedding_set.pk,
                "chunk_images": chunk_images,
                "chunk_captions": chunk_captions,
            },
        )
        embedding_set.job = job
        embedding_set.state = EmbeddingState.BUILDING
        embedding_set.counts = {
            "images": images,
            "captions": captions,
            "estimate": {
                "images_per_s": round(estimate.images_per_s, 2),
                "captions_per_s": round(estimate.captions_per_s, 2),
                "seconds": round(estimate.seconds, 3),
            },
        }
        embedding_set.save(update_fields=["job", "state", "counts"])
        event_record(
            action=EventAction.ENCODERS_STARTED,
            data={"set": embedding_set.pk, "model": embedding_set.label, "created": created},
        )
        from annotation.encoders import tasks

        job_enqueue(job=job, task=tasks.encode_prepare_task)
    return embedding_set


def embedding_set_arrays(*, embedding_set: EmbeddingSet) -> dict[str, np.ndarray]:
    """The stored set's four arrays (ids and float32 unit rows)."""
    import numpy as np  # here, not at start-up: the API's URLs load this module (issue 46)

    if embedding_set.state != EmbeddingState.READY:
        raise InputError(f"the embeddings are {embedding_set.state}, not ready", field="set")
    with np.load(_media(embedding_set.file)) as f:
        return {k: f[k].astype(np.float32) if "embeddings" in k else f[k] for k in f.files}


def embedding_set_use_record(*, embedding_set: EmbeddingSet, run: Run) -> None:
    """Note that `run` read the set; a set of another project or dataset is refused, as
    one that does not exist (issue 47)."""
    if embedding_set.project_id != run.project_id or embedding_set.dataset_id != run.dataset_id:
        raise InputError(
            f"no embedding set {embedding_set.pk} of this dataset in the run's project",
            field="set",
        )
    EmbeddingSetUse.objects.get_or_create(embedding_set=embedding_set, run=run)


def embedding_set_delete(*, embedding_set: EmbeddingSet, force: bool = False) -> None:
    """Remove a stored set and its file (refused while its job still runs, and, unless
    `force`, while a run that read it exists: its annotators and sampling jobs read the file)."""
    if embedding_set.job_id and job_live(job_id=embedding_set.job_id):
        raise InputError("the set is still being encoded; cancel its job first", field="set")
    used_by = list(
        EmbeddingSetUse.objects.filter(embedding_set=embedding_set)
        .order_by("run_id")
        .values_list("run_id", flat=True)
    )
    if used_by and not force:
        runs = ", ".join(str(r) for r in used_by)
        raise InputError(
            f"embedding set {embedding_set.pk} ({embedding_set.label}) was used by run(s) "
            f"{runs}; they read its file. Delete it anyway with force",
            field="set",
        )
    if embedding_set.file:
        _media(embedding_set.file).unlink(missing_ok=True)
    shutil.rmtree(_parts_dir(embedding_set), ignore_errors=True)
    event_record(
        action=EventAction.ENCODERS_DELETED,
        data={"set": embedding_set.pk, "model": embedding_set.label, "used_by": used_by},
    )
    embedding_set.delete()


# --- the job's steps -------------------------------------------------------------------------


def _set_of(job_id: int) -> EmbeddingSet:
    job = Job.objects.get(pk=job_id)
    return EmbeddingSet.objects.select_related("dataset").get(pk=job.params["set"])


def _plan(job: Job, embedding_set: EmbeddingSet) -> tuple[int, int]:
    """(image parts, caption parts): parts 0.. cover images by coco id, then captions."""
    images = embedding_set.dataset.images.count()
    captions = Caption.objects.filter(dataset=embedding_set.dataset).count()
    return (
        math.ceil(images / int(job.params["chunk_images"])),
        math.ceil(captions / int(job.params["chunk_captions"])),
    )


def encode_fail(*, job_id: int, error: str) -> None:
    job = Job.objects.get(pk=job_id)
    EmbeddingSet.objects.filter(pk=job.params.get("set"), job_id=job_id).update(
        state=EmbeddingState.FAILED
    )
    job_fail(job_id=job_id, error=error)


def encode_prepare(*, job_id: int) -> list[int]:
    """Split the job; the parts to send (none when a redelivered prepare finds it split)."""
    job = job_start(job_id=job_id, message="splitting into chunks")
    embedding_set = _set_of(job_id)
    image_parts, caption_parts = _plan(job, embedding_set)
    total = image_parts + caption_parts
    if total == 0:
        raise InputError("the dataset has no images or captions", field="dataset")
    if not job_parts_set(job_id=job_id, total=total):
        return []
    _parts_dir(embedding_set).mkdir(parents=True, exist_ok=True)
    return list(range(total))


_LOADED: dict[tuple[str, str, str], Any] = {}


def encoder_for_set(embedding_set: EmbeddingSet) -> Any:
    """The set's model, loaded once per worker process; its weights checked against the
    set's sha256 (a folder changed since the set began would mix two models)."""
    from pipeline.encoders.encode import threads_for
    from pipeline.encoders.loading import encoder_load, torch_modules

    path = encoder_checkpoint_path(checkpoint=embedding_set.checkpoint)
    key = (str(path), embedding_set.checkpoint_sha256, embedding_set.device)
    if key not in _LOADED:
        # Paid by a worker's first chunk only (torch, the weights' check, the load): what the
        # scale-out model calls a worker's setup.
        with phase_setup():
            if checkpoint_sha256(path) != embedding_set.checkpoint_sha256:
                raise InputError(
                    "the weights changed since encoding began",
                    file=embedding_set.checkpoint,
                    field="checkpoint",
                )
            torch, _ = torch_modules()
            processes = (
                int(os.environ.get("CELERY_WORKER_CONCURRENCY") or 0)
                or int(getattr(settings, "CROWDVL_ENCODER_PROCESSES", 0) or 0)
                or 1
            )
            torch.set_num_threads(
                threads_for(cores=len(os.sched_getaffinity(0)), processes=processes)
            )
            _LOADED.clear()  # one model at a time per process
            _LOADED[key] = encoder_load(path, device=embedding_set.device)
    return _LOADED[key]


def encode_part(*, job_id: int, part: int) -> bool:
    """Encode one chunk unless its file exists; True when it was the job's last part."""
    import numpy as np

    from pipeline.encoders.encode import encode_images, encode_texts

    job = Job.objects.get(pk=job_id)
    embedding_set = _set_of(job_id)
    image_parts, caption_parts = _plan(job, embedding_set)
    target = _parts_dir(embedding_set) / f"part-{part:05d}.npz"
    started = time.monotonic()
    if target.exists():
        message = f"chunk {part + 1}/{image_parts + caption_parts} found done"
    else:
        encoder = encoder_for_set(embedding_set)
        if part < image_parts:
            size = int(job.params["chunk_images"])
            rows = list(
                Image.objects.filter(dataset=embedding_set.dataset)
                .select_related("dataset")
                .order_by("coco_id")[part * size : (part + 1) * size]
            )
            by_name = {image.file_name: image for image in rows}
            encoded = encode_images(
                encoder,
                [(image.file_name, functools.partial(_original_bytes, image)) for image in rows],
            )
            arrays: dict[str, Any] = {
                "ids": np.asarray([by_name[n].coco_id for n in encoded.names], dtype=np.int64),
                "rows": encoded.rows,
                "failed": np.asarray([f"{n}: {why}" for n, why in encoded.failed], dtype=str),
                "truncated": np.asarray(0),
            }
            rate = len(rows) / max(time.monotonic() - started, 1e-9)
            unit = "images"
        else:
            size = int(job.params["chunk_captions"])
            index = part - image_parts
            caption_rows = list(
                Caption.objects.filter(dataset=embedding_set.dataset)
                .order_by("coco_id")
                .values_list("coco_id", "text")[index * size : (index + 1) * size]
            )
            texts = encode_texts(encoder, [t for _, t in caption_rows])
            arrays = {
                "ids": np.asarray([c for c, _ in caption_rows], dtype=np.int64),
                "rows": texts.rows,
                "failed": np.asarray([], dtype=str),
                "truncated": np.asarray(texts.truncated),
            }
            rate = len(caption_rows) / max(time.monotonic() - started, 1e-9)
            unit = "captions"
        tmp = target.with_name(target.stem + ".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.replace(target)  # whole or absent: a killed worker leaves no half chunk
        message = f"chunk {part + 1}/{image_parts + caption_parts}: {rate:.1f} {unit}/s"
    return job_part_done(job_id=job_id, part=part, message=message)


def encode_finish(*, job_id: int) -> None:
    """Assemble the chunks into the stored set's file (once, under the job's row lock)."""
    import numpy as np

    job = Job.objects.get(pk=job_id)
    embedding_set = _set_of(job_id)
    image_parts, caption_parts = _plan(job, embedding_set)
    folder = _parts_dir(embedding_set)
    loaded = []
    for part in range(image_parts + caption_parts):
        with np.load(folder / f"part-{part:05d}.npz") as f:
            loaded.append({k: f[k] for k in f.files})
    images, captions = loaded[:image_parts], loaded[image_parts:]
    dtype = np.dtype(embedding_set.dtype)
    dim = next((p["rows"].shape[1] for p in loaded if p["rows"].size), 0)

    def stack(parts: list[dict[str, np.ndarray]], key: str) -> np.ndarray:
        if key == "ids":
            return np.concatenate([p["ids"] for p in parts]) if parts else np.zeros(0, np.int64)
        blocks = [p["rows"].reshape(-1, dim) for p in parts]
        return (np.concatenate(blocks) if blocks else np.zeros((0, dim))).astype(dtype)

    failed = [str(x) for p in images for x in p["failed"].tolist()]
    name = path_component(f"{embedding_set.pk}-{embedding_set.label}", limit=120)
    relative = f"embeddings/{embedding_set.dataset_id}/{name}.npz"
    target = _media(relative)
    tmp = target.with_name(target.stem + ".tmp.npz")
    np.savez(
        tmp,
        image_ids=stack(images, "ids"),
        image_embeddings=stack(images, "rows"),
        caption_ids=stack(captions, "ids"),
        caption_embeddings=stack(captions, "rows"),
    )
    with job_finishing(job_id=job_id) as running:
        if not running:
            tmp.unlink(missing_ok=True)
            return
        tmp.replace(target)
        counts = {
            **embedding_set.counts,
            "images_encoded": int(sum(p["ids"].size for p in images)),
            "captions_encoded": int(sum(p["ids"].size for p in captions)),
            "images_failed": len(failed),
            "failed_images": failed[:FAILED_NAMES_KEPT],
            "captions_truncated": int(sum(int(p["truncated"]) for p in captions)),
        }
        EmbeddingSet.objects.filter(pk=embedding_set.pk).update(
            state=EmbeddingState.READY,
            file=relative,
            size_bytes=target.stat().st_size,
            dim=dim,
            counts=counts,
        )
        result = {"set": embedding_set.pk, "model": embedding_set.label, **counts}
        job_succeed(
            job_id=job_id,
            result=result,
            message=f"{counts['images_encoded']} images, {counts['captions_encoded']} captions "
            f"({counts['images_failed']} images unreadable, {counts['captions_truncated']} "
            "captions truncated)",
        )
    shutil.rmtree(folder, ignore_errors=True)


def _original_bytes(image: Image) -> bytes:
    # A named function, not a lambda in a loop: each image's reader keeps its own image.
    from annotation.services.datasets.images import image_original

    return image_original(image=image)
