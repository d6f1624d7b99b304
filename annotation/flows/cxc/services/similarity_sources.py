"""Where CxC sampling's two similarities come from. Each example (an image and its captions)
has an image representation and a caption representation; the caption one is, as the CxC
blog describes, the average of the example's co-caption encodings, compared by cosine. As
the blog did, the two come from different encoders by default (`sampling_encoders`): the
caption one from another model's caption embeddings or FastText trained on the dataset's
captions; one image-text model gives both only when the run asks (`joint`, a deviation).
What was used is recorded by name (and checkpoint sha256) in the job's result, which the
export's manifest and datasheet carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from annotation.flows.cxc.sampling_encoders import FASTTEXT_FOR_USE_GLOVE, JOINT
from annotation.flows.cxc.settings import CxcSettings
from pipeline.embeddings import image_embeddings, train_word_vectors
from pipeline.errors import InputError
from pipeline.text import tokenize

COCAPTION_MEAN = "cosine of the mean of each example's co-caption encodings (CxC blog)"


def cocaption_means(rows: np.ndarray, counts: list[int]) -> np.ndarray:
    """One row per example: the mean of its captions' rows (`rows` ordered by example,
    `counts[n]` captions for example n)."""
    owners = np.repeat(np.arange(len(counts)), counts)
    out = np.zeros((len(counts), rows.shape[1]), dtype=np.float64)
    np.add.at(out, owners, rows.astype(np.float64))
    return out / np.asarray(counts, dtype=np.float64)[:, None]


def _encoder_caption_rows(encoder: dict[str, Any], caption_ids: list[int]) -> np.ndarray:
    """The model's caption embeddings in `caption_ids` order; every caption must have one."""
    file = str(encoder["file"])
    try:
        with np.load(file) as f:
            ids, emb = f["caption_ids"], f["caption_embeddings"].astype(np.float32)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(
            f"cannot read the caption embeddings ({type(exc).__name__})",
            file=Path(file).name,
            field="caption_embeddings",
        ) from None
    row = {int(c): n for n, c in enumerate(ids.tolist())}
    missing = [c for c in caption_ids if c not in row]
    if missing:
        raise InputError(
            f"{len(missing)} of the dataset's captions have no embedding in the set (encode "
            "the dataset again)",
            file=Path(file).name,
            record=missing[0],
            field="caption_ids",
        )
    return emb[[row[c] for c in caption_ids]]


def caption_similarity_rows(
    *,
    settings: CxcSettings,
    texts: list[str],
    caption_ids: list[int],
    counts: list[int],
    encoder: dict[str, Any] | None,
    caption_encoder: dict[str, Any] | None = None,
    mode: str,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Each example's caption representation and where it came from (for the manifest):
    `caption_encoder`'s caption embeddings, the image model's own (`encoder`) only when the
    run asked for one joint model, else FastText trained on the dataset's captions."""
    text_model = caption_encoder or (encoder if mode == JOINT else None)
    if text_model:
        rows = cocaption_means(_encoder_caption_rows(text_model, caption_ids), counts)
        return rows, {**model_source(text_model), "method": COCAPTION_MEAN, "fallback": False}
    tokens = [tokenize(t) for t in texts]
    vectors = train_word_vectors(
        tokens,
        dim=settings.text_dim,
        epochs=settings.text_epochs,
        seed=settings.seed,
    )
    caption_vectors, _ = image_embeddings(tokens, vectors)
    return cocaption_means(caption_vectors, counts), {
        "source": "fasttext",
        "model": f"FastText, {vectors.source}",
        "method": COCAPTION_MEAN,
        # FastText stands for CxC's USE + GloVe (never the image model's text tower).
        "fallback": True,
        "why": FASTTEXT_FOR_USE_GLOVE,
    }


def model_source(encoder: dict[str, Any]) -> dict[str, Any]:
    """An image-text model as the manifest names it."""
    return {
        "source": "image_text_model",
        "model": encoder["model"],
        "checkpoint_sha256": encoder["checkpoint_sha256"],
        "embedding_set": encoder["set"],
    }


def image_similarity_source(
    *, source: str, encoder: dict[str, Any] | None, standin: bool
) -> dict[str, Any]:
    """Where the image representations came from (for the manifest)."""
    if encoder:
        return {**model_source(encoder), "method": "cosine of the image embeddings"}
    if standin:
        return {"source": "standin", "model": source, "method": "cosine of seeded random vectors"}
    return {
        "source": "embeddings_file",
        "model": None,
        "file": Path(source).name,
        "method": "cosine of the given image embeddings",
    }
