"""CxC export: the three rating CSVs in CxC's published layout, every rating as JSONL, and a
manifest (pairs per sampling method, raters per pair, inter-rater agreement)."""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
from annotation.flows.cxc.settings import cxc_settings
from annotation.flows.cxc.vocabulary import PAPER, CxcStage
from annotation.models import Caption, Image, Item, Job, Run
from annotation.selectors.int_arrays import id_dtype, int_arrays
from annotation.selectors.pseudonyms import run_worker_pseudonyms
from annotation.services.files import AtomicLines
from annotation.services.release.beside import beside_pool, reads_beside
from annotation.services.release.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
    export_manifest_head,
)
from annotation.services.release.memory import memory_release
from annotation.services.release.release_tables import list_column, table_from_columns
from annotation.services.release.text_columns import (
    csv_field,
    float_2f,
    int_text,
    joined_lines,
    ratio_2f,
    write_lines,
)
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
    read of the run's pairs (no id list in the SQL), the names made a column at a time."""

    def __init__(self, run: Run) -> None:
        self.prefix = "COCO_val2014"
        first = run.dataset.images.values_list("file_name", flat=True).first()
        if first and first.startswith("COCO_"):
            self.prefix = first.rsplit("_", 1)[0]
        self.tags = sorted(Item.objects.filter(run=run).values_list("tag", flat=True).distinct())
        tag = Case(*(When(tag=t, then=Value(n)) for n, t in enumerate(self.tags)), default=-1)
        images, captions_id = id_dtype(Image), id_dtype(Caption)
        self.cols = int_arrays(
            Item.objects.filter(run=run),
            {
                "pk": ("pk", id_dtype(Item)),
                "tag": (tag, np.int16),
                "image1": (Coalesce("positive_id", -1), images),
                "image2": (Coalesce("negative_id", -1), images),
                "caption1": (Coalesce("caption_id", -1), captions_id),
                "caption2": (Coalesce("caption2_id", -1), captions_id),
            },
        )
        # Captions' COCO ids from one read of the dataset's captions (no join per pair).
        captions = int_arrays(
            Caption.objects.filter(dataset_id=run.dataset_id),
            {"pk": ("pk", np.int64), "coco": ("coco_id", np.int64)},
        )
        order = np.argsort(captions["pk"])
        caption_pks, coco = captions["pk"][order], captions["coco"][order]
        for key in ("caption1", "caption2"):
            self.cols[key] = _coco_ids(self.cols[key], caption_pks, coco)
        self.by_pk = np.argsort(self.cols["pk"])
        files = dict(run.dataset.images.values_list("pk", "file_name"))
        self.file_pks = np.array(sorted(files), dtype=np.int64)
        self.file_names = pa.array([files[pk] for pk in self.file_pks.tolist()], pa.string())

    def _files(self, images: np.ndarray, used: np.ndarray) -> pa.Array:
        """The file names of `images` where `used` (an empty name elsewhere)."""
        at = _positions(self.file_pks, images, "pair names image {}, not in the dataset", used)
        return pc.if_else(used, self.file_names.take(at), "")

    def __call__(self, items: np.ndarray) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """The first and second names of `items` (pair ids) and each one's index into
        `tags`, in their order."""
        at = self.by_pk[np.searchsorted(self.cols["pk"], items, sorter=self.by_pk)]
        tag, image1, image2, caption1, caption2 = (
            self.cols[k][at] for k in ("tag", "image1", "image2", "caption1", "caption2")
        )
        images = np.isin(tag, [n for n, t in enumerate(self.tags) if t in _TAGS])
        captions = ~images & (caption2 >= 0)
        sentid = f"{self.prefix}:sentid:"
        first = pc.if_else(
            images,
            self._files(image1, images),
            pc.binary_join_element_wise(sentid, int_text(caption1), ""),
        )
        second = pc.if_else(
            captions,
            pc.binary_join_element_wise(sentid, int_text(caption2), ""),
            self._files(np.where(images, image2, image1), ~captions),
        )
        return first, second, tag


