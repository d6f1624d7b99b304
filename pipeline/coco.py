"""Read and validate the official COCO captions JSON (``captions_val2014.json`` layout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.jsonio import decode_json, describe, require_int, require_object, require_str


@dataclass(frozen=True)
class CocoImage:
    """One image record; optional COCO fields are None when absent."""

    id: int
    file_name: str
    coco_url: str | None
    width: int | None
    height: int | None


@dataclass(frozen=True)
class CocoCaption:
    """One caption; ``text`` is exactly as in the file (spaces and newlines kept)."""

    id: int
    image_id: int
    text: str


@dataclass
class CocoCaptions:
    """A validated captions file, images and captions in file order.

    Images without any caption are left out of ``images`` and listed in
    ``skipped_images`` (file order) with one warning each.
    """

    images: list[CocoImage]
    captions: list[CocoCaption]
    skipped_images: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)


def load_coco_captions(path: str | Path) -> CocoCaptions:
    """Read and validate a COCO captions JSON file."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    return parse_coco_captions(raw, file=name)


def parse_coco_captions(raw: bytes | str, *, file: str) -> CocoCaptions:
    """Validate COCO captions JSON text; raise InputError on the first bad record."""
    doc = decode_json(raw, file=file)
    if not isinstance(doc, dict):
        raise InputError(f"top level must be a JSON object, got {describe(doc)}", file=file)
    info = doc.get("info", {})
    if info is None:
        info = {}
    info = require_object(info, file=file, record=None, field="info")
    image_rows = _require_list(doc, "images", file=file)
    caption_rows = _require_list(doc, "annotations", file=file)

    images = [_parse_image(row, i, file=file) for i, row in enumerate(image_rows)]
    position: dict[int, int] = {}
    for i, image in enumerate(images):
        if image.id in position:
            raise InputError(
                f"duplicate image id (also images[{position[image.id]}])",
                file=file,
                record=image.id,
                field="id",
            )
        position[image.id] = i

    captions = [_parse_caption(row, i, file=file) for i, row in enumerate(caption_rows)]
    seen_captions: dict[int, int] = {}
    captioned: set[int] = set()
    for i, caption in enumerate(captions):
        if caption.id in seen_captions:
            raise InputError(
                f"duplicate caption id (also annotations[{seen_captions[caption.id]}])",
                file=file,
                record=caption.id,
                field="id",
            )
        seen_captions[caption.id] = i
        if caption.image_id not in position:
            raise InputError(
                f"caption refers to unknown image {caption.image_id}",
                file=file,
                record=caption.id,
                field="image_id",
            )
        captioned.add(caption.image_id)

    kept = [image for image in images if image.id in captioned]
    skipped = [image.id for image in images if image.id not in captioned]
    warnings = [
        f"{file}: image {image.id} ({image.file_name}) has no captions; left out"
        for image in images
        if image.id not in captioned
    ]
    return CocoCaptions(
        images=kept, captions=captions, skipped_images=skipped, warnings=warnings, info=info
    )


def _require_list(doc: dict[str, Any], key: str, *, file: str) -> list[Any]:
    if key not in doc:
        raise InputError("missing", file=file, field=key)
    value = doc[key]
    if not isinstance(value, list):
        raise InputError(f"must be a list, got {describe(value)}", file=file, field=key)
    return value


def _record_name(row: dict[str, Any], section: str, index: int) -> str | int:
    # Name a record by its id when it has a usable one, else by its position.
    value = row.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
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
    if value <= 0:
        raise InputError(f"must be positive, got {value}", file=file, record=record, field=key)
    return value


def _parse_caption(row: Any, index: int, *, file: str) -> CocoCaption:
    row = require_object(row, file=file, record=f"annotations[{index}]", field=None)
    record = _record_name(row, "annotations", index)
    caption_id = require_int(row, "id", file=file, record=record)
    image_id = require_int(row, "image_id", file=file, record=record)
    text = require_str(row, "caption", file=file, record=record)
    return CocoCaption(id=caption_id, image_id=image_id, text=text)
