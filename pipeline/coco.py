"""Read and validate the official COCO captions JSON (``captions_val2014.json`` layout)."""

from __future__ import annotations

import io
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from pipeline.errors import InputError
from pipeline.jsonio import (
    CHUNK_BYTES,
    INT64_MAX,
    INT64_MIN,
    LIST_START,
    check_json_text,
    check_text,
    describe,
    iter_object,
    require_int,
    require_object,
    require_str,
)

if TYPE_CHECKING:
    import numpy as np


class CocoImage(NamedTuple):
    """One image record; optional COCO fields are None when absent. (Named tuples: a file
    holds a million of these, and a tuple is made in C, several times faster than a frozen
    dataclass.)"""

    id: int
    file_name: str
    coco_url: str | None
    width: int | None
    height: int | None


class CocoCaption(NamedTuple):
    """One caption; ``text`` is exactly as in the file (spaces and newlines kept)."""

    id: int
    image_id: int
    text: str


class CaptionColumns(NamedTuple):
    """Captions as columns, in file order: what the import writes, without a tuple a caption
    (a million captions are a million objects otherwise)."""

    ids: Sequence[int]
    image_ids: Sequence[int]
    texts: Sequence[str]


def _no_captions() -> CaptionColumns:
    return CaptionColumns(array("q"), array("q"), [])


@dataclass
class CocoCaptions:
    """A validated captions file, images and captions in file order.

    Images without any caption are left out of ``images`` and listed in
    ``skipped_images`` (file order) with one warning each.
    """

    images: list[CocoImage]
    caption_columns: CaptionColumns = field(default_factory=_no_captions)
    skipped_images: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    caption_count: int = 0
    captions_sunk: int = 0  # the first captions, handed to a sink (`stream_coco_captions`)

    @property
    def captions(self) -> list[CocoCaption]:
        """The captions as records (made on each call; the import reads the columns)."""
        return list(map(CocoCaption, *self.caption_columns))


def load_coco_captions(path: str | Path) -> CocoCaptions:
    """Read and validate a COCO captions JSON file, streaming it (memory stays well under
    the file's size plus the parsed records)."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            return read_coco_captions(fh, file=name)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None


def parse_coco_captions(raw: bytes | str, *, file: str) -> CocoCaptions:
    """Validate COCO captions JSON text; raise InputError on the first bad record."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    return read_coco_captions(io.BytesIO(raw), file=file)


def read_coco_captions(fh: BinaryIO, *, file: str, chunk_bytes: int = CHUNK_BYTES) -> CocoCaptions:
    """Validate a COCO captions file read from ``fh``; raise InputError on the first bad
    record. Records are checked as they stream in; references between sections (which may
    come in either order) once all are read."""
    return _read(fh, file=file, chunk_bytes=chunk_bytes, keep_captions=True)


def scan_coco_captions(
    path: str | Path, *, chunk_bytes: int = CHUNK_BYTES, file: str | None = None
) -> CocoCaptions:
    """Validate a file completely like ``load_coco_captions`` but keep no captions (their
    ``captions`` list is empty; ``caption_count`` says how many): the first pass of a
    two-pass import, whose memory is the images plus 16 bytes a caption. Errors and warnings
    name the file as ``file`` (default: its path)."""
    name = file or str(path)
    try:
        with open(path, "rb") as fh:
            return _read(fh, file=name, chunk_bytes=chunk_bytes, keep_captions=False)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None


def iter_coco_captions(
    path: str | Path, *, chunk_bytes: int = CHUNK_BYTES, file: str | None = None
) -> Iterator[CocoCaption]:
    """The captions of a file ``scan_coco_captions`` accepted, streamed again in file order."""
    name = file or str(path)
    with open(path, "rb") as fh:
        for key, index, value in iter_object(
            fh, file=name, streamed=_SECTIONS, chunk_bytes=chunk_bytes, batched=True
        ):
            if key == "annotations" and index is not None and index >= 0:
                yield from map(CocoCaption, *_parse_captions(value, index, file=name))


# Takes each batch of captions once its records are checked, with all the images when the file
# gave them before its captions (else None); True when it took the batch, False to have this
# one and the rest kept in the result instead.
CaptionSink = Callable[[list["CocoImage"] | None, CaptionColumns], bool]


