"""Correlate caption metrics with human judgments: Kendall tau-b and tau-c on ratings
(Flickr8k-Expert layout: one row per rating, as PAC-S evaluates) and yes/no shares
(Flickr8k-CF layout: one row per caption), accuracy per category on preferences.

A metric is either given (a CSV `image,caption,score`, matched by image key and caption text)
or computed from embeddings (`.npz`: `image_keys` + `image_embeddings`, `texts` +
`text_embeddings`, texts as written in the judgments): CLIP-S (w = 2.5), PAC-S-style
(w = 2.0) and their reference-based versions."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.caption_metrics import (
    CLIP_S_W,
    PAC_S_W,
    kendall,
    pairwise_accuracy,
    reference_based,
    reference_free,
)
from pipeline.errors import InputError
from pipeline.flickr8k import Judgement, read_derived, words


def _key(image: str) -> str:
    """An image named with or without its extension (the two Flickr8k layouts differ)."""
    stem, dot, ext = image.rpartition(".")
    return stem if dot and ext.lower() in ("jpg", "jpeg", "png") else image


def _metric_csv(path: str) -> dict[tuple[str, str], float]:
    scores: dict[tuple[str, str], float] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = {"image", "caption", "score"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(
                    f"missing column(s) {', '.join(sorted(missing))}", file=path, field="header"
                )
            for line, row in enumerate(reader, start=2):
                try:
                    value = float(row["score"])
                except ValueError:
                    raise InputError(
                        "must be a number", file=path, record=line, field="score"
                    ) from None
                if not np.isfinite(value):
                    raise InputError("must be finite", file=path, record=line, field="score")
                scores[(_key(row["image"]), words(row["caption"]))] = value
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    return scores


def _embedding_metrics(path: str, rows: list[Judgement]) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable .npz archive: {exc}", file=path) from None
    for name in ("image_keys", "image_embeddings", "texts", "text_embeddings"):
        if name not in arrays:
            raise InputError("missing array", file=path, field=name)
    images = {_key(str(k)): n for n, k in enumerate(arrays["image_keys"].tolist())}
    texts = {words(str(t)): n for n, t in enumerate(arrays["texts"].tolist())}
    img_emb = np.asarray(arrays["image_embeddings"], dtype=np.float64)
    txt_emb = np.asarray(arrays["text_embeddings"], dtype=np.float64)
    for name, emb in (("image_embeddings", img_emb), ("text_embeddings", txt_emb)):
        if not np.isfinite(emb).all():
            raise InputError("NaN or infinite values", file=path, field=name)
    if img_emb.shape[1] != txt_emb.shape[1]:
        raise InputError(
            "image and text embeddings differ in width", file=path, field="text_embeddings"
        )
    image_rows, caption_rows, references = [], [], []
    for n, j in enumerate(rows):
        key = _key(j.image_id)
        if key not in images:
            raise InputError(
                f"no embedding for image {key!r}", file=path, record=n, field="image_keys"
            )
        if j.caption not in texts:
            raise InputError(
                f"no embedding for caption {j.caption[:40]!r}", file=path, record=n, field="texts"
            )
        image_rows.append(images[key])
        caption_rows.append(texts[j.caption])
        known = [texts[r] for r in j.references if r in texts]
        references.append(txt_emb[known])
    image, caption = img_emb[image_rows], txt_emb[caption_rows]
    clip = reference_free(image, caption, w=CLIP_S_W)
    pac = reference_free(image, caption, w=PAC_S_W)
    return {
        "CLIP-S": clip,
        "RefCLIP-S": reference_based(clip, caption, references),
        "PAC-S-style": pac,
        "RefPAC-S-style": reference_based(pac, caption, references),
    }


def _scores(
    rows: list[Judgement], metric: str | None, embeddings: str | None
) -> dict[str, np.ndarray]:
    if (metric is None) == (embeddings is None):
        raise InputError("give a metric CSV or embeddings (.npz), one of them", field="metric")
    if embeddings is not None:
        return _embedding_metrics(embeddings, rows)
    assert metric is not None
    table = _metric_csv(metric)
    values = []
    for n, j in enumerate(rows):
        key = (_key(j.image_id), j.caption)
        if key not in table:
            raise InputError(
                f"no score for image {j.image_id!r} and caption {j.caption[:40]!r}",
                file=metric,
                record=n,
                field="caption",
            )
        values.append(table[key])
    return {Path(metric).stem: np.asarray(values)}


def quality_correlate(
    *,
    expert: str | None = None,
    cf: str | None = None,
    preferences: str | None = None,
    metric: str | None = None,
    embeddings: str | None = None,
) -> dict[str, Any]:
    """Kendall tau-b / tau-c per metric for each judgments file given, and preference
    accuracy per category (a preferences CSV needs a metric CSV or embeddings too)."""
    report: dict[str, Any] = {}
    for label, path in (("flickr8k_expert_layout", expert), ("flickr8k_cf_layout", cf)):
        if path is None:
            continue
        derived = read_derived(path)
        rows = derived.judgements
        human = [j.rating for j in rows]
        report[label] = {
            "judgements": len(rows),
            # PAC-S skips a NaN rating; say how many, so a reader can compare the counts.
            "skipped_nan_ratings": derived.skipped_nan,
            "metrics": {
                name: {
                    "tau_b": round(kendall(values, human, variant="b"), 4),
                    "tau_c": round(kendall(values, human, variant="c"), 4),
                }
                for name, values in _scores(rows, metric, embeddings).items()
            },
        }
    if preferences is not None:
        with open(preferences, newline="", encoding="utf-8") as handle:
            prefs = list(csv.DictReader(handle))
        firsts = [
            Judgement(
                r["image"].rsplit(".", 1)[0],
                r["image"].rsplit(".", 1)[0],
                "",
                words(r["caption_first"]),
                0.0,
                (),
            )
            for r in prefs
        ]
        seconds = [
            Judgement(
                r["image"].rsplit(".", 1)[0],
                r["image"].rsplit(".", 1)[0],
                "",
                words(r["caption_second"]),
                0.0,
                (),
            )
            for r in prefs
        ]
        a, b = _scores(firsts, metric, embeddings), _scores(seconds, metric, embeddings)
        report["preferences"] = {
            name: pairwise_accuracy(
                a[name],
                b[name],
                [float(r["share_first"]) for r in prefs],
                [r["category"] for r in prefs],
            )
            for name in a
        }
    if not report:
        raise InputError("give at least one judgments file", field="expert")
    return report
