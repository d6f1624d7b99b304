"""ECCV annotators of kind "image-text model": proposals from a stored EmbeddingSet (real
image and caption embeddings of a CLIP or SigLIP model), named by model and checkpoint hash
so proposals, the export's JSONL and the model-bias report say which weights proposed."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.selectors import embedding_set_image_ids
from annotation.encoders.services import embedding_set_use_record
from annotation.flows.eccv.models import Annotator, AnnotatorKind
from annotation.flows.eccv.services.annotators import eccv_annotator_add
from annotation.flows.eccv.settings import eccv_settings
from annotation.models import Run
from pipeline.errors import InputError


def eccv_encoder_annotator_add(
    *, run: Run, embedding_set: EmbeddingSet, name: str = ""
) -> Annotator:
    """An annotator ranking with `embedding_set` (ready, of the run's dataset). Its name is
    `<model>@<checkpoint sha256, 12 digits>` unless given; several may join one run. The
    query never sees its own caption: image rows are the encoder's own, not caption means."""
    if embedding_set.dataset_id != run.dataset_id:
        raise InputError("the embeddings are of another dataset", field="set")
    if embedding_set.state != EmbeddingState.READY:
        raise InputError(f"the embeddings are {embedding_set.state}, not ready", field="set")
    _check_query_images(run=run, embedding_set=embedding_set)
    with transaction.atomic():  # the use and the annotator together, or neither
        embedding_set_use_record(embedding_set=embedding_set, run=run)  # refuses another project's
        return eccv_annotator_add(
            run=run,
            name=name or embedding_set.label,
            kind=AnnotatorKind.IMAGE_TEXT,
            source=str(Path(settings.MEDIA_ROOT) / embedding_set.file),
            params={
                "embedding_set": embedding_set.pk,
                "model": embedding_set.model_name,
                "checkpoint_sha256": embedding_set.checkpoint_sha256,
                "preprocessing_sha256": embedding_set.preprocessing_sha256,
                "library": embedding_set.library,
                "family": embedding_set.family,
                "dtype": embedding_set.dtype,
                "license": embedding_set.license,
                "weights_source": embedding_set.source,
            },
        )


def _check_query_images(*, run: Run, embedding_set: EmbeddingSet) -> None:
    """Every annotator ranks every query: an image query the model could not read (skipped
    when the set was encoded) is refused now, not by the proposal job."""
    encoded = set(embedding_set_image_ids(embedding_set=embedding_set))
    queries = eccv_settings(run).query_images
    missing = [i for i in queries if i not in encoded]
    if missing:
        raise InputError(
            f"{len(missing)} of the run's {len(queries)} image queries have "
            f"no image embedding in {embedding_set.label} (unreadable when it was encoded); "
            "draw the run's image queries from the encoded images (the run setting "
            f"image_query_set = {embedding_set.pk}) or encode again with the images readable",
            record=missing[0],
            field="set",
        )