def _positions(
    keys: np.ndarray, ids: np.ndarray, missing: str, used: np.ndarray | None = None
) -> np.ndarray:
    """Where each of `ids` stands in the ascending `keys` (only those `used` must be there:
    ServiceError `missing`, formatted with the first absent id, otherwise)."""
    at = np.searchsorted(keys, ids).clip(0, max(keys.size - 1, 0))
    absent = keys[at] != ids if keys.size else np.ones(ids.shape, dtype=bool)
    if used is not None:
        absent &= used
    if absent.any():
        raise ServiceError(missing.format(int(ids[absent][0])))
    return at


NO_PSEUDONYM = "a rating's worker {} has no pseudonym (not a worker of the run)"


def _coco_ids(pks: np.ndarray, caption_pks: np.ndarray, coco: np.ndarray) -> np.ndarray:
    """The COCO id of each caption row id in `pks` (-1 stays -1: no caption)."""
    used = pks >= 0
    at = _positions(caption_pks, pks, "a pair's caption {} is not in the run's dataset", used)
    return np.where(used, coco[at], -1) if coco.size else np.full(pks.shape, -1, np.int64)


def _by_worker(pseudonyms: dict[int, str]) -> tuple[np.ndarray, list[str]]:
    """The workers' row ids, ascending, and their pseudonyms in that order."""
    pks = np.array(sorted(pseudonyms), dtype=np.int64)
    return pks, [pseudonyms[pk] for pk in pks.tolist()]


def _worker_codes(pks: np.ndarray, workers: np.ndarray) -> np.ndarray:
    """Where each of `workers` (row ids) stands in the ascending `pks`, in 4 bytes: looked up
    in a table by row id where the ids are few enough for one (a search per rating made two
    arrays of 8 bytes a rating), searched otherwise; ServiceError NO_PSEUDONYM for a worker
    not in `pks`."""
    top = int(pks[-1]) if pks.size else -1
    if workers.size and 0 <= top < 4 * workers.size + 2**16:
        low, high = int(workers.min()), int(workers.max())
        if low >= 0 and high <= top:
            table = np.full(top + 1, -1, dtype=np.int32)
            table[pks] = np.arange(pks.size, dtype=np.int32)
            codes = table[workers]
            if (codes < 0).any():
                raise ServiceError(NO_PSEUDONYM.format(int(workers[codes < 0][0])))
            return codes
    return _positions(pks, workers, NO_PSEUDONYM).astype(np.int32)


def _pseudonym_column(workers: np.ndarray, pseudonyms: dict[int, str]) -> pa.Array:
    """The pseudonym of each of `workers` (row ids), dictionary-encoded: a code per rating
    into one string per worker (the Parquet file holds the strings, `release_tables`)."""
    pks, words = _by_worker(pseudonyms)
    return pa.DictionaryArray.from_arrays(pa.array(_worker_codes(pks, workers)), pa.array(words))


def _repeated(word: str, rows: int) -> pa.Array:
    """`word` in each of `rows` rows, dictionary-encoded."""
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(rows, dtype=np.int32)), pa.array([word], pa.string())
    )


def _ratings_jsonl(lines: AtomicLines, ratings: RatingArrays, pseudonyms: dict[int, str]) -> None:
    """Every rating as a JSON line (keys sorted, as `json.dumps` would write them), made a
    slice of columns at a time in Arrow. A line's end (rating, stage, worker) is one of few:
    each is written once and taken by its code."""
    pks, words = _by_worker(pseudonyms)
    values = np.unique(ratings.value).astype(np.int64) + 128  # (no array of 8 bytes a rating)
    ends = pa.array(
        [
            f', "rating": {v - 128}, "stage": "{stage}", "worker": "{word}"}}'
            for v in values.tolist()
            for stage in STAGES
            for word in words
        ],
        pa.string(),
    )
    value_code = np.zeros(256, dtype=np.int64)
    value_code[values] = np.arange(values.size)
    middles = pa.array([', "gold": false, "item": ', ', "gold": true, "item": '])
    step = 16_384  # lines per slice: a few MB of Arrow buffers at a time
    for lo in range(0, ratings.item.size, step):
        part = slice(lo, lo + step)
        at = _positions(pks, ratings.worker[part], NO_PSEUDONYM)
        value = value_code[ratings.value[part].astype(np.int64) + 128]
        end = (value * len(STAGES) + ratings.stage[part]) * len(words) + at
        text = joined_lines(
            '{"assignment": ',
            int_text(ratings.assignment[part]),
            middles.take(ratings.gold[part].astype(np.int8)),
            int_text(ratings.item[part]),
            ends.take(end),
        )
        write_lines(lines, text)
    # Arrow's allocator keeps freed buffers for reuse: hand them back before the next step.
    pa.default_memory_pool().release_unused()


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


