"""The encoder's part of `manage.py demo`: with `--encoder-checkpoint` (a transformers CLIP or
SigLIP folder inside CROWDVL_IMPORT_DIR) the sample is encoded by the job and the stored set's
id is left in the demo's options (`encoder_set`) for the flows' steps (ECCV proposes with it,
CxC samples with it, caption quality scores its candidates with it); `--images DIR` gives the
sample's images from a local folder (COCO val2014 file names) instead of images.cocodataset.org.
Without a model, one line says how to give one."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.services import embedding_set_start
from annotation.flow_registry import DemoContext
from annotation.models import ImageSource, Job
from annotation.services.datasets.images import image_folder
from pipeline.errors import InputError

FAILED_NAMES_SHOWN = 3


def encoder_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--encoder-checkpoint",
        default="",
        help="a transformers CLIP or SigLIP model folder inside CROWDVL_IMPORT_DIR: the sample "
        "is encoded with it, and ECCV, CxC and caption quality use it (docs/models.md)",
    )
    parser.add_argument(
        "--images",
        default="",
        help="a folder holding the sample's images under their COCO val2014 file names "
        "(COCO_val2014_<id>.jpg), inside CROWDVL_IMPORT_DIR (or relative to it) or "
        "CROWDVL_IMAGE_DIRS: the sample is imported with its images from there (a dataset of "
        "its own) instead of images.cocodataset.org",
    )


def demo_image_source(*, captions: str, images: str) -> dict[str, Any]:
    """`dataset_import`'s image arguments for the demo: COCO's URLs, or `images` as a local
    folder under a name of its own (the URL dataset may have published batches, whose image
    source is never changed)."""
    if not images:
        return {"image_source": ImageSource.COCO_URL}
    folder = str(image_folder(images))
    tag = hashlib.sha256(folder.encode()).hexdigest()[:8]
    return {
        "image_source": ImageSource.LOCAL_DIR,
        "image_location": images,
        "name": f"{Path(captions).stem}-local-{tag}",
    }


def encoder_demo(ctx: DemoContext) -> None:
    """Encode the sample with the given model (or say how to give one)."""
    cmd, checkpoint = ctx.command, ctx.options.get("encoder_checkpoint") or ""
    if not checkpoint:
        cmd.stdout.write(
            "    image-text model: none given; `manage.py demo --encoder-checkpoint <folder>` "
            "(a transformers CLIP or SigLIP folder inside CROWDVL_IMPORT_DIR) encodes the "
            "sample for ECCV, CxC and caption quality; `--images <folder>` gives its images "
            "locally (docs/models.md)"
        )
        return
    cmd.step(f"image-text model {checkpoint}: encoding the sample (job encoders.encode)")
    try:
        embedding_set = embedding_set_start(
            dataset=ctx.dataset, checkpoint=checkpoint, device="auto", dtype="float16"
        )
    except InputError as exc:
        cmd.stdout.write(f"    refused: {exc}")
        return
    ctx.options["encoder_set_made"] = embedding_set.pk
    estimate = embedding_set.counts.get("estimate", {})
    if estimate:
        cmd.stdout.write(
            f"    estimate: {estimate['images_per_s']} images/s, "
            f"{estimate['captions_per_s']} captions/s, about {estimate['seconds']:.0f} s"
        )
    if embedding_set.job_id and embedding_set.state != EmbeddingState.READY:
        cmd.wait_for_job(Job.objects.get(pk=embedding_set.job_id))
    embedding_set.refresh_from_db()
    cmd.stdout.write(
        f"    {_counts_line(embedding_set)}, {embedding_set.size_bytes} bytes, "
        f"{embedding_set.dtype}"
    )
    failed = embedding_set.counts.get("failed_images") or []
    for line in failed[:FAILED_NAMES_SHOWN]:
        cmd.stdout.write(f"    skipped {line}")
    if embedding_set.state == EmbeddingState.READY and embedding_set.counts.get("images_encoded"):
        ctx.options["encoder_set"] = embedding_set.pk
    else:
        cmd.stdout.write(
            "    no image could be read, so the flows' encoder steps are skipped: the sample's "
            "images come from images.cocodataset.org unless `--images <folder>` gives a folder "
            "holding them under their COCO val2014 file names"
        )


def _counts_line(embedding_set: EmbeddingSet) -> str:
    counts = embedding_set.counts
    return (
        f"{embedding_set.label}: {counts.get('images_encoded', 0)} images encoded, "
        f"{counts.get('images_failed', 0)} skipped (unreadable), "
        f"{counts.get('captions_encoded', 0)} captions encoded "
        f"({counts.get('captions_truncated', 0)} truncated to the model's context)"
    )


def encoder_demo_summary(ctx: DemoContext) -> None:
    """What the demo did with the model: the counts again and each flow's use of it."""
    made = ctx.options.get("encoder_set_made")
    if not made:
        return
    embedding_set = EmbeddingSet.objects.get(pk=made)
    ctx.command.step("what the image-text model was used for")
    ctx.command.stdout.write(f"    {_counts_line(embedding_set)}")
    for line in ctx.encoder_uses or ["no flow used it (no image could be read)"]:
        ctx.command.stdout.write(f"    {line}")
