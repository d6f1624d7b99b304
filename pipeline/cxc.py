"""Crisscrossed Captions (CxC) rating files: ``sits``, ``sis`` and ``sts`` CSVs.

Columns (header row required, as published): sits ``caption,image,agg_score,
sampling_method``; sis ``image1,image2,...``; sts ``caption1,caption2,...``. Captions are
written ``COCO_val2014:sentid:<COCO caption id>``, images ``COCO_val2014_<12-digit COCO image
id>.jpg``; ``agg_score`` is the mean 0-5 rating. Errors name the file, the 1-based line
number (the header is line 1) and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import InputError

SITS_COLUMNS = ("caption", "image", "agg_score", "sampling_method")
SIS_COLUMNS = ("image1", "image2", "agg_score", "sampling_method")
STS_COLUMNS = ("caption1", "caption2", "agg_score", "sampling_method")
# The sampling methods CxC's files use, per file type.
SITS_METHODS = ("c2i_intrasim", "c2i_original")
SIS_METHODS = ("i2i_csim",)
STS_METHODS = ("c2c_isim", "c2c_cocaption")

# ECCV Caption's CxC positives are exactly the sits pairs rated 3 or more: checked against
# eccv-caption 0.1.0's cxc_image_to_caption.json on the sits_test rows in tests/data/cxc.
ECCV_CXC_THRESHOLD = 3.0

_CAPTION = re.compile(r"COCO_(?:train|val)2014:sentid:([0-9]+)")
_IMAGE = re.compile(r"COCO_(?:train|val)2014_([0-9]{12})\.jpg")


@dataclass(frozen=True)
class SitsRow:
    """A caption-image rating."""

    caption_id: int
    image_id: int
    score: float
    sampling_method: str
    line: int


@dataclass(frozen=True)
class SisRow:
    """An image-image rating."""

    image_id_1: int
    image_id_2: int
    score: float
    sampling_method: str
    line: int


@dataclass(frozen=True)
class StsRow:
    """A caption-caption rating."""

    caption_id_1: int
    caption_id_2: int
    score: float
    sampling_method: str
    line: int


@dataclass(frozen=True)
class CxcPositives:
    """Positive pairs both ways: image -> caption ids and caption -> image ids, ascending."""

    i2t: dict[int, list[int]]
    t2i: dict[int, list[int]]


def load_sits(
    path: str | Path,
    *,
    known_caption_ids: Collection[int] | None = None,
    known_image_ids: Collection[int] | None = None,
) -> list[SitsRow]:
    """Read a sits CSV (see parse_sits)."""
    return parse_sits(
        _read(path),
        file=str(path),
        known_caption_ids=known_caption_ids,
        known_image_ids=known_image_ids,
    )


def load_sis(path: str | Path, *, known_image_ids: Collection[int] | None = None) -> list[SisRow]:
    """Read a sis CSV (see parse_sis)."""
    return parse_sis(_read(path), file=str(path), known_image_ids=known_image_ids)


def load_sts(path: str | Path, *, known_caption_ids: Collection[int] | None = None) -> list[StsRow]:
    """Read a sts CSV (see parse_sts)."""
    return parse_sts(_read(path), file=str(path), known_caption_ids=known_caption_ids)


def parse_sits(
    raw: bytes | str,
    *,
    file: str,
    known_caption_ids: Collection[int] | None = None,
    known_image_ids: Collection[int] | None = None,
) -> list[SitsRow]:
    """Caption-image ratings in file order; ids are checked against the known sets if given."""
    known_caption_ids = _as_set(known_caption_ids)
    known_image_ids = _as_set(known_image_ids)
    rows = []
    for line, fields in _records(raw, file, SITS_COLUMNS):
        caption = _caption_id(fields[0], file, line, "caption", known_caption_ids)
        image = _image_id(fields[1], file, line, "image", known_image_ids)
        score, method = _score_and_method(fields, file, line, SITS_METHODS)
        rows.append(SitsRow(caption, image, score, method, line))
    _check_unique(rows, file, lambda row: (row.caption_id, row.image_id), "caption")
    return rows


def parse_sis(
    raw: bytes | str, *, file: str, known_image_ids: Collection[int] | None = None
) -> list[SisRow]:
    """Image-image ratings in file order."""
    known_image_ids = _as_set(known_image_ids)
    rows = []
    for line, fields in _records(raw, file, SIS_COLUMNS):
        first = _image_id(fields[0], file, line, "image1", known_image_ids)
        second = _image_id(fields[1], file, line, "image2", known_image_ids)
        score, method = _score_and_method(fields, file, line, SIS_METHODS)
        rows.append(SisRow(first, second, score, method, line))
    _check_unique(rows, file, lambda row: (row.image_id_1, row.image_id_2), "image1")
    return rows


def parse_sts(
    raw: bytes | str, *, file: str, known_caption_ids: Collection[int] | None = None
) -> list[StsRow]:
    """Caption-caption ratings in file order."""
    known_caption_ids = _as_set(known_caption_ids)
    rows = []
    for line, fields in _records(raw, file, STS_COLUMNS):
        first = _caption_id(fields[0], file, line, "caption1", known_caption_ids)
        second = _caption_id(fields[1], file, line, "caption2", known_caption_ids)
        score, method = _score_and_method(fields, file, line, STS_METHODS)
        rows.append(StsRow(first, second, score, method, line))
    _check_unique(rows, file, lambda row: (row.caption_id_1, row.caption_id_2), "caption1")
    return rows


def cxc_positives(rows: Iterable[SitsRow], threshold: float = ECCV_CXC_THRESHOLD) -> CxcPositives:
    """Caption-image pairs rated ``agg_score >= threshold``, indexed both ways.

    ECCV Caption merges CxC in as a sixth source with threshold 3 (ECCV_CXC_THRESHOLD).
    """
    if not (0.0 <= threshold <= 5.0):
        raise InputError(f"must be within 0..5, got {threshold!r}", field="threshold")
    i2t: dict[int, set[int]] = {}
    t2i: dict[int, set[int]] = {}
    for row in rows:
        if row.score >= threshold:
            i2t.setdefault(row.image_id, set()).add(row.caption_id)
            t2i.setdefault(row.caption_id, set()).add(row.image_id)
    return CxcPositives(
        i2t={image: sorted(captions) for image, captions in sorted(i2t.items())},
        t2i={caption: sorted(images) for caption, images in sorted(t2i.items())},
    )


def _as_set(ids: Collection[int] | None) -> Collection[int] | None:
    # Membership tests per row: a list would make parsing quadratic.
    if ids is None or isinstance(ids, set | frozenset):
        return ids
    return set(ids)


def _read(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def _records(
    raw: bytes | str, file: str, columns: tuple[str, ...]
) -> Iterable[tuple[int, list[str]]]:
    """``(line number, fields)`` for each data row after checking the header."""
    if isinstance(raw, bytes):
        try:
            # utf-8-sig: a byte-order mark from a spreadsheet export is not part of the header.
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (bad byte at offset {exc.start})", file=file
            ) from None
    reader = csv.reader(io.StringIO(raw, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError("empty file: expected a header row", file=file, record=1)
        if tuple(name.strip() for name in header) != columns:
            raise InputError(
                f"header must be {','.join(columns)!r}, got {','.join(header)[:80]!r}",
                file=file,
                record=1,
                field="header",
            )
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(columns):
                raise InputError(
                    f"expected {len(columns)} columns, got {len(fields)}",
                    file=file,
                    record=reader.line_num,
                )
            yield reader.line_num, fields
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", file=file, record=reader.line_num) from None


def _caption_id(text: str, file: str, line: int, field: str, known: Collection[int] | None) -> int:
    match = _CAPTION.fullmatch(text)
    if match is None:
        raise InputError(
            f"caption must look like 'COCO_val2014:sentid:732091', got {text[:60]!r}",
            file=file,
            record=line,
            field=field,
        )
    caption = int(match.group(1))
    if known is not None and caption not in known:
        raise InputError(
            f"caption {caption} is not in the dataset", file=file, record=line, field=field
        )
    return caption


def _image_id(text: str, file: str, line: int, field: str, known: Collection[int] | None) -> int:
    match = _IMAGE.fullmatch(text)
    if match is None:
        raise InputError(
            f"image must look like 'COCO_val2014_000000365325.jpg', got {text[:60]!r}",
            file=file,
            record=line,
            field=field,
        )
    image = int(match.group(1))
    if known is not None and image not in known:
        raise InputError(
            f"image {image} is not in the dataset", file=file, record=line, field=field
        )
    return image


def _score_and_method(
    fields: list[str], file: str, line: int, methods: tuple[str, ...]
) -> tuple[float, str]:
    text = fields[2].strip()
    try:
        score = float(text)
    except ValueError:
        raise InputError(
            f"must be a number, got {text[:40]!r}", file=file, record=line, field="agg_score"
        ) from None
    if math.isnan(score) or not 0.0 <= score <= 5.0:
        raise InputError(
            f"must be within 0..5, got {text[:40]!r}", file=file, record=line, field="agg_score"
        )
    method = fields[3].strip()
    if not method:
        raise InputError("must not be empty", file=file, record=line, field="sampling_method")
    if method not in methods:
        raise InputError(
            f"unknown sampling method {method[:40]!r} (this file type has: {', '.join(methods)})",
            file=file,
            record=line,
            field="sampling_method",
        )
    return score, method


def _check_unique(
    rows: Sequence[Any], file: str, key: Callable[[Any], tuple[int, int]], field: str
) -> None:
    # Only an exact repeat is an error: sis rates (a, b) and (b, a) as separate rows.
    first_line: dict[tuple[int, int], int] = {}
    for row in rows:
        pair = key(row)
        if pair in first_line:
            raise InputError(
                f"pair {pair} is rated twice (also line {first_line[pair]})",
                file=file,
                record=row.line,
                field=field,
            )
        first_line[pair] = row.line
