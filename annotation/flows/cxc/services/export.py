"""CxC export: the three rating CSVs in CxC's published layout, every rating as JSONL, and a
manifest (pairs per sampling method, raters per pair, inter-rater agreement)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from django.db.models import Case, Value, When
from django.db.models.functions import Coalesce

from annotation.errors import ServiceError
from annotation.flows.cxc.selectors import (
    STAGES,
    RatingArrays,
    cxc_agreement,
    cxc_has_ratings,
    cxc_rating_arrays,
)
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Item, Job, Run, Worker
from annotation.selectors.int_arrays import int_arrays
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
    export_manifest_head,
)
from annotation.services.files import AtomicLines
from annotation.services.release_tables import list_column, table_from_columns
from pipeline.cxc import SIS_COLUMNS, SITS_COLUMNS, STS_COLUMNS
from pipeline.scales import rating_model

CXC_FORMAT = "cxc"
JOB_NAME = "cxc.export"
FILES = {
    CxcStage.SIS: ("sis", SIS_COLUMNS),
    CxcStage.STS: ("sts", STS_COLUMNS),
    CxcStage.SITS: ("sits", SITS_COLUMNS),
}


def cxc_export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    """Start the export job, once the run has counted ratings."""
    if not cxc_has_ratings(run=run):
        raise ServiceError(f"run {run.pk} has no counted ratings to export yet")
    return export_job_start(run=run, spec=CXC_EXPORT, release=release)


_TAGS = ("i2i_csim",)  # the image-image method: both names are images


class _PairNames:
    """The two names of each exported pair (as CxC writes them) and its sampling method: one
    read of the run's pairs (no id list in the SQL), strings made as they are written."""

    def __init__(self, run: Run) -> None:
        self.prefix = "COCO_val2014"
        first = run.dataset.images.values_list("file_name", flat=True).first()
        if first and first.startswith("COCO_"):
            self.prefix = first.rsplit("_", 1)[0]
        self.tags = sorted(Item.objects.filter(run=run).values_list("tag", flat=True).distinct())
        tag = Case(*(When(tag=t, then=Value(n)) for n, t in enumerate(self.tags)), default=-1)
        self.cols = int_arrays(
            Item.objects.filter(run=run),
            {
                "pk": ("pk", np.int64),
                "tag": (tag, np.int16),
                "image1": (Coalesce("positive_id", -1), np.int64),
                "image2": (Coalesce("negative_id", -1), np.int64),
                "caption1": (Coalesce("caption__coco_id", -1), np.int64),
                "caption2": (Coalesce("caption2__coco_id", -1), np.int64),
            },
        )
        self.by_pk = np.argsort(self.cols["pk"])
        self.files = dict(run.dataset.images.values_list("pk", "file_name"))

    def __call__(self, items: np.ndarray) -> Iterator[tuple[str, str, str]]:
        """Names of `items` (pair ids), in their order."""
        at = self.by_pk[np.searchsorted(self.cols["pk"], items, sorter=self.by_pk)]
        files, prefix, step = self.files, self.prefix, 50_000
        keys = ("tag", "image1", "image2", "caption1", "caption2")
        for lo in range(0, at.size, step):
            part = at[lo : lo + step]
            for tag, image1, image2, caption1, caption2 in zip(
                *(self.cols[k][part].tolist() for k in keys), strict=True
            ):
                method = self.tags[tag]
                if method in _TAGS:
                    yield files[image1], files[image2], method
                elif caption2 >= 0:
                    yield f"{prefix}:sentid:{caption1}", f"{prefix}:sentid:{caption2}", method
                else:
                    yield f"{prefix}:sentid:{caption1}", files[image1], method


