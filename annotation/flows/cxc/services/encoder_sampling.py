"""CxC sampling with an image-text model's stored embeddings: c2c_isim pairs then come from
real image similarity (no stand-in). i2i_csim pairs come, as in CxC, from a different
encoder: another model's caption embeddings (`caption_set`) or FastText trained on the
dataset's captions; from this model's own caption embeddings only when the run's
`sampling_encoders` is `joint` (a deviation). The job's result names the model and its
checkpoint sha256 for each similarity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.services import embedding_set_use_record
from annotation.flows.cxc.services.sampling import cxc_sample_start
from annotation.models import Job, Run
from pipeline.errors import InputError


def _usable(*, run: Run, embedding_set: EmbeddingSet, field: str) -> dict[str, Any]:
    """The set as the job reads it, refused (naming `field`) unless ready and of this run's
    dataset."""
    if embedding_set.dataset_id != run.dataset_id:
        raise InputError("the embeddings are of another dataset", field=field)
    if embedding_set.state != EmbeddingState.READY:
        raise InputError(f"the embeddings are {embedding_set.state}, not ready", field=field)
    return {
        "set": embedding_set.pk,
        "model": embedding_set.label,
        "checkpoint_sha256": embedding_set.checkpoint_sha256,
        "file": str(Path(settings.MEDIA_ROOT) / embedding_set.file),
    }


def cxc_sample_from_encoder(
    *, run: Run, embedding_set: EmbeddingSet, caption_set: EmbeddingSet | None = None
) -> Job:
    """Start CxC's sampling job on the set's image embeddings (its file is named
    `<set id>-<model>@<checkpoint hash>.npz`) and, for captions, `caption_set`'s caption
    embeddings (a different model), FastText, or this set's own (`joint` runs); the manifest
    names the encoder of each."""
    encoder = _usable(run=run, embedding_set=embedding_set, field="set")
    caption_encoder = (
        _usable(run=run, embedding_set=caption_set, field="caption_set") if caption_set else None
    )
    with transaction.atomic():  # the uses and the job together, or neither
        embedding_set_use_record(embedding_set=embedding_set, run=run)  # refuses another project's
        if caption_set is not None:
            try:
                embedding_set_use_record(embedding_set=caption_set, run=run)
            except InputError as exc:
                raise InputError(exc.message, field="caption_set") from None
        return cxc_sample_start(
            run=run,
            image_embeddings_path=encoder["file"],
            encoder=encoder,
            caption_encoder=caption_encoder,
        )