def _scale_model(counted: RatingArrays) -> np.ndarray | None:
    """(value, low, high) per rated pair, in the order of the pairs' ids; None without
    ratings."""
    if not counted.item.size:
        return None
    fit = rating_model(counted.item, counted.worker, counted.value, low=0.0, high=5.0)
    return np.column_stack([fit.value, fit.low, fit.high])


def _counted(ratings: RatingArrays) -> RatingArrays:
    """The ratings without the gold pairs' (the same arrays when there are none)."""
    if not ratings.gold.any():
        return ratings
    keep = ~ratings.gold
    return RatingArrays(
        item=ratings.item[keep],
        stage=ratings.stage[keep],
        worker=ratings.worker[keep],
        assignment=ratings.assignment[keep],
        value=ratings.value[keep],
        gold=np.zeros(int(keep.sum()), dtype=bool),
    )


@dataclass(frozen=True)
class _Pairs:
    """The rated pairs in the order of their ids, each one's ratings a run of the counted
    ratings (which are ordered by pair): their count, sum and sum of squares (whole
    numbers, exact in any order), and the pair's task."""

    items: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    squares: np.ndarray
    stage: np.ndarray  # index into STAGES


def _pairs(counted: RatingArrays) -> _Pairs:
    item = counted.item
    if not item.size:
        empty = np.zeros(0, dtype=np.int64)
        return _Pairs(empty, empty, empty.astype(np.float64), empty.astype(np.float64), empty)
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
    counts = np.diff(np.r_[starts, item.size])
    value = counted.value.astype(np.int32)
    sums = np.add.reduceat(value, starts, dtype=np.int64).astype(np.float64)
    value *= value
    squares = np.add.reduceat(value, starts, dtype=np.int64).astype(np.float64)
    del value
    # A pair's task is its batch's: the last rating's, as a write per rating would leave it.
    return _Pairs(item[starts], counts, sums, squares, counted.stage[starts + counts - 1])


def _rating_lists(
    counted: RatingArrays, pairs: _Pairs, rows: np.ndarray, pseudonyms: dict[int, str]
) -> tuple[pa.ListArray, pa.ListArray]:
    """Every counted rating of the pairs at `rows` (ascending) and its worker's pseudonym,
    as Arrow list columns (no Python object per rating)."""
    chosen = np.zeros(pairs.items.size, dtype=bool)
    chosen[rows] = True
    at = np.repeat(chosen, pairs.counts)  # per rating: of a chosen pair
    del chosen
    offsets = np.concatenate([[0], np.cumsum(pairs.counts[rows])])
    values = counted.value[at].astype(np.int8)
    workers = counted.worker[at]
    del at
    workers = _pseudonym_column(workers, pseudonyms)
    return (
        list_column(values, offsets),
        pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), workers),
    )


def _pairs_table(
    kind: str,
    rows: np.ndarray,
    written: tuple[pa.Array, pa.Array, pa.Array],
    pairs: _Pairs,
    lists: tuple[pa.ListArray, pa.ListArray],
    model: np.ndarray | None,
) -> pa.Table:
    """One file's pairs of the `cxc_pairs` record set: its CSV's columns, then every rating,
    the rater count, the spread (population standard deviation of the ratings) and, where
    fitted, the scale model's estimate and 95 % interval."""
    ratings, workers = lists
    raters = pairs.counts[rows]
    mean = pairs.sums[rows] / raters
    spread = np.sqrt(np.maximum(pairs.squares[rows] / raters - mean**2, 0.0))
    fit = model[rows] if model is not None else np.full((rows.size, 3), np.nan)
    first, second, method = written
    return table_from_columns(
        {
            "kind": _repeated(kind, rows.size),
            "first": first,
            "second": second,
            "agg_score": np.round(mean, 2),
            "sampling_method": method,
            "raters": raters.astype(np.int32),
            "spread": np.round(spread, 4),
            "ratings": ratings,
            "workers": workers,
            "model_score": pa.array(np.round(fit[:, 0], 4), from_pandas=True),
            "model_low95": pa.array(np.round(fit[:, 1], 4), from_pandas=True),
            "model_high95": pa.array(np.round(fit[:, 2], 4), from_pandas=True),
        }
    )


