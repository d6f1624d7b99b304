"""CxC sampling with an image-text model's stored embeddings: c2c_isim pairs then come from
real image similarity (no stand-in), i2i_csim pairs from the model's caption embeddings
averaged over co-captions (not FastText), and the job's result names the model and its
checkpoint sha256 for each similarity."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.encoders.services import embedding_set_use_record
from annotation.flows.cxc.services.sampling import cxc_sample_start
from annotation.models import Job, Run
from pipeline.errors import InputError


def cxc_sample_from_encoder(*, run: Run, embedding_set: EmbeddingSet) -> Job:
    """Start CxC's sampling job on the set's image and caption embeddings (its file is named
    `<set id>-<model>@<checkpoint hash>.npz`; the manifest names the model for each)."""
    if embedding_set.dataset_id != run.dataset_id:
        raise InputError("the embeddings are of another dataset", field="set")
    if embedding_set.state != EmbeddingState.READY:
        raise InputError(f"the embeddings are {embedding_set.state}, not ready", field="set")
    with transaction.atomic():  # the use and the job together, or neither
        embedding_set_use_record(embedding_set=embedding_set, run=run)  # refuses another project's
        path = str(Path(settings.MEDIA_ROOT) / embedding_set.file)
        return cxc_sample_start(
            run=run,
            image_embeddings_path=path,
            encoder={
                "set": embedding_set.pk,
                "model": embedding_set.label,
                "checkpoint_sha256": embedding_set.checkpoint_sha256,
                "file": path,
            },
        )
