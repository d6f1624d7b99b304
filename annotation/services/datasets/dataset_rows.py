"""Writing an imported file's images and captions in bulk: COPY on PostgreSQL, large batched
INSERTs on SQLite. Callers hold the transaction; nothing here validates."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from itertools import islice
from operator import attrgetter
from typing import Any

import psycopg
from django.db import connection

from annotation.models import Caption, Image
from annotation.services.jobs.jobs import Progress
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
    dataset_id: int,
    parsed: CocoCaptions,
    captions: Iterable[CaptionColumns],
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Write ``parsed``'s images and the (already validated) ``captions``, columns a batch at
    a time, into dataset ``dataset_id``; returns the rows written (images, captions), as
    counted by the database. Progress is reported between statements only: the connection
    takes no other query while a COPY is open (a job's progress is an UPDATE on it)."""
    copy = connection.vendor == "postgresql"
    if copy:
        images = _copy(Image, _IMAGE_COLUMNS, _image_text(dataset_id, parsed.images))
    else:
        images = _insert(Image, _IMAGE_COLUMNS, _image_rows(dataset_id, parsed.images))
    if progress is not None:
        progress(_START, f"wrote {images} images")
    pk_by_coco = _image_pks(dataset_id)
    chunks = _rechunked(captions)
    if copy:
        written = _copy(Caption, _CAPTION_COLUMNS, _caption_text(dataset_id, pk_by_coco, chunks))
    else:
        written = _insert(Caption, _CAPTION_COLUMNS, _caption_rows(dataset_id, pk_by_coco, chunks))
    if progress is not None:
        progress(_END, f"wrote {written} captions")
    return images, written