def _first_seen_counts(codes: np.ndarray, names: list[str], into: dict[str, int]) -> None:
    """Add the count of each code's name to `into`, names in order of first appearance."""
    found, first, counted = np.unique(codes, return_index=True, return_counts=True)
    for at in np.argsort(first, kind="stable").tolist():
        name = names[int(found[at])]
        into[name] = into.get(name, 0) + int(counted[at])


def _commas(*columns: pa.Array) -> list[pa.Array | str]:
    """`columns` with a comma between each two (the parts of a CSV line)."""
    parts: list[pa.Array | str] = []
    for column in columns:
        parts += [column, ","]
    return parts[:-1]


LINES_STEP = 16_384  # rows of a file's text made at a time: a few MB of Arrow buffers


@dataclass(frozen=True)
class _Task:
    """What one task's (STAGES[n]) files are made from."""

    n: int
    name: str  # the split in the files' names ("val")
    names: _PairNames
    counted: RatingArrays
    pairs: _Pairs
    model: np.ndarray | None
    pseudonyms: dict[int, str]


def _task_files(
    work: ExportWork, task: _Task, beside: AtomicLines | None, per_method: dict[str, int]
) -> pa.Table:
    """The task's CSV in CxC's layout (written to disk as made; the manifest lists the files
    in the order they were written, as before), its lines of the scale model's file, its
    pairs counted per sampling method into `per_method`; returns its part of the record
    set."""
    prefix, columns = FILES[STAGES[task.n]]
    pairs, model, names = task.pairs, task.model, task.names
    rows = np.flatnonzero(pairs.stage == task.n)
    first, second, tag = names(pairs.items[rows])
    codes, tags = pa.array(tag.astype(np.int32)), pa.array(names.tags, pa.string())
    _first_seen_counts(tag, names.tags, per_method)
    sums, counts = pairs.sums[rows], pairs.counts[rows]
    kind = csv_field(pa.array([prefix], pa.string()))[0].as_py()

    def write(lines: AtomicLines) -> None:
        """The CSV, and the scale model's lines beside it, a slice of rows at a time: both
        files' lines start with the same columns, made once (a task's whole text at once
        was tens of MB at CxC's size)."""
        fit = model[rows] if model is not None and beside is not None else None
        lines.write_bytes((",".join(columns) + "\n").encode())
        for lo in range(0, rows.size, LINES_STEP):
            at = slice(lo, lo + LINES_STEP)
            shared = [csv_field(first[at]), csv_field(second[at]), ratio_2f(sums[at], counts[at])]
            method = csv_field(tags.take(codes[at]))  # the record set keeps the codes
            write_lines(lines, joined_lines(*_commas(*shared, method)))
            if fit is not None and beside is not None:
                values = [float_2f(fit[at, k]) for k in range(3)]
                write_lines(beside, joined_lines(kind, ",", *_commas(*shared, *values, method)))

    work.stream(f"{prefix}_{task.name}.csv", write)
    lists = _rating_lists(task.counted, pairs, rows, task.pseudonyms)
    # The record set keeps names as codes into one string per name (each names many pairs).
    first, second = pc.dictionary_encode(first), pc.dictionary_encode(second)
    encoded = pa.DictionaryArray.from_arrays(codes, tags)
    return _pairs_table(prefix, rows, (first, second, encoded), pairs, lists, model)


@dataclass(frozen=True)
class _Reads:
    """What the export reads besides the ratings (none of it depends on them)."""

    pseudonyms: dict[int, str]
    names: _PairNames
    crowd: dict[str, Any]  # the manifest's consent and pay entries
    sample: dict[str, Any] | None  # the sampling job's result


