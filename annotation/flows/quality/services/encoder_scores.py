"""Caption-quality scores of a run's candidates from an image-text model: per caption, one
CSV per score (`image,caption,score`, the metric layout `quality_correlate` reads), from the
stored image and reference rows and the candidates encoded now by the same weights. CLIP
models give CLIP-S, RefCLIP-S, PAC-S(-style), RefPAC-S(-style); SigLIP models their own
SigLIP-S and RefSigLIP-S (the CLIP weights w are refused for them: pipeline/encoders/scores)."""

from __future__ import annotations

import csv

import numpy as np

from annotation.encoders.models import EmbeddingSet
from annotation.encoders.services import embedding_set_arrays, encoder_for_set
from annotation.flows.quality.models import Candidate
from annotation.models import Caption, Run
from annotation.services.files import media_path, path_component
from pipeline.encoders.encode import encode_texts
from pipeline.encoders.scores import caption_scores, scores_check
from pipeline.errors import InputError


def quality_encoder_scores(
    *, run: Run, embedding_set: EmbeddingSet, scores: list[str] | None = None
) -> dict[str, str]:
    """Write each score's CSV under MEDIA_ROOT/runs/<run>/quality/<set label as a slug>/;
    {score: path}.
    A reference candidate is scored against the image's other captions, never itself."""
    if embedding_set.dataset_id != run.dataset_id:
        raise InputError("the embeddings are of another dataset", field="set")
    if scores:
        scores_check(embedding_set.family, scores)
    arrays = embedding_set_arrays(embedding_set=embedding_set)
    image_row = {int(i): n for n, i in enumerate(arrays["image_ids"])}
    caption_row = {int(c): n for n, c in enumerate(arrays["caption_ids"])}
    candidates = list(
        Candidate.objects.filter(run=run).select_related("image", "reference").order_by("pk")
    )
    missing = [c for c in candidates if c.image.coco_id not in image_row]
    if missing:
        raise InputError(
            "no image embedding (unreadable when encoded)",
            record=missing[0].image.file_name,
            field="image",
        )
    owners: dict[int, list[int]] = {}
    for coco_id, owner in Caption.objects.filter(dataset=run.dataset).values_list(
        "coco_id", "image__coco_id"
    ):
        owners.setdefault(owner, []).append(coco_id)
    encoder = encoder_for_set(embedding_set)
    text_rows = encode_texts(encoder, [c.text for c in candidates]).rows
    references = []
    for c in candidates:
        own = c.reference.coco_id if c.reference is not None else None
        rows = [
            caption_row[r] for r in owners.get(c.image.coco_id, []) if r != own and r in caption_row
        ]
        references.append(arrays["caption_embeddings"][rows])
    image = arrays["image_embeddings"][[image_row[c.image.coco_id] for c in candidates]]
    model = encoder.model
    values = caption_scores(
        embedding_set.family,
        image,
        text_rows,
        references,
        logit_scale=float(model.logit_scale.detach()) if embedding_set.family == "siglip" else 0.0,
        logit_bias=float(model.logit_bias.detach()) if embedding_set.family == "siglip" else 0.0,
    )
    # The label is a user's model name ("openai/clip-…", or an attack's "../.."): one slug.
    folder = media_path("runs", run.pk, "quality", path_component(embedding_set.label))
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, column in values.items():
        if scores and name not in scores:
            continue
        path = folder / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["image", "caption", "score"])
            for c, value in zip(candidates, np.asarray(column), strict=True):
                writer.writerow(
                    [c.image.file_name, " ".join(c.text.split()), f"{float(value):.6f}"]
                )
        written[name] = str(path)
    return written