def stream_coco_captions(
    fh: BinaryIO, *, file: str, sink: CaptionSink, chunk_bytes: int = CHUNK_BYTES
) -> CocoCaptions:
    """Validate like ``read_coco_captions``, handing the captions to ``sink`` a batch at a time
    as they are read: the result's captions are those from the first batch it refused on.
    Checks across records (duplicate caption ids, unknown images, images left without
    captions) come only once all is read, after the sink took batches: it must write
    nothing that cannot be undone (the import writes inside a transaction)."""
    return _read(fh, file=file, chunk_bytes=chunk_bytes, keep_captions=True, sink=sink)


def _read(
    fh: BinaryIO,
    *,
    file: str,
    chunk_bytes: int,
    keep_captions: bool,
    sink: CaptionSink | None = None,
) -> CocoCaptions:
    import numpy as np  # here, not at start-up: every command loads this module (issue 46)

    info: dict[str, Any] = {}
    images: list[CocoImage] = []
    texts: list[str] = []
    # Caption ids and their image ids in file order, 8 bytes each, checked once all are read.
    caption_ids, caption_images = array("q"), array("q")
    sunk = 0  # the first captions, taken by the sink
    position: dict[int, int] = {}
    sections: set[str] = set()
    for key, index, value in iter_object(
        fh, file=file, streamed=_SECTIONS, chunk_bytes=chunk_bytes, batched=True
    ):
        if key == "info":
            info = (
                {} if value is None else require_object(value, file=file, record=None, field="info")
            )
            check_json_text(info, file=file, record=None, field="info")
        elif key in _SECTIONS and index is None:
            raise InputError(f"must be a list, got {describe(value)}", file=file, field=key)
        elif index == LIST_START:
            sections.add(key)
        elif key == "images":
            assert index is not None
            for at, image in enumerate(_parse_images(value, index, file=file), index):
                if image.id in position:
                    raise InputError(
                        f"duplicate image id (also images[{position[image.id]}])",
                        file=file,
                        record=image.id,
                        field="id",
                    )
                position[image.id] = at
                images.append(image)
        elif key == "annotations":
            assert index is not None
            got_ids, got_images, got_texts = _parse_captions(value, index, file=file)
            if sink is not None:
                if sink(
                    images if "images" in sections else None,
                    CaptionColumns(got_ids, got_images, got_texts),
                ):
                    sunk += len(got_ids)
                else:
                    sink = None
            if sink is None and keep_captions:
                texts.extend(got_texts)
            caption_ids.extend(got_ids)
            caption_images.extend(got_images)
    for key in ("images", "annotations"):
        if key not in sections:
            raise InputError("missing", file=file, field=key)

    ids = np.frombuffer(caption_ids, dtype=np.int64)
    _check_unique_captions(ids, file=file)
    image_ids = np.frombuffer(caption_images, dtype=np.int64)
    known = np.isin(image_ids, np.fromiter(position, dtype=np.int64, count=len(position)))
    if not known.all():
        first = int(np.argmin(known))
        raise InputError(
            f"caption refers to unknown image {int(image_ids[first])}",
            file=file,
            record=int(ids[first]),
            field="image_id",
        )
    captioned = set(np.unique(image_ids).tolist())

    kept = [image for image in images if image.id in captioned]
    skipped = [image.id for image in images if image.id not in captioned]
    warnings = [
        f"{file}: image {image.id} ({image.file_name}) has no captions; left out"
        for image in images
        if image.id not in captioned
    ]
    return CocoCaptions(
        images=kept,
        caption_columns=(
            CaptionColumns(caption_ids[sunk:], caption_images[sunk:], texts)
            if keep_captions
            else _no_captions()
        ),
        captions_sunk=sunk,
        skipped_images=skipped,
        warnings=warnings,
        info=info,
        caption_count=len(ids),
    )


def _check_unique_captions(ids: np.ndarray, *, file: str) -> None:
    """Raise for the first caption (file order) whose id an earlier caption already has."""
    import numpy as np

    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    repeated = ordered[1:] == ordered[:-1]
    if not repeated.any():
        return
    later = order[1:][repeated]
    at = int(np.argmin(later))
    second = int(later[at])
    first = int(np.flatnonzero(ids == ids[second])[0])
    raise InputError(
        f"duplicate caption id (also annotations[{first}])",
        file=file,
        record=int(ids[second]),
        field="id",
    )


_SECTIONS = frozenset({"images", "annotations"})
# What a database INTEGER column (width, height) holds.
INT32_MAX = 2**31 - 1


def _ints(values: list[Any]) -> bool:
    """Every value an int (not a bool) that a BIGINT holds."""
    return not values or (
        set(map(type, values)) == {int} and min(values) >= INT64_MIN and max(values) <= INT64_MAX
    )


