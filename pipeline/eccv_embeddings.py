"""Users' retrieval models for ECCV Caption: embeddings (.npz) or ranked lists (JSON).

An ``.npz`` holds four arrays: ``image_ids`` and ``caption_ids`` (1-D integers, COCO ids),
``image_embeddings`` and ``caption_embeddings`` (2-D, one row per id, same width). A ranked
list file is ``{"i2t": {"<image id>": [caption ids]}, "t2i": {"<caption id>": [image ids]}}``,
best first. Errors name the file, the record (an id, or a row) and the field.
"""

from __future__ import annotations

import zipfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.eccv_candidates import ModelRanking
from pipeline.eccv_metrics import parse_id_key, rankings_from_embeddings
from pipeline.eccv_vocabulary import DIRECTIONS, I2T
from pipeline.embedding_storage import (
    FLOAT16,
    FLOAT32,
    check_storage,
    chunk_rows,
    read_npz_float16,
    unit_float16,
)
from pipeline.errors import InputError
from pipeline.jsonio import decode_json, describe
from pipeline.neighbours import gallery_ranks, normalize_rows

ID_ARRAYS = ("image_ids", "caption_ids")
EMBEDDING_ARRAYS = ("image_embeddings", "caption_embeddings")


@dataclass(frozen=True, eq=False)
class ModelEmbeddings:
    """Validated embeddings: int64 ids and float32 rows in file order (float16 unit rows
    with float16 storage, see pipeline.embedding_storage)."""

    image_ids: np.ndarray
    image_embeddings: np.ndarray
    caption_ids: np.ndarray
    caption_embeddings: np.ndarray
    source: str
    # Set when each image row is the mean of its captions' rows (built-in text annotators):
    # the image row of each caption (-1: none) and how many captions each image mean holds.
    # Rankings then score a query against its own image/captions without the query's caption.
    caption_owner_rows: np.ndarray | None = None
    image_caption_counts: np.ndarray | None = None

    @property
    def dim(self) -> int:
        return int(self.image_embeddings.shape[1])


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def restrict_gallery(
    embeddings: ModelEmbeddings, image_ids: Collection[int], caption_ids: Collection[int]
) -> ModelEmbeddings:
    """Only the listed images and captions (a split's gallery); co-caption owners follow."""
    keep_images = np.isin(embeddings.image_ids, np.fromiter(image_ids, dtype=np.int64))
    keep_captions = np.isin(embeddings.caption_ids, np.fromiter(caption_ids, dtype=np.int64))
    owners = embeddings.caption_owner_rows
    counts = embeddings.image_caption_counts
    if owners is not None:
        new_row = np.full(len(embeddings.image_ids), -1, dtype=np.int64)
        new_row[keep_images] = np.arange(int(keep_images.sum()))
        kept_owners = owners[keep_captions]
        owners = np.where(kept_owners >= 0, new_row[np.maximum(kept_owners, 0)], -1)
        counts = counts[keep_images] if counts is not None else None
    return ModelEmbeddings(
        image_ids=embeddings.image_ids[keep_images],
        image_embeddings=embeddings.image_embeddings[keep_images],
        caption_ids=embeddings.caption_ids[keep_captions],
        caption_embeddings=embeddings.caption_embeddings[keep_captions],
        source=embeddings.source,
        caption_owner_rows=owners,
        image_caption_counts=counts,
    )


