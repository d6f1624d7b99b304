"""Importing COCO captions files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotation.models import Dataset, Image, ImageSource
from annotation.services.dataset_rows import dataset_rows_write
from annotation.services.images import image_dir_allowed, image_folder
from annotation.services.jobs import Progress
from pipeline.coco import CocoCaptions, iter_coco_captions, scan_coco_captions
from pipeline.errors import InputError
from pipeline.flickr8k import token_file_to_coco
from pipeline.jsonio import check_text


@dataclass
class DatasetImportResult:
    dataset: Dataset
    created: bool
    images: int
    captions: int
    skipped_images: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _check_image_source(
    *, parsed: CocoCaptions, file: str, image_source: str, image_location: str, given: str
) -> None:
    """`image_location` as resolved; messages quote it as the user `given` it."""
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
            f"local image folder {given!r} does not exist (a relative folder is looked for "
            "in CROWDVL_IMPORT_DIR)",
            file=file,
            field="image_location",
        )
    elif not image_dir_allowed(Path(image_location)):
        raise InputError(
            f"local image folder {given!r} is outside the folders images may be "
            "served from (CROWDVL_IMPORT_DIR, CROWDVL_IMAGE_DIRS)",
            file=file,
            field="image_location",
        )


def _check_lengths(*, parsed: CocoCaptions, file: str, values: dict[str, str]) -> None:
    """Refuse what the columns cannot hold, before anything is written."""
    for option, (model, column) in _OPTION_COLUMNS.items():
        limit = model._meta.get_field(column).max_length
        check_text(values[option], file=file, record=None, field=option)
        if limit is not None and len(values[option]) > limit:
            raise InputError(
                f"longer than {limit} characters ({len(values[option])})", file=file, field=option
            )
    for column in ("file_name", "coco_url"):
        limit = Image._meta.get_field(column).max_length
        assert limit is not None
        for image in parsed.images:
            value = getattr(image, column) or ""
            if len(value) > limit:
                raise InputError(
                    f"longer than {limit} characters ({len(value)})",
                    file=file,
                    record=image.id,
                    field=column,
                )


# The options a user gives that land in a column: (model, column).
_OPTION_COLUMNS = {
    "name": (Dataset, "name"),
    "path": (Dataset, "source_file"),
    "image_location": (Dataset, "image_location"),
}


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _report(progress: Progress | None, percent: float, message: str) -> None:
    if progress is not None:
        progress(percent, message)


def dataset_import(
    *,
    path: str | Path,
    image_source: str = ImageSource.COCO_URL,
    image_location: str = "",
    name: str | None = None,
    progress: Progress | None = None,
    source: str | None = None,
) -> DatasetImportResult:
    """Validate a COCO captions file completely, then write it in one transaction.

    The file is streamed (peak memory is the parsed records, not the JSON tree); rows are
    written with COPY on PostgreSQL and large batched INSERTs elsewhere. Re-importing the
    same file (same name, same checksum) changes nothing.

    `source` is the file as its user knows it (an upload's own name, a path inside the import
    folder): errors and warnings name it instead of the server's path (default: the path,
    for the command line). The dataset records the file's name and sha256 only.
    """
    path = Path(path)
    file = source or str(path)
    _report(progress, 0.0, "checking the file")
    try:
        checksum = _sha256(path)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=file) from exc
    # First pass: validate everything, keeping images but not captions (memory).
    parsed = scan_coco_captions(path, file=file)
    _report(
        progress, 40.0, f"validated {len(parsed.images)} images, {parsed.caption_count} captions"
    )
    given = image_location
    if image_source == ImageSource.LOCAL_DIR:
        image_location = str(image_folder(image_location))
    _check_image_source(
        parsed=parsed,
        file=file,
        image_source=image_source,
        image_location=image_location,
        given=given,
    )
    name = name or path.stem
    source_file = Path(file).name  # never a server path: datasheets and manifests show it
    _check_lengths(
        parsed=parsed,
        file=file,
        values={"name": name, "path": source_file, "image_location": image_location},
    )

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
            source_file=source_file,
            checksum=checksum,
            image_source=image_source,
            image_location=image_location,
            info=parsed.info,
        )
        # Second pass: the captions stream from the file again into COPY.
        images, captions = dataset_rows_write(
            dataset=dataset,
            parsed=parsed,
            captions=iter_coco_captions(path, file=file),
            progress=progress,
        )
    return DatasetImportResult(
        dataset=dataset,
        created=True,
        images=images,
        captions=captions,
        skipped_images=parsed.skipped_images,
        warnings=parsed.warnings,
    )


def dataset_import_flickr8k(
    *,
    path: str | Path,
    name: str,
    image_source: str = ImageSource.LOCAL_DIR,
    image_location: str = "",
    progress: Progress | None = None,
) -> DatasetImportResult:
    """Flickr8k's token file as a dataset (images numbered in name order, see
    `pipeline.flickr8k.token_file_to_coco`), imported like a COCO file."""
    document = token_file_to_coco(path)
    folder = Path(settings.MEDIA_ROOT) / "imports" / "flickr8k"
    folder.mkdir(parents=True, exist_ok=True)
    converted = folder / f"{Path(path).stem}.coco.json"
    converted.write_text(json.dumps(document))
    return dataset_import(
        path=converted,
        image_source=image_source,
        image_location=image_location,
        name=name,
        progress=progress,
    )
