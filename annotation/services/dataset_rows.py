"""Writing an imported file's images and captions in bulk: COPY on PostgreSQL, large batched
INSERTs on SQLite. Callers hold the transaction; nothing here validates."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db import connection

from annotation.models import Caption, Dataset, Image
from annotation.services.jobs import Progress
from pipeline.coco import CocoCaption, CocoCaptions

BATCH = 5000
# Progress between these percents covers the writing (validation comes first).
_START, _END = 50.0, 99.0


def dataset_rows_write(
    *,
    dataset: Dataset,
    parsed: CocoCaptions,
    captions: Iterable[CocoCaption],
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Write ``parsed``'s images and the (already validated) ``captions`` into ``dataset``;
    returns the rows written (images, captions), as counted by the database."""
    copy = connection.vendor == "postgresql"
    dataset_id = dataset.pk  # once: `.pk` is a property call per row otherwise
    image_rows = (
        (dataset_id, im.id, im.file_name, im.coco_url or "", im.width, im.height)
        for im in parsed.images
    )
    image_columns = ["dataset", "coco_id", "file_name", "coco_url", "width", "height"]
    if copy:
        images = _copy(Image, image_columns, image_rows)
    else:
        images = _insert(Image, image_columns, image_rows)
    if progress is not None:
        progress(_START, f"wrote {images} images")

    pk_by_coco = dict(Image.objects.filter(dataset=dataset).values_list("coco_id", "pk"))
    total = max(parsed.caption_count, 1)

    def caption_rows() -> Iterator[tuple]:
        for done, c in enumerate(captions, 1):
            if progress is not None and done % 50_000 == 0:
                progress(_START + (_END - _START) * done / total, f"wrote {done} captions")
            yield (dataset_id, pk_by_coco[c.image_id], c.id, c.text)

    caption_columns = ["dataset", "image", "coco_id", "text"]
    if copy:
        written = _copy(Caption, caption_columns, caption_rows())
    else:
        written = _insert(Caption, caption_columns, caption_rows())
    return images, written


def _copy(model: type, fields: list[str], rows: Iterable[tuple]) -> int:
    meta = model._meta  # type: ignore[attr-defined]
    columns = ", ".join(connection.ops.quote_name(meta.get_field(f).column) for f in fields)
    table = connection.ops.quote_name(meta.db_table)
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
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