def _ratings_jsonl(lines: AtomicLines, ratings: RatingArrays, pseudonyms: dict[int, str]) -> None:
    """Every rating as a JSON line, formatted a slice at a time from the arrays."""
    template = (
        '{"assignment": %d, "gold": %s, "item": %d, "rating": %d, "stage": "%s", "worker": "%s"}'
    )
    gold_words, stage_words = ("false", "true"), [str(s) for s in STAGES]
    step = 100_000
    for lo in range(0, ratings.item.size, step):
        part = slice(lo, lo + step)
        rows = zip(
            ratings.assignment[part].tolist(),
            [gold_words[g] for g in ratings.gold[part].tolist()],
            ratings.item[part].tolist(),
            ratings.value[part].tolist(),
            [stage_words[s] for s in ratings.stage[part].tolist()],
            [pseudonyms[w] for w in ratings.worker[part].tolist()],
            strict=True,
        )
        lines.write_many(template % row for row in rows)


MODEL_COLUMNS = (
    "kind",
    "first",
    "second",
    "agg_score",
    "model_score",
    "model_low95",
    "model_high95",
    "sampling_method",
)


def _scale_model(ratings: RatingArrays, keep: np.ndarray) -> np.ndarray | None:
    """(value, low, high) per rated pair, in the order of the pairs' ids; None without
    ratings."""
    if not keep.any():
        return None
    fit = rating_model(
        ratings.item[keep], ratings.worker[keep], ratings.value[keep], low=0.0, high=5.0
    )
    return np.column_stack([fit.value, fit.low, fit.high])


def _rating_lists(
    ratings: RatingArrays,
    keep: np.ndarray,
    inverse: np.ndarray,
    counts: np.ndarray,
    pseudonyms: dict[int, str],
) -> tuple[pa.ListArray, pa.ListArray, np.ndarray]:
    """Every counted rating of each rated pair and its worker's pseudonym, as Arrow list
    columns in the order of the pairs' ids (no Python object per rating), and the sum of
    squared ratings per pair (for the spread)."""
    order = np.argsort(inverse, kind="stable")
    values = ratings.value[keep][order].astype(np.int8)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    worker_pks = np.array(sorted(pseudonyms), dtype=np.int64)
    codes = np.searchsorted(worker_pks, ratings.worker[keep][order])
    workers = pa.array([pseudonyms[pk] for pk in worker_pks.tolist()], pa.string()).take(codes)
    squares = np.bincount(inverse, weights=ratings.value[keep].astype(np.float64) ** 2)
    return (
        list_column(values, offsets),
        pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), workers),
        squares,
    )


