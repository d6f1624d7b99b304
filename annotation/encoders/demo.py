"""The encoder's part of `manage.py demo`: with `--encoder-checkpoint` (a transformers CLIP or
SigLIP folder inside CROWDVL_IMPORT_DIR) the sample is encoded by the job and the stored set's
id is left in the demo's options (`encoder_set`) for the flows' steps (caption quality scores
its candidates with it); without it, one line says how to give one."""

from __future__ import annotations

import argparse

from annotation.encoders.models import EmbeddingState
from annotation.encoders.services import embedding_set_start
from annotation.flow_registry import DemoContext
from annotation.models import Job
from pipeline.errors import InputError


def encoder_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--encoder-checkpoint",
        default="",
        help="a transformers CLIP or SigLIP model folder inside CROWDVL_IMPORT_DIR: the sample "
        "is encoded with it and caption quality is scored with it (docs/models.md)",
    )


def encoder_demo(ctx: DemoContext) -> None:
    """Encode the sample with the given model (or say how to give one)."""
    cmd, checkpoint = ctx.command, ctx.options.get("encoder_checkpoint") or ""
    if not checkpoint:
        cmd.stdout.write(
            "    image-text model: none given; `manage.py demo --encoder-checkpoint <folder>` "
            "(a transformers CLIP or SigLIP folder inside CROWDVL_IMPORT_DIR) encodes the "
            "sample and scores caption quality with it (docs/models.md)"
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
    estimate = embedding_set.counts.get("estimate", {})
    if estimate:
        cmd.stdout.write(
            f"    estimate: {estimate['images_per_s']} images/s, "
            f"{estimate['captions_per_s']} captions/s, about {estimate['seconds']:.0f} s"
        )
    if embedding_set.job_id and embedding_set.state != EmbeddingState.READY:
        cmd.wait_for_job(Job.objects.get(pk=embedding_set.job_id))
    embedding_set.refresh_from_db()
    counts = embedding_set.counts
    cmd.stdout.write(
        f"    {embedding_set.label}: {counts.get('images_encoded', 0)} images, "
        f"{counts.get('captions_encoded', 0)} captions ({counts.get('images_failed', 0)} "
        f"images unreadable, {counts.get('captions_truncated', 0)} captions truncated), "
        f"{embedding_set.size_bytes} bytes, {embedding_set.dtype}"
    )
    if embedding_set.state == EmbeddingState.READY and counts.get("images_encoded"):
        ctx.options["encoder_set"] = embedding_set.pk
    else:
        cmd.stdout.write(
            "    no image could be read (the sample's images come from images.cocodataset.org): "
            "the flows' encoder steps are skipped"
        )