def _reads(run_id: int) -> _Reads:
    run = Run.objects.select_related("dataset").get(pk=run_id)
    sample = run.jobs.filter(name="cxc.sample", state="succeeded").order_by("-pk").first()
    return _Reads(
        pseudonyms=run_worker_pseudonyms(run=run),
        names=_PairNames(run),
        crowd=export_manifest_crowd(run=run),
        sample=sample.result if sample else None,
    )


def _pair_files(
    work: ExportWork, reads: _Reads, counted: RatingArrays, model: np.ndarray | None
) -> tuple[list[pa.Table], dict[str, int]]:
    """The three CSVs and the scale model's file; returns the record set's parts and the
    pairs per sampling method."""
    pairs = _pairs(counted)
    name = cxc_settings(work.run).export_name
    per_method: dict[str, int] = {}
    table_parts: list[pa.Table] = []
    with ExitStack() as stack:
        # The scale model's file is written beside the three CSVs, a task's lines at a time
        # (the manifest lists it after them, as it closes last).
        beside = None
        if model is not None:
            beside = stack.enter_context(work.streaming(f"scale_model_{name}.csv"))
            beside.write_bytes((",".join(MODEL_COLUMNS) + "\n").encode())
        for n in range(len(STAGES)):
            task = _Task(n, name, reads.names, counted, pairs, model, reads.pseudonyms)
            table_parts.append(_task_files(work, task, beside, per_method))
            memory_release()  # the text columns' intermediates
    return table_parts, per_method


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    # Each step beside another leaves the GIL for most of its time (numpy's and Arrow's
    # kernels, file writes, waits on the database), so two cores work at once.
    with beside_pool() as pool:
        # What does not need the ratings, on a connection of its own while they stream in.
        reads_now = reads_beside(pool, _reads, run.pk)
        ratings = cxc_rating_arrays(run=run)
        reads = reads_now.result()
        memory_release()  # both reads' chunks, copied into their arrays (tens of MB)
        work.progress(60, f"{ratings.item.size} ratings read")
        gold_ratings = int(ratings.gold.sum())
        counted = _counted(ratings)
        # Every rating's JSON line beside the per-worker scale model (beside CxC's plain
        # mean, agg_score, the default: its estimate and 95 % interval, pipeline/scales.py).
        jsonl = pool.submit(
            work.stream,
            "ratings.jsonl",
            partial(_ratings_jsonl, ratings=ratings, pseudonyms=reads.pseudonyms),
        )
        del ratings  # with gold pairs, a copy less once the JSONL is written
        model = _scale_model(counted)
        jsonl.result()
        # Only the JSONL names the ratings' assignments.
        counted = dataclasses.replace(counted, assignment=np.zeros(0, dtype=np.int64))
        # The agreement beside the pairs' files.
        agreement_now = pool.submit(cxc_agreement, counted)
        work.progress(70, "pairs")
        memory_release()
        table_parts, per_method = _pair_files(work, reads, counted, model)
        agreement = agreement_now.result()
    name = cxc_settings(run).export_name
    counted_ratings, fitted = int(counted.item.size), model is not None
    sample, crowd = reads.sample, reads.crowd
    del counted, model, reads
    memory_release()
    work.progress(80, "manifest")
    manifest: dict[str, Any] = {
        **export_manifest_head(run=run, format=CXC_FORMAT),
        "sampling": sample,
        "pairs_per_sampling_method": dict(sorted(per_method.items())),
        "ratings": counted_ratings,
        "gold_ratings": gold_ratings,
        "agreement": agreement,
        "scale_model": None
        if not fitted
        else {
            "file": f"scale_model_{name}.csv",
            "method": "per-worker offset, slope and noise, fitted by alternating weighted "
            "least squares (pipeline/scales.py); agg_score stays CxC's plain mean",
            "columns": list(MODEL_COLUMNS),
        },
        **crowd,
    }
    return ExportParts(
        manifest=manifest,
        files={},
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
    paper=PAPER,
    task_categories=("sentence-similarity", "image-to-text"),
    record_keys={"cxc_pairs": ("kind", "first", "second")},  # the id pair, per file
)