def _pairs_table(
    kind: str,
    rows: np.ndarray,
    written: list[tuple[str, str, str]],
    sums: np.ndarray,
    counts: np.ndarray,
    lists: tuple[pa.ListArray, pa.ListArray, np.ndarray],
    model: np.ndarray | None,
) -> pa.Table:
    """One file's pairs of the `cxc_pairs` record set: its CSV's columns, then every rating,
    the rater count, the spread (population standard deviation of the ratings) and, where
    fitted, the scale model's estimate and 95 % interval."""
    ratings, workers, squares = lists
    raters = counts[rows]
    mean = sums[rows] / raters
    spread = np.sqrt(np.maximum(squares[rows] / raters - mean**2, 0.0))
    take = pa.array(rows.astype(np.int64))
    fit = model[rows] if model is not None else np.full((rows.size, 3), np.nan)
    return table_from_columns(
        {
            "kind": pa.array([kind] * rows.size, pa.string()),
            "first": pa.array([w[0] for w in written], pa.string()),
            "second": pa.array([w[1] for w in written], pa.string()),
            "agg_score": np.round(mean, 2),
            "sampling_method": pa.array([w[2] for w in written], pa.string()),
            "raters": raters.astype(np.int32),
            "spread": np.round(spread, 4),
            "ratings": ratings.take(take),
            "workers": workers.take(take),
            "model_score": pa.array(np.round(fit[:, 0], 4), from_pandas=True),
            "model_low95": pa.array(np.round(fit[:, 1], 4), from_pandas=True),
            "model_high95": pa.array(np.round(fit[:, 2], 4), from_pandas=True),
        }
    )


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    pseudonyms = {
        pk: worker_pseudonym(provider=provider, external_id=external)
        for pk, provider, external in Worker.objects.filter(assignments__hit__batch__run=run)
        .distinct()
        .values_list("pk", "provider", "external_id")
    }
    ratings = cxc_rating_arrays(run=run)
    # The JSONL of every rating is streamed to disk before the version is taken.
    work.stream("ratings.jsonl", lambda lines: _ratings_jsonl(lines, ratings, pseudonyms))
    work.progress(60, f"{ratings.item.size} ratings read")
    keep = ~ratings.gold
    items, inverse = np.unique(ratings.item[keep], return_inverse=True)
    sums = np.bincount(inverse, weights=ratings.value[keep].astype(np.float64))
    counts = np.bincount(inverse)
    stage_of = np.zeros(items.size, dtype=np.int8)
    stage_of[inverse] = ratings.stage[keep]
    lists = _rating_lists(ratings, keep, inverse, counts, pseudonyms)
    del inverse
    name = str(run.config.get("export_name", "val"))
    names = _PairNames(run)
    per_method: dict[str, int] = {}
    files: dict[str, bytes] = {}
    table_parts: list[pa.Table] = []
    # Beside CxC's plain mean (agg_score, the default), the per-worker scale model's
    # estimate and 95 % interval (pipeline/scales.py), in a file of its own.
    model = _scale_model(ratings, keep)
    beside = io.StringIO()
    model_writer = csv.writer(beside, lineterminator="\n")
    model_writer.writerow(MODEL_COLUMNS)
    for n, stage in enumerate(STAGES):
        prefix, columns = FILES[stage]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        rows = np.flatnonzero(stage_of == n)
        means = (sums[rows] / counts[rows]).tolist()
        estimate = model[rows].tolist() if model is not None else [None] * rows.size
        written: list[tuple[str, str, str]] = []
        for (first, second, tag), mean, fit in zip(
            names(items[rows]), means, estimate, strict=True
        ):
            written.append((first, second, tag))
            writer.writerow((first, second, f"{mean:.2f}", tag))
            per_method[tag] = per_method.get(tag, 0) + 1
            if fit is not None:
                model_writer.writerow(
                    (prefix, first, second, f"{mean:.2f}", *(f"{v:.2f}" for v in fit), tag)
                )
        files[f"{prefix}_{name}.csv"] = out.getvalue().encode()
        table_parts.append(_pairs_table(prefix, rows, written, sums, counts, lists, model))
    if model is not None:
        files[f"scale_model_{name}.csv"] = beside.getvalue().encode()
    work.progress(80, "agreement")
    sample = run.jobs.filter(name="cxc.sample", state="succeeded").order_by("-pk").first()
    manifest: dict[str, Any] = {
        **export_manifest_head(run=run, format=CXC_FORMAT),
        "sampling": sample.result if sample else None,
        "pairs_per_sampling_method": dict(sorted(per_method.items())),
        "ratings": int(keep.sum()),
        "gold_ratings": int(ratings.gold.sum()),
        "agreement": cxc_agreement(ratings),
        "scale_model": None
        if model is None
        else {
            "file": f"scale_model_{name}.csv",
            "method": "per-worker offset, slope and noise, fitted by alternating weighted "
            "least squares (pipeline/scales.py); agg_score stays CxC's plain mean",
            "columns": list(MODEL_COLUMNS),
        },
        **export_manifest_crowd(run=run),
    }
    return ExportParts(
        manifest=manifest,
        files=files,
        result={"pairs": per_method},
        message=f"{sum(per_method.values())} pairs -> ",
        tables={"cxc_pairs": pa.concat_tables(table_parts)},
    )


CXC_EXPORT = ExportSpec(
    job_name=JOB_NAME,
    format=CXC_FORMAT,
    prefix="cxc",
    title="Crisscrossed Captions",
    first_message="reading ratings",
    build=_build,
    paper=(
        "Parekh, Z., Baldridge, J., Cer, D., Waters, A. and Yang, Y. Crisscrossed Captions: "
        "Extended Intramodal and Intermodal Semantic Similarity Judgments for MS-COCO. EACL, "
        "2021. arXiv:2004.15020"
    ),
    task_categories=("sentence-similarity", "image-to-text"),
    record_keys={"cxc_pairs": ("kind", "first", "second")},  # the id pair, per file
)
