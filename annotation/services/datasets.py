"""Importing COCO captions files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.models import Caption, Dataset, Image, ImageSource
from pipeline.coco import CocoCaptions, parse_coco_captions
from pipeline.errors import InputError


@dataclass
class DatasetImportResult:
    dataset: Dataset
    created: bool
    images: int
    captions: int
    skipped_images: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _check_image_source(
    *, parsed: CocoCaptions, file: str, image_source: str, image_location: str
) -> None:
    if image_source not in ImageSource.values:
        raise InputError(
            f"unknown image source {image_source!r}; use one of {', '.join(ImageSource.values)}",
            file=file,
            field="image_source",
        )
    if image_source == ImageSource.COCO_URL:
        for image in parsed.images:
            if not image.coco_url:
                raise InputError(
                    "image has no coco_url; give a URL prefix or a local folder instead",
                    file=file,
                    record=image.id,
                    field="coco_url",
                )
    elif image_source == ImageSource.URL_PREFIX:
        if not image_location.startswith(("http://", "https://", "/")):
            raise InputError(
                f"URL prefix must start with http://, https:// or /, got {image_location!r}",
                file=file,
                field="image_location",
            )
    elif not Path(image_location).is_dir():
        raise InputError(
            f"local image folder {image_location!r} does not exist",
            file=file,
            field="image_location",
        )


def dataset_import(
    *,
    path: str | Path,
    image_source: str = ImageSource.COCO_URL,
    image_location: str = "",
    name: str | None = None,
) -> DatasetImportResult:
    """Validate a COCO captions file completely, then write it in one transaction.

    Re-importing the same file (same name, same checksum) changes nothing.
    """
    path = Path(path)
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=file) from exc
    checksum = hashlib.sha256(raw).hexdigest()
    parsed = parse_coco_captions(raw, file=file)
    if image_source == ImageSource.LOCAL_DIR:
        image_location = str(Path(image_location).resolve())
    _check_image_source(
        parsed=parsed, file=file, image_source=image_source, image_location=image_location
    )
    name = name or path.stem

    existing = Dataset.objects.filter(name=name).first()
    if existing is not None:
        if existing.checksum != checksum:
            raise InputError(
                f"dataset {name!r} was imported from a different file "
                f"(sha256 {existing.checksum[:12]}…); import under another name",
                file=file,
                field="name",
            )
        return DatasetImportResult(
            dataset=existing,
            created=False,
            images=existing.images.count(),
            captions=existing.captions.count(),
            skipped_images=parsed.skipped_images,
            warnings=parsed.warnings,
        )

    with transaction.atomic():
        dataset = Dataset.objects.create(
            name=name,
            source_file=file,
            checksum=checksum,
            image_source=image_source,
            image_location=image_location,
            info=parsed.info,
        )
        Image.objects.bulk_create(
            [
                Image(
                    dataset=dataset,
                    coco_id=im.id,
                    file_name=im.file_name,
                    coco_url=im.coco_url or "",
                    width=im.width,
                    height=im.height,
                )
                for im in parsed.images
            ],
            batch_size=5000,
        )
        pk_by_coco = dict(dataset.images.values_list("coco_id", "pk"))
        Caption.objects.bulk_create(
            [
                Caption(dataset=dataset, image_id=pk_by_coco[c.image_id], coco_id=c.id, text=c.text)
                for c in parsed.captions
            ],
            batch_size=5000,
        )
    return DatasetImportResult(
        dataset=dataset,
        created=True,
        images=len(parsed.images),
        captions=len(parsed.captions),
        skipped_images=parsed.skipped_images,
        warnings=parsed.warnings,
    )