def _texts(values: list[Any]) -> bool:
    """Every value a non-blank string a database can store (no NUL, no lone surrogate)."""
    if not set(map(type, values)) <= {str} or not all(map(str.strip, values)):
        return False
    joined = "".join(values)
    if "\x00" in joined:
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_MISSING = object()


def _column(rows: list[dict[str, Any]], key: str, default: Any = _MISSING) -> list[Any]:
    """Every row's `key`, looked up in C (a `get` a row costs a method call each); a missing
    key raises KeyError, or gives `default` when one is given."""
    try:
        return list(map(itemgetter(key), rows))
    except KeyError:
        if default is _MISSING:
            raise
        return [row.get(key, default) for row in rows]


def _parse_captions(
    batch: list[Any], start: int, *, file: str
) -> tuple[list[int], list[int], list[str]]:
    """The ids, image ids and texts of consecutive captions from `start`, checked column by
    column; a batch failing any check is read record by record, which raises at its first bad
    record exactly as `_parse_caption` does."""
    if set(map(type, batch)) == {dict}:
        try:
            ids, image_ids, texts = (_column(batch, key) for key in ("id", "image_id", "caption"))
        except KeyError:
            pass  # a field missing: named by the record-by-record reading
        else:
            if _ints(ids) and _ints(image_ids) and _texts(texts):
                return ids, image_ids, texts
    rows = [_parse_caption(value, start + i, file=file) for i, value in enumerate(batch)]
    return [r.id for r in rows], [r.image_id for r in rows], [r.text for r in rows]


def _parse_images(batch: list[Any], start: int, *, file: str) -> Iterator[CocoImage]:
    """Consecutive images from `start`, checked column by column (as `_parse_captions`); the
    record-by-record fallback is lazy, so a duplicate id before a bad record is reported first,
    as when every record was read alone."""
    if set(map(type, batch)) == {dict}:
        ids, names = (_column(batch, key, None) for key in ("id", "file_name"))
        urls = _column(batch, "coco_url", None)
        sizes = _column(batch, "width", None) + _column(batch, "height", None)
        given_urls = [url for url in urls if url is not None]
        given_sizes = [size for size in sizes if size is not None]
        if (
            _ints(ids)
            and _texts(names)
            and set(map(type, given_urls)) <= {str}
            and _texts([url for url in given_urls if url.strip()])
            and set(map(type, given_sizes)) <= {int}
            and (not given_sizes or (min(given_sizes) > 0 and max(given_sizes) <= INT32_MAX))
        ):
            n = len(batch)
            return map(CocoImage, ids, names, urls, sizes[:n], sizes[n:])
    return (_parse_image(value, start + i, file=file) for i, value in enumerate(batch))


def _record_name(row: dict[str, Any], section: str, index: int) -> str | int:
    # Name a record by its id when it has a usable one, else by its position.
    value = row.get("id")
    if isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX:
        return value
    return f"{section}[{index}]"


def _parse_image(row: Any, index: int, *, file: str) -> CocoImage:
    row = require_object(row, file=file, record=f"images[{index}]", field=None)
    record = _record_name(row, "images", index)
    image_id = require_int(row, "id", file=file, record=record)
    file_name = require_str(row, "file_name", file=file, record=record)
    coco_url = row.get("coco_url")
    if coco_url is not None and not isinstance(coco_url, str):
        raise InputError(
            f"must be a string, got {describe(coco_url)}",
            file=file,
            record=record,
            field="coco_url",
        )
    if coco_url is not None:
        check_text(coco_url, file=file, record=record, field="coco_url")
    return CocoImage(
        id=image_id,
        file_name=file_name,
        coco_url=coco_url,
        width=_optional_size(row, "width", file=file, record=record),
        height=_optional_size(row, "height", file=file, record=record),
    )


def _optional_size(row: dict[str, Any], key: str, *, file: str, record: str | int) -> int | None:
    if row.get(key) is None:
        return None
    value = require_int(row, key, file=file, record=record)
    if not 0 < value <= INT32_MAX:
        raise InputError(
            f"must be between 1 and {INT32_MAX}, got {value}", file=file, record=record, field=key
        )
    return value


def _parse_caption(row: Any, index: int, *, file: str) -> CocoCaption:
    row = require_object(row, file=file, record=f"annotations[{index}]", field=None)
    record = _record_name(row, "annotations", index)
    caption_id = require_int(row, "id", file=file, record=record)
    image_id = require_int(row, "image_id", file=file, record=record)
    text = require_str(row, "caption", file=file, record=record)
    return CocoCaption(id=caption_id, image_id=image_id, text=text)