def leave_one_out_replacements(
    embeddings: ModelEmbeddings, direction: str, query_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """For co-caption image means: the cosines of each query with its own image (t2i) or own
    captions (i2t) when the image's mean leaves that caption out, as `top_k`'s `replace`.

    Otherwise a caption query finds its own image trivially (the mean contains it) and an
    image query its own captions. An image with no other caption scores -1.
    """
    owners, counts = embeddings.caption_owner_rows, embeddings.image_caption_counts
    if owners is None or counts is None:
        return None

    def loo_cosine(image_rows: np.ndarray, caption_rows: np.ndarray) -> np.ndarray:
        # float64 copies of the rows in use only (not of both matrices), the same values.
        caption = embeddings.caption_embeddings[caption_rows].astype(np.float64)
        sums = embeddings.image_embeddings[image_rows].astype(np.float64) * counts[image_rows, None]
        rest = counts[image_rows] - 1
        means = (sums - caption) / np.maximum(rest, 1)[:, None]
        cos = np.einsum("ij,ij->i", _unit(means), _unit(caption))
        return np.where(rest > 0, cos, -1.0).astype(np.float32)

    if direction == I2T:
        # Each image's caption rows, ascending, from one stable sort of the owners (arrays,
        # not a dict of lists over every caption).
        owned = np.flatnonzero(owners >= 0)
        by_owner = owned[np.argsort(owners[owned], kind="stable")]
        sorted_owners = owners[by_owner]
        width = int(np.bincount(owners[owned]).max()) if owned.size else 0
        cols = np.full((len(query_rows), max(width, 1)), -1, dtype=np.int64)
        values = np.zeros(cols.shape, dtype=np.float32)
        lows = np.searchsorted(sorted_owners, query_rows, side="left")
        highs = np.searchsorted(sorted_owners, query_rows, side="right")
        for i, image in enumerate(query_rows.tolist()):
            own = by_owner[lows[i] : highs[i]]
            if own.size:
                cols[i, : own.size] = own
                values[i, : own.size] = loo_cosine(np.full(own.size, image), own)
        return cols, values
    own_images = owners[query_rows]
    cols = own_images[:, None].astype(np.int64)
    values = np.zeros(cols.shape, dtype=np.float32)
    has = own_images >= 0
    values[has, 0] = loo_cosine(own_images[has], query_rows[has])
    return cols, values


def load_model_embeddings(
    path: str | Path,
    *,
    known_image_ids: Collection[int],
    known_caption_ids: Collection[int],
    require_all: bool = False,
    storage: str = FLOAT32,
) -> ModelEmbeddings:
    """Read and validate a model's ``.npz`` embeddings (see parse_model_embeddings).

    With ``storage="float16"`` each embedding matrix is read a chunk of rows at a time and
    kept as float16 unit rows: the file's matrix is never in memory whole.
    """
    check_storage(storage)
    name = str(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"not a readable .npz archive: {exc}", file=name) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise InputError("not an .npz archive (a single .npy array?)", file=name)
    with loaded:
        try:
            arrays = _read_arrays(loaded, name, storage)
        except InputError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            # A damaged member, or an object array that would need pickle.
            raise InputError(f"cannot read an array: {exc}", file=name) from None
    return parse_model_embeddings(
        arrays,
        file=name,
        known_image_ids=known_image_ids,
        known_caption_ids=known_caption_ids,
        require_all=require_all,
        storage=storage,
    )


def parse_model_embeddings(
    arrays: Mapping[str, Any],
    *,
    file: str,
    known_image_ids: Collection[int],
    known_caption_ids: Collection[int],
    require_all: bool = False,
    storage: str = FLOAT32,
) -> ModelEmbeddings:
    """Validate the four arrays; with ``require_all`` every known id needs a row.

    With ``storage="float16"`` embeddings are kept as float16 (other dtypes are converted to
    float16 unit rows); otherwise as float32, as they always were.

    Checks, in order: presence, ids 1-D integer, embeddings 2-D numeric with one row per
    id and at least one column, finite values (record = the row's id), equal widths,
    duplicate ids, ids unknown to the dataset.
    """
    checked: dict[str, np.ndarray] = {}
    for ids_name, emb_name in zip(ID_ARRAYS, EMBEDDING_ARRAYS, strict=True):
        ids = _id_array(arrays, ids_name, file)
        emb = _embedding_array(arrays, emb_name, ids, file, check_storage(storage))
        checked[ids_name], checked[emb_name] = ids, emb
    image_dim = checked["image_embeddings"].shape[1]
    caption_dim = checked["caption_embeddings"].shape[1]
    if image_dim != caption_dim:
        raise InputError(
            f"caption embeddings have {caption_dim} columns but image embeddings {image_dim}",
            file=file,
            field="caption_embeddings",
        )
    for ids_name, known in (("image_ids", known_image_ids), ("caption_ids", known_caption_ids)):
        ids = checked[ids_name]
        unique, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise InputError(
                "id appears twice", file=file, record=int(unique[counts > 1][0]), field=ids_name
            )
        known_array = (
            known.astype(np.int64, copy=False)
            if isinstance(known, np.ndarray)
            else np.fromiter((int(v) for v in known), dtype=np.int64, count=len(known))
        )
        unknown = ids[~np.isin(ids, known_array)]
        if unknown.size:
            raise InputError(
                f"id is not in the dataset ({unknown.size} unknown id(s) in all)",
                file=file,
                record=int(unknown[0]),
                field=ids_name,
            )
        if require_all:
            absent = np.setdiff1d(known_array, ids)
            if absent.size:
                raise InputError(
                    f"no embedding for this dataset id ({absent.size} missing in all)",
                    file=file,
                    record=int(absent[0]),
                    field=ids_name,
                )
    n_images, n_captions = checked["image_ids"].size, checked["caption_ids"].size
    return ModelEmbeddings(
        image_ids=checked["image_ids"],
        image_embeddings=checked["image_embeddings"],
        caption_ids=checked["caption_ids"],
        caption_embeddings=checked["caption_embeddings"],
        source=f"{file} ({n_images} images, {n_captions} captions, {image_dim}-d)",
    )


def rows_of_ids(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of each wanted id in ``ids`` (the last one if an id repeats), -1 if absent.

    Sorted arrays, not a dict of Python ints: 2M caption ids would cost ~200 MB as a dict.
    """
    wanted = np.asarray(wanted, dtype=np.int64)
    rows = np.full(wanted.shape, -1, dtype=np.int64)
    if ids.size == 0 or wanted.size == 0:
        return rows
    order = np.argsort(ids, kind="stable")  # equal ids keep their row order
    ordered = ids[order]
    at = np.searchsorted(ordered, wanted, side="right") - 1
    found = (at >= 0) & (ordered[np.maximum(at, 0)] == wanted)
    rows[found] = order[at[found]]
    return rows


def model_ranking(
    embeddings: ModelEmbeddings,
    *,
    depth: int = 25,
    image_queries: Sequence[int] | None = None,
    caption_queries: Sequence[int] | None = None,
    block_size: int = 2048,
    overwrite: bool = False,
) -> ModelRanking:
    """Top-``depth`` cosine retrievals of a model over its whole galleries.

    Queries default to every embedded image / caption; a query id must have an embedding.
    With ``overwrite`` the caller gives up the embeddings: each gallery matrix is scaled to
    unit rows in place instead of copied (at 2M captions, a copy the size of the caption
    matrix). The rankings are the same, bit for bit.
    """
    queries: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    query_rows: dict[str, np.ndarray] = {}
    for direction, ids, emb, chosen in (
        (I2T, embeddings.image_ids, embeddings.image_embeddings, image_queries),
        ("t2i", embeddings.caption_ids, embeddings.caption_embeddings, caption_queries),
    ):
        if chosen is None:
            queries[direction] = (ids, emb)
            query_rows[direction] = np.arange(ids.size, dtype=np.int64)
            continue
        wanted = np.asarray(chosen, dtype=np.int64)
        rows = rows_of_ids(ids, wanted)
        if (rows < 0).any():
            field = "image_queries" if direction == I2T else "caption_queries"
            missing = int(wanted[np.flatnonzero(rows < 0)[0]])
            raise InputError("query has no embedding", record=missing, field=field)
        queries[direction] = (ids[rows], emb[rows])
        query_rows[direction] = rows
    # Both directions' replacements first: they read the raw rows the rankings may overwrite.
    replace = {d: leave_one_out_replacements(embeddings, d, query_rows[d]) for d in DIRECTIONS}
    i2t = rankings_from_embeddings(
        *queries[I2T],
        embeddings.caption_ids,
        embeddings.caption_embeddings,
        depth,
        block_size=block_size,
        replace=replace[I2T],
        # Not when every caption is a t2i query: the caption matrix is those queries.
        in_place=overwrite and caption_queries is not None,
    )
    t2i = rankings_from_embeddings(
        *queries["t2i"],
        embeddings.image_ids,
        embeddings.image_embeddings,
        depth,
        block_size=block_size,
        replace=replace["t2i"],
        in_place=overwrite,
    )
    return ModelRanking(i2t=i2t, t2i=t2i)


def item_ranks(
    embeddings: ModelEmbeddings,
    direction: str,
    items: Mapping[int, Sequence[int]],
    *,
    block_size: int = 2048,
) -> dict[int, list[int]]:
    """For each query id, the model's full-gallery rank (0 = first) of each listed gallery id,
    scored as `model_ranking` scores (cosine, leave-one-out for co-caption images)."""
    if direction == I2T:
        query_ids, query_emb = embeddings.image_ids, embeddings.image_embeddings
        gallery_ids, gallery_emb = embeddings.caption_ids, embeddings.caption_embeddings
    else:
        query_ids, query_emb = embeddings.caption_ids, embeddings.caption_embeddings
        gallery_ids, gallery_emb = embeddings.image_ids, embeddings.image_embeddings
    query_row = {int(v): i for i, v in enumerate(query_ids.tolist())}
    gallery_row = {int(v): i for i, v in enumerate(gallery_ids.tolist())}
    queries = sorted(items)
    for query in queries:
        if query not in query_row:
            raise InputError("query has no embedding", record=query, field=direction)
        for item in items[query]:
            if item not in gallery_row:
                raise InputError(f"item {item} has no embedding", record=query, field=direction)
    rows = np.asarray([query_row[q] for q in queries], dtype=np.int64)
    width = max((len(items[q]) for q in queries), default=0)
    wanted = np.full((len(queries), max(width, 1)), -1, dtype=np.int64)
    for i, query in enumerate(queries):
        wanted[i, : len(items[query])] = [gallery_row[item] for item in items[query]]
    ranks = gallery_ranks(
        normalize_rows(query_emb[rows]),
        normalize_rows(gallery_emb),
        wanted,
        block_size=block_size,
        replace=leave_one_out_replacements(embeddings, direction, rows),
    )
    return {q: ranks[i, : len(items[q])].tolist() for i, q in enumerate(queries)}


def load_ranked_lists(
    path: str | Path,
    *,
    known_image_ids: Collection[int],
    known_caption_ids: Collection[int],
    min_length: int = 1,
) -> ModelRanking:
    """Read and validate a ranked-list JSON file (see parse_ranked_lists)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    return parse_ranked_lists(
        raw,
        file=name,
        known_image_ids=known_image_ids,
        known_caption_ids=known_caption_ids,
        min_length=min_length,
    )


def parse_ranked_lists(
    raw: bytes | str,
    *,
    file: str,
    known_image_ids: Collection[int],
    known_caption_ids: Collection[int],
    min_length: int = 1,
) -> ModelRanking:
    """Validate ``{"i2t": {...}, "t2i": {...}}``; each list holds at least ``min_length``
    distinct known ids of the other modality. Records are query ids, fields ``i2t`` /
    ``t2i``; other top-level keys are ignored."""
    if min_length < 1:
        raise InputError(f"must be at least 1, got {min_length}", field="min_length")
    doc = decode_json(raw, file=file)
    if not isinstance(doc, dict):
        raise InputError(f"top level must be a JSON object, got {describe(doc)}", file=file)
    images = set(known_image_ids)
    captions = set(known_caption_ids)
    parsed: dict[str, dict[int, list[int]]] = {}
    for direction in DIRECTIONS:
        if direction not in doc:
            raise InputError("missing", file=file, field=direction)
        block = doc[direction]
        if not isinstance(block, dict):
            raise InputError(
                f"must be an object of query id -> ranked ids, got {describe(block)}",
                file=file,
                field=direction,
            )
        query_known, item_known = (images, captions) if direction == I2T else (captions, images)
        query_kind, item_kind = ("image", "caption") if direction == I2T else ("caption", "image")
        lists: dict[int, list[int]] = {}
        for key, value in block.items():
            query = parse_id_key(key, file=file, field=direction)
            if query not in query_known:
                raise InputError(
                    f"query is not a {query_kind} of the dataset",
                    file=file,
                    record=query,
                    field=direction,
                )
            lists[query] = _ranked_list(
                value,
                file=file,
                record=query,
                field=direction,
                known=item_known,
                kind=item_kind,
                min_length=min_length,
            )
        parsed[direction] = lists
    return ModelRanking(i2t=parsed[I2T], t2i=parsed["t2i"])


def _read_arrays(archive: Any, file: str, storage: str = FLOAT32) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for name in (*ID_ARRAYS, *EMBEDDING_ARRAYS):
        if name not in archive.files:
            raise InputError(
                f"missing array (the archive has: {', '.join(archive.files) or 'none'})",
                file=file,
                field=name,
            )
        if storage == FLOAT16 and name in EMBEDDING_ARRAYS:
            arrays[name] = read_npz_float16(archive.zip, name, file=file)
        else:
            arrays[name] = archive[name]
    return arrays


def _id_array(arrays: Mapping[str, Any], name: str, file: str) -> np.ndarray:
    if name not in arrays:
        raise InputError("missing array", file=file, field=name)
    ids = np.asarray(arrays[name])
    if ids.ndim != 1:
        raise InputError(f"must be a 1-D array, got shape {ids.shape}", file=file, field=name)
    if ids.size == 0:
        raise InputError("must not be empty", file=file, field=name)
    if not np.issubdtype(ids.dtype, np.integer):
        raise InputError(f"must hold integer ids, got dtype {ids.dtype}", file=file, field=name)
    return ids.astype(np.int64, copy=False)


def _embedding_array(
    arrays: Mapping[str, Any], name: str, ids: np.ndarray, file: str, storage: str = FLOAT32
) -> np.ndarray:
    if name not in arrays:
        raise InputError("missing array", file=file, field=name)
    emb = np.asarray(arrays[name])
    if emb.ndim != 2:
        raise InputError(f"must be a 2-D array, got shape {emb.shape}", file=file, field=name)
    if not (np.issubdtype(emb.dtype, np.floating) or np.issubdtype(emb.dtype, np.integer)):
        raise InputError(f"must be numeric, got dtype {emb.dtype}", file=file, field=name)
    if emb.shape[0] != ids.size:
        raise InputError(
            f"{emb.shape[0]} rows for {ids.size} ids; need one row per id", file=file, field=name
        )
    if emb.shape[1] == 0:
        raise InputError("rows have no columns", file=file, field=name)
    # A chunk of rows at a time: a mask of the whole matrix is 1 byte per value.
    rows = chunk_rows(emb.shape[1])
    for first in range(0, emb.shape[0], rows):
        finite = np.isfinite(emb[first : first + rows]).all(axis=1)
        if not finite.all():
            row = first + int(np.flatnonzero(~finite)[0])
            raise InputError(
                f"NaN or infinity in row {row}", file=file, record=int(ids[row]), field=name
            )
    if storage == FLOAT16:
        return np.ascontiguousarray(emb) if emb.dtype == np.float16 else unit_float16(emb)
    if np.issubdtype(emb.dtype, np.floating) and emb.dtype.itemsize > 4:
        overflow = (np.abs(emb) > np.finfo(np.float32).max).any(axis=1)
        if overflow.any():
            row = int(np.flatnonzero(overflow)[0])
            raise InputError(
                f"row {row} overflows float32", file=file, record=int(ids[row]), field=name
            )
    out = emb.astype(np.float32, copy=False)
    return np.ascontiguousarray(out)


def _ranked_list(
    value: Any,
    *,
    file: str,
    record: int,
    field: str,
    known: set[int],
    kind: str,
    min_length: int,
) -> list[int]:
    if not isinstance(value, list):
        raise InputError(
            f"must be a list of {kind} ids, got {describe(value)}",
            file=file,
            record=record,
            field=field,
        )
    if len(value) < min_length:
        raise InputError(
            f"ranks {len(value)} {kind}s, fewer than the {min_length} required",
            file=file,
            record=record,
            field=field,
        )
    seen: set[int] = set()
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int):
            raise InputError(
                f"item {position} must be an integer id, got {describe(item)}",
                file=file,
                record=record,
                field=field,
            )
        if item in seen:
            raise InputError(
                f"{kind} {item} appears twice (item {position})",
                file=file,
                record=record,
                field=field,
            )
        if item not in known:
            raise InputError(
                f"item {position}: {kind} {item} is not in the dataset",
                file=file,
                record=record,
                field=field,
            )
        seen.add(item)
    return value


def load_image_embeddings(
    path: str | Path, *, known_image_ids: Collection[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Only the image half of a model's ``.npz`` (``image_ids``, ``image_embeddings``; caption
    arrays may be absent), validated as `parse_model_embeddings` does: (ids, float32 rows)."""
    name = str(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"not a readable .npz archive: {exc}", file=name) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise InputError("not an .npz archive (a single .npy array?)", file=name)
    with loaded:
        try:
            wanted = ("image_ids", "image_embeddings")
            arrays: dict[str, Any] = {k: loaded[k] for k in wanted if k in loaded.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(f"cannot read an array: {exc}", file=name) from None
    ids = _id_array(arrays, "image_ids", name)
    emb = _embedding_array(arrays, "image_embeddings", ids, name)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InputError(
            "id appears twice", file=name, record=int(unique[counts > 1][0]), field="image_ids"
        )
    known = np.fromiter((int(v) for v in known_image_ids), dtype=np.int64)
    unknown = ids[~np.isin(ids, known)]
    if unknown.size:
        raise InputError(
            f"id is not in the dataset ({unknown.size} unknown id(s) in all)",
            file=name,
            record=int(unknown[0]),
            field="image_ids",
        )
    return ids, emb
