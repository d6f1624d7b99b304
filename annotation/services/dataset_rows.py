"""Writing an imported file's images and captions in bulk: COPY on PostgreSQL, large batched
INSERTs on SQLite. Callers hold the transaction; nothing here validates."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

from django.db import connection

from annotation.models import Caption, Dataset, Image
from annotation.services.jobs import Progress
from pipeline.coco import CaptionColumns, CocoCaption, CocoCaptions, CocoImage

BATCH = 5000
# Rows of COPY text built and sent at a time: a few megabytes, so memory stays bounded while
# the server takes one chunk as the next is built.
COPY_ROWS = 50_000
# Progress between these percents covers the writing (validation comes first).
_START, _END = 50.0, 99.0
# COPY's text format: NULL, and what a value must escape (backslash first).
_NULL = "\\N"
_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def dataset_rows_write(
    *,
    dataset: Dataset,
    parsed: CocoCaptions,
    captions: Iterable[CaptionColumns],
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Write ``parsed``'s images and the (already validated) ``captions``, columns a batch at
    a time, into ``dataset``; returns the rows written (images, captions), as counted by the
    database."""
    copy = connection.vendor == "postgresql"
    dataset_id = dataset.pk  # once: `.pk` is a property call per row otherwise
    if copy:
        images = _copy(Image, _IMAGE_COLUMNS, _image_text(dataset_id, parsed.images))
    else:
        images = _insert(Image, _IMAGE_COLUMNS, _image_rows(dataset_id, parsed.images))
    if progress is not None:
        progress(_START, f"wrote {images} images")

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coco_id, id FROM {Image._meta.db_table} WHERE dataset_id = %s", [dataset_id]
        )
        pk_by_coco = dict(cursor.fetchall())
    total = max(parsed.caption_count, 1)

    def reported(chunks: Iterator[CaptionColumns]) -> Iterator[CaptionColumns]:
        done = step = 0
        for chunk in chunks:
            yield chunk
            done += len(chunk.ids)
            if progress is not None and done // 50_000 > step:
                step = done // 50_000
                progress(_START + (_END - _START) * done / total, f"wrote {done} captions")

    chunks = reported(_rechunked(captions))
    if copy:
        written = _copy(Caption, _CAPTION_COLUMNS, _caption_text(dataset_id, pk_by_coco, chunks))
    else:
        written = _insert(Caption, _CAPTION_COLUMNS, _caption_rows(dataset_id, pk_by_coco, chunks))
    return images, written


_IMAGE_COLUMNS = ["dataset", "coco_id", "file_name", "coco_url", "width", "height"]
_CAPTION_COLUMNS = ["dataset", "coco_id", "image", "text"]


def caption_columns(captions: Iterable[CocoCaption]) -> Iterator[CaptionColumns]:
    """Caption records (a second pass over a big file) as columns, COPY_ROWS at a time."""
    records = iter(captions)
    while chunk := list(islice(records, COPY_ROWS)):
        ids, image_ids, texts = zip(*chunk, strict=True)
        yield CaptionColumns(ids, image_ids, texts)


def _rechunked(batches: Iterable[CaptionColumns]) -> Iterator[CaptionColumns]:
    """The captions again, in slices of at most COPY_ROWS (one pass keeps them all in one)."""
    for batch in batches:
        for at in range(0, len(batch.ids), COPY_ROWS):
            yield CaptionColumns(*(column[at : at + COPY_ROWS] for column in batch))


def _escaped(texts: Sequence[str]) -> Sequence[str]:
    """`texts` as COPY text values. Escaped over the joined texts (NUL, which validation
    refuses in every text, separates them): a batch without a character to escape costs a
    join and four scans, none a call per text."""
    if not texts:
        return texts
    joined = "\0".join(texts)
    if not any(char in joined for char, _ in _ESCAPES):
        return texts
    for char, escape in _ESCAPES:
        joined = joined.replace(char, escape)
    return joined.split("\0")


def _image_text(dataset_id: int, images: Sequence[CocoImage]) -> Iterator[str]:
    for at in range(0, len(images), COPY_ROWS):
        chunk = images[at : at + COPY_ROWS]
        names = _escaped([im.file_name for im in chunk])
        urls = _escaped([im.coco_url or "" for im in chunk])
        yield "".join(
            [
                f"{dataset_id}\t{im.id}\t{name}\t{url}\t"
                f"{_NULL if im.width is None else im.width}\t"
                f"{_NULL if im.height is None else im.height}\n"
                for im, name, url in zip(chunk, names, urls, strict=True)
            ]
        )


def _caption_text(
    dataset_id: int, pk_by_coco: dict[int, int], chunks: Iterable[CaptionColumns]
) -> Iterator[str]:
    for ids, image_ids, texts in chunks:
        pks = map(pk_by_coco.__getitem__, image_ids)
        yield "".join(
            [
                f"{dataset_id}\t{caption_id}\t{pk}\t{text}\n"
                for caption_id, pk, text in zip(ids, pks, _escaped(texts), strict=True)
            ]
        )


def _image_rows(dataset_id: int, images: Sequence[CocoImage]) -> Iterator[tuple]:
    for im in images:
        yield (dataset_id, im.id, im.file_name, im.coco_url or "", im.width, im.height)


def _caption_rows(
    dataset_id: int, pk_by_coco: dict[int, int], chunks: Iterable[CaptionColumns]
) -> Iterator[tuple]:
    for ids, image_ids, texts in chunks:
        for caption_id, image_id, text in zip(ids, image_ids, texts, strict=True):
            yield (dataset_id, caption_id, pk_by_coco[image_id], text)


def _copy(model: type, fields: list[str], chunks: Iterable[str]) -> int:
    """COPY rows given as chunks of COPY text (tab-separated, escaped, newline-ended)."""
    meta = model._meta  # type: ignore[attr-defined]
    columns = ", ".join(connection.ops.quote_name(meta.get_field(f).column) for f in fields)
    table = connection.ops.quote_name(meta.db_table)
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for chunk in chunks:
                copy.write(chunk)
        return raw.rowcount


def _insert(model: type, fields: list[str], rows: Iterable[tuple]) -> int:
    # bulk_create splits each batch further where SQLite limits the number of parameters.
    names = [f if f not in ("dataset", "image") else f"{f}_id" for f in fields]
    written = 0
    batch: list = []
    for row in rows:
        batch.append(model(**dict(zip(names, row, strict=True))))
        if len(batch) >= BATCH:
            written += len(model.objects.bulk_create(batch))  # type: ignore[attr-defined]
            batch = []
    if batch:
        written += len(model.objects.bulk_create(batch))  # type: ignore[attr-defined]
    return written
