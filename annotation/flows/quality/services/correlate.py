"""Correlate caption metrics with human judgments: Kendall tau-b and tau-c on ratings
(Flickr8k-Expert layout: one row per rating, as PAC-S evaluates) and yes/no shares
(Flickr8k-CF layout: one row per caption), accuracy per category on preferences.

A metric is either given (a CSV `image,caption,score`, matched by image key and caption text)
or computed from embeddings (`.npz`: `image_keys` + `image_embeddings`, `texts` +
`text_embeddings`, texts as written in the judgments): CLIP-S (w = 2.5), PAC-S-style
(w = 2.0) and their reference-based versions."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.caption_metrics import (
    CLIP_S_W,
    PAC_S_W,
    PASCAL_DRAWS,
    PASCAL_REFERENCES,
    kendall,
    mean_accuracy,
    pairwise_accuracy,
    reference_based,
    reference_draws,
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


PREFERENCE_COLUMNS = ("image", "category", "caption_first", "caption_second", "share_first")
REFERENCE_BASED = ("RefCLIP-S", "RefPAC-S-style")


def _reference_file(path: str) -> dict[str, list[str]]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the references: {exc}", file=path) from None
    if not isinstance(document, dict):
        raise InputError("must be an object: image -> list of reference captions", file=path)
    out: dict[str, list[str]] = {}
    for image, refs in document.items():
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise InputError("must be a list of captions", file=path, record=image, field=image)
        out[_key(image)] = [words(r) for r in refs]
    return out


def _preference_rows(path: str) -> list[dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = set(PREFERENCE_COLUMNS) - set(reader.fieldnames or [])
            if missing:
                raise InputError(
                    f"missing column(s) {', '.join(sorted(missing))}", file=path, field="header"
                )
            rows = list(reader)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    for line, row in enumerate(rows, start=2):
        try:
            float(row["share_first"])
        except ValueError:
            raise InputError(
                "must be a number", file=path, record=line, field="share_first"
            ) from None
    return rows


def _preferences(
    path: str,
    metric: str | None,
    embeddings: str | None,
    *,
    references: str | None,
    seed: int,
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Accuracy per category and metric, and how the references were used: with embeddings
    and references, averaged over Pascal-50S's draws (reference-free metrics do not depend
    on the draw); with embeddings and no references, reference-based metrics left out."""
    prefs = _preference_rows(path)
    keys = [_key(r["image"]) for r in prefs]
    drawn: list[list[tuple[str, ...]]] = [[() for _ in prefs]]
    protocol: dict[str, Any] = {}
    if embeddings is not None and references is not None:
        table = _reference_file(references)
        for line, key in enumerate(keys, start=2):
            if key not in table:
                raise InputError(
                    f"no references for image {key!r} in {references}",
                    file=path,
                    record=line,
                    field="image",
                )
        drawn = reference_draws([table[k] for k in keys], seed=seed)
        protocol = {"draws": PASCAL_DRAWS, "references_per_draw": PASCAL_REFERENCES, "seed": seed}
    elif embeddings is not None:
        protocol = {"left_out": list(REFERENCE_BASED), "why": "no references given"}
    shares = [float(r["share_first"]) for r in prefs]
    categories = [r["category"] for r in prefs]
    per_draw: dict[str, list[dict[str, float]]] = {}
    for refs in drawn:
        a, b = (
            _scores(
                [
                    Judgement(k, k, "", words(r[column]), 0.0, d)
                    for k, r, d in zip(keys, prefs, refs, strict=True)
                ],
                metric,
                embeddings,
            )
            for column in ("caption_first", "caption_second")
        )
        for name in a:
            if name in protocol.get("left_out", ()):
                continue  # compared with no reference: meaningless
            per_draw.setdefault(name, []).append(
                pairwise_accuracy(a[name], b[name], shares, categories)
            )
    return {name: mean_accuracy(v) for name, v in per_draw.items()}, protocol


def quality_correlate(
    *,
    expert: str | None = None,
    cf: str | None = None,
    preferences: str | None = None,
    metric: str | None = None,
    embeddings: str | None = None,
    references: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Kendall tau-b / tau-c per metric for each judgments file given, and preference
    accuracy per category (a preferences CSV needs a metric CSV or embeddings too; with
    embeddings, `references` (JSON: image -> its reference captions) gives the
    reference-based metrics Pascal-50S's five draws of five references, seeded by `seed`)."""
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
        report["preferences"], protocol = _preferences(
            preferences, metric, embeddings, references=references, seed=seed
        )
        if protocol:
            report["preferences_references"] = protocol
    if not report:
        raise InputError("give at least one judgments file", field="expert")
    return report
