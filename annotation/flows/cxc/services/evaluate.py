"""Evaluate a model's embeddings against CxC rating files (an export of this app, or CxC's
own CSVs): rank correlations per task with a bootstrap interval, and retrieval with CxC
positives (rated 3 or more) for i2t, t2i, t2t and i2i."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.cxc import load_sis, load_sits, load_sts
from pipeline.cxc_eval import POSITIVE_THRESHOLD, correlation, cosine_pairs, recall_at_k
from pipeline.eccv_embeddings import load_model_embeddings
from pipeline.errors import InputError


def _one(folder: Path, prefix: str, split: str | None) -> Path | None:
    found = sorted(folder.glob(f"{prefix}_{split or ''}*.csv"))
    if len(found) > 1:
        raise InputError(
            f"more than one {prefix}_*.csv ({', '.join(p.name for p in found)}): name the "
            "split (--split val) or give a folder with one of each",
            file=str(folder),
        )
    return found[0] if found else None


def cxc_evaluate(
    *, folder: str, embeddings: str, draws: int = 1000, seed: int = 0, split: str | None = None
) -> dict[str, Any]:
    base = Path(folder)
    if not base.is_dir():
        raise InputError(
            "not a folder (give the folder holding sis_*, sts_*, sits_*.csv)", file=folder
        )
    files = {name: _one(base, name, split) for name in ("sis", "sts", "sits")}
    if not any(files.values()):
        raise InputError("no sis_*.csv, sts_*.csv or sits_*.csv in the folder", file=folder)
    try:
        with np.load(embeddings, allow_pickle=False) as archive:
            image_ids = archive["image_ids"] if "image_ids" in archive.files else np.zeros(0)
            caption_ids = archive["caption_ids"] if "caption_ids" in archive.files else np.zeros(0)
            known_images = [int(i) for i in np.asarray(image_ids).ravel()]
            known_captions = [int(i) for i in np.asarray(caption_ids).ravel()]
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable .npz archive: {exc}", file=embeddings) from None
    model = load_model_embeddings(
        embeddings, known_image_ids=known_images, known_caption_ids=known_captions
    )
    img_row = {int(i): n for n, i in enumerate(model.image_ids)}
    cap_row = {int(i): n for n, i in enumerate(model.caption_ids)}
    report: dict[str, Any] = {"embeddings": model.source, "draws": draws, "tasks": {}}
    pos: dict[str, dict[int, set[int]]] = {
        k: defaultdict(set) for k in ("i2t", "t2i", "t2t", "i2i")
    }

    def add(task: str, name: str, left, right, human, groups, skipped) -> None:  # type: ignore[no-untyped-def]
        result = correlation(cosine_pairs(*left, *right), human, groups, draws=draws, seed=seed)
        report["tasks"][task] = {
            "file": name,
            "pairs": result.pairs,
            "skipped_without_embedding": skipped,
            "spearman": round(result.spearman, 4),
            "kendall_tau_b": round(result.kendall_tau_b, 4),
            "spearman_95ci": [round(result.ci_low, 4), round(result.ci_high, 4)],
        }

    if files["sis"]:
        rows = load_sis(files["sis"])
        ok = [r for r in rows if r.image_id_1 in img_row and r.image_id_2 in img_row]
        for r in ok:
            if r.score >= POSITIVE_THRESHOLD:
                a, b = img_row[r.image_id_1], img_row[r.image_id_2]
                pos["i2i"][a].add(b)
                pos["i2i"][b].add(a)
        add(
            "SIS",
            files["sis"].name,
            (model.image_embeddings, model.image_embeddings),
            ([img_row[r.image_id_1] for r in ok], [img_row[r.image_id_2] for r in ok]),
            [r.score for r in ok],
            [r.image_id_1 for r in ok],
            len(rows) - len(ok),
        )
    if files["sts"]:
        rows_t = load_sts(files["sts"])
        ok_t = [r for r in rows_t if r.caption_id_1 in cap_row and r.caption_id_2 in cap_row]
        for sts in ok_t:
            if sts.score >= POSITIVE_THRESHOLD:
                a, b = cap_row[sts.caption_id_1], cap_row[sts.caption_id_2]
                pos["t2t"][a].add(b)
                pos["t2t"][b].add(a)
        add(
            "STS",
            files["sts"].name,
            (model.caption_embeddings, model.caption_embeddings),
            ([cap_row[r.caption_id_1] for r in ok_t], [cap_row[r.caption_id_2] for r in ok_t]),
            [r.score for r in ok_t],
            [r.caption_id_1 for r in ok_t],
            len(rows_t) - len(ok_t),
        )
    if files["sits"]:
        rows_s = load_sits(files["sits"])
        ok_s = [r for r in rows_s if r.caption_id in cap_row and r.image_id in img_row]
        for sits in ok_s:
            if sits.score >= POSITIVE_THRESHOLD:
                pos["i2t"][img_row[sits.image_id]].add(cap_row[sits.caption_id])
                pos["t2i"][cap_row[sits.caption_id]].add(img_row[sits.image_id])
        add(
            "SITS",
            files["sits"].name,
            (model.caption_embeddings, model.image_embeddings),
            ([cap_row[r.caption_id] for r in ok_s], [img_row[r.image_id] for r in ok_s]),
            [r.score for r in ok_s],
            [r.image_id for r in ok_s],
            len(rows_s) - len(ok_s),
        )
    report["retrieval"] = {
        "i2t": recall_at_k(model.image_embeddings, model.caption_embeddings, pos["i2t"]),
        "t2i": recall_at_k(model.caption_embeddings, model.image_embeddings, pos["t2i"]),
        "t2t": recall_at_k(
            model.caption_embeddings, model.caption_embeddings, pos["t2t"], exclude_self=True
        ),
        "i2i": recall_at_k(
            model.image_embeddings, model.image_embeddings, pos["i2i"], exclude_self=True
        ),
    }
    return report