def _image_pks(dataset_id: int) -> dict[int, int]:
    """The dataset's images' primary keys by COCO id."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coco_id, id FROM {Image._meta.db_table} WHERE dataset_id = %s", [dataset_id]
        )
        return dict(cursor.fetchall())


_IMAGE_COLUMNS = ["dataset", "coco_id", "file_name", "coco_url", "width", "height"]
_CAPTION_COLUMNS = ["dataset", "coco_id", "image", "text"]


class StreamedRows:
    """A `CaptionSink` that writes with COPY while the file is still being read, inside the
    caller's transaction, so that the server takes each batch of captions while the next is
    parsed (the bare way reads the whole file, then copies). At the first batch it writes all
    the images, then keeps one COPY of captions open to the end (`finish`, or `abort` when
    the reading fails).

    Nothing here validates: the file's checks across records come after the last batch, and
    a bad file rolls the transaction back. A batch the writing cannot take (a caption of an
    unknown image, a refusal of the server) stops it; the checks then say why, else
    `finish` raises the server's error. Refused (the caller keeps the captions and writes
    them at `finish`): captions given before the images, and images with text too long for
    their columns (the images left out for want of captions may hold any, unwritten)."""

    def __init__(
        self, *, dataset_id: int, limits: dict[str, int], progress: Progress | None = None
    ) -> None:
        self.dataset_id = dataset_id
        self.progress = progress  # told once, between the images and the captions' COPY
        self.limits = limits  # the lengths of Image's file_name and coco_url
        self.images = 0
        self.error: psycopg.Error | None = None
        self._started = self._stopped = False
        self._cursor: Any = None  # Django's cursor, and its COPY's context and object
        self._copying: Any = None
        self._copy: Any = None
        self._pk_by_coco: dict[int, int] = {}

    def __call__(self, images: list[CocoImage] | None, columns: CaptionColumns) -> bool:
        if not self._started:
            if images is None or not self._fits(images):
                return False
            self._started = True
            self._start(images)
        if self._stopped:
            return True
        try:
            pks = list(map(self._pk_by_coco.__getitem__, columns.image_ids))
        except KeyError:  # an unknown image: the checks at the end name it
            self._stop(None)
            return True
        try:
            self._copy.write(_caption_chunk(self.dataset_id, columns, pks))
        except psycopg.Error as exc:
            self._stop(exc)
        return True

    def _fits(self, images: list[CocoImage]) -> bool:
        return all(longest_text(images, column) <= self.limits[column] for column in self.limits)

    def _start(self, images: list[CocoImage]) -> None:
        try:
            self.images = _copy(Image, _IMAGE_COLUMNS, _image_text(self.dataset_id, images))
            self._pk_by_coco = _image_pks(self.dataset_id)
            if self.progress is not None:
                self.progress(20.0, f"wrote {self.images} images")
            self._cursor = connection.cursor()
            self._copying = self._cursor.cursor.copy(_copy_sql(Caption, _CAPTION_COLUMNS))
            self._copy = self._copying.__enter__()
        except psycopg.Error as exc:
            self._stop(exc)

    def _stop(self, error: psycopg.Error | None) -> None:
        self._stopped = True
        self.error = self.error or error
        self.abort()

    def abort(self) -> None:
        """End the open COPY, if any, refusing what it took (before the transaction ends)."""
        copying, cursor, self._copying, self._copy, self._cursor = (
            self._copying,
            self._cursor,
            None,
            None,
            None,
        )
        # The COPY's own failure is not the news: the transaction rolls back anyway.
        with suppress(psycopg.Error):
            if copying is not None:
                copying.__exit__(RuntimeError, RuntimeError("import stopped"), None)
        if cursor is not None:
            cursor.close()

    def finish(self, *, parsed: CocoCaptions) -> tuple[int, int]:
        """End the COPY and write what was not streamed, once the whole file has passed its
        checks; the rows written (images, captions)."""
        if self._stopped:
            self.abort()
            raise self.error or RuntimeError("streamed writing stopped on a file that passed")
        if not self._started:
            return dataset_rows_write(
                dataset_id=self.dataset_id, parsed=parsed, captions=[parsed.caption_columns]
            )
        try:
            self._copying.__exit__(None, None, None)
            captions = self._cursor.cursor.rowcount
        finally:
            self._cursor.close()
            self._copying = self._copy = self._cursor = None
        if parsed.skipped_images:  # written with the rest, before their captions were known
            with connection.cursor() as cursor:
                cursor.execute(
                    f"DELETE FROM {Image._meta.db_table} WHERE dataset_id = %s"
                    " AND coco_id = ANY(%s)",
                    [self.dataset_id, parsed.skipped_images],
                )
                self.images -= cursor.rowcount
        return self.images, captions


def longest_text(images: Sequence[CocoImage], column: str) -> int:
    """The most characters of the images' text `column` (None counting as none), in C."""
    return max(map(len, filter(None, map(attrgetter(column), images))), default=0)


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
            end = at + COPY_ROWS
            yield CaptionColumns(batch.ids[at:end], batch.image_ids[at:end], batch.texts[at:end])


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
    for columns in chunks:
        yield _caption_chunk(
            dataset_id, columns, list(map(pk_by_coco.__getitem__, columns.image_ids))
        )


def _caption_chunk(dataset_id: int, columns: CaptionColumns, pks: Sequence[int]) -> str:
    """COPY text of captions, given their images' primary keys."""
    return "".join(
        [
            f"{dataset_id}\t{caption_id}\t{pk}\t{text}\n"
            for caption_id, pk, text in zip(columns.ids, pks, _escaped(columns.texts), strict=True)
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


def _copy_sql(model: type, fields: list[str]) -> str:
    meta = model._meta  # type: ignore[attr-defined]
    columns = ", ".join(connection.ops.quote_name(meta.get_field(f).column) for f in fields)
    return f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"


def _copy(model: type, fields: list[str], chunks: Iterable[str]) -> int:
    """COPY rows given as chunks of COPY text (tab-separated, escaped, newline-ended)."""
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(_copy_sql(model, fields)) as copy:
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
