"""Importing COCO captions files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.db import connection, transaction

from annotation.models import Batch, BatchStatus, Dataset, EventAction, Image, ImageSource
from annotation.paths import paths_hidden
from annotation.selectors.datasets.image_availability import local_files_found
from annotation.services.checks import max_length
from annotation.services.datasets.dataset_rows import (
    StreamedRows,
    caption_columns,
    dataset_rows_write,
    longest_text,
)
from annotation.services.datasets.fetch_guard import url_refusal
from annotation.services.datasets.images import image_dir_allowed, image_folder
from annotation.services.events import event_record
from annotation.services.files import media_path, path_component
from annotation.services.jobs.jobs import Progress
from pipeline.coco import (
    CocoCaptions,
    iter_coco_captions,
    read_coco_captions,
    scan_coco_captions,
    stream_coco_captions,
)
from pipeline.errors import InputError
from pipeline.flickr8k import token_file_to_coco
from pipeline.jsonio import check_text

# Files up to this size are read once: a new dataset's on PostgreSQL written while read
# (`_import_streamed`; memory: the images plus 16 bytes a caption), others with their captions
# kept as columns (less than the file's size, against five times for json.load). Bigger ones
# in two streaming passes (images only, then the captions again), whose memory is the images
# plus 16 bytes a caption.
ONE_PASS_BYTES = 256 * 1024 * 1024


@dataclass
class DatasetImportResult:
    dataset: Dataset
    created: bool
    images: int
    captions: int
    skipped_images: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    image_files: int | None = None  # a local folder's image files found (None: not local)
    source_changed: bool = False  # an existing dataset's image source was changed


# The import form's switch for `update_image_source` (a refusal tells a page to tick it).
UPDATE_SOURCE_LABEL = "Change the image source of this dataset if it was imported before"


def image_location_check(*, image_source: str, image_location: str, file: str | None = None) -> str:
    """The image source and where it points, checked before the file is read (a page refuses
    them before the upload is kept): the location as resolved (a local folder is absolute,
    or relative to CROWDVL_IMPORT_DIR). Messages quote the location as the user gave it."""
    given = image_location
    if image_source not in ImageSource.values:
        raise InputError(
            f"unknown image source {image_source!r}; use one of {', '.join(ImageSource.values)}",
            file=file,
            field="image_source",
        )
    if image_source == ImageSource.URL_PREFIX:
        if not image_location.startswith(("http://", "https://", "/")):
            raise InputError(
                f"URL prefix must start with http://, https:// or /, got {image_location!r}",
                file=file,
                field="image_location",
            )
        why = url_refusal(image_location) if image_location.startswith("http") else None
        if why:
            raise InputError(why, file=file, field="image_location")
    elif image_source != ImageSource.LOCAL_DIR:
        return image_location
    elif not given.strip():
        raise InputError(
            "a local folder import needs the folder that holds the images (absolute, or "
            "relative to CROWDVL_IMPORT_DIR)",
            file=file,
            field="image_location",
        )
    else:
        image_location = str(image_folder(given))
        if not Path(image_location).is_dir():
            raise InputError(
                f"local image folder {given!r} does not exist (a relative folder is looked for "
                "in CROWDVL_IMPORT_DIR)",
                file=file,
                field="image_location",
            )
        if not image_dir_allowed(Path(image_location)):
            raise InputError(
                f"local image folder {given!r} is outside the folders images may be "
                "served from (CROWDVL_IMPORT_DIR, CROWDVL_IMAGE_DIRS)",
                file=file,
                field="image_location",
            )
    return image_location


def _check_image_source(
    *, parsed: CocoCaptions, file: str, image_source: str, image_location: str, given: str
) -> None:
    """`image_location` as resolved; messages quote it as the user `given` it."""
    image_location_check(image_source=image_source, image_location=given, file=file)
    if image_source == ImageSource.COCO_URL:
        for image in parsed.images:
            if not image.coco_url:
                raise InputError(
                    "image has no coco_url; give a URL prefix or a local folder instead",
                    file=file,
                    record=image.id,
                    field="coco_url",
                )
    elif image_source == ImageSource.LOCAL_DIR:
        found = local_files_found(
            folder=Path(image_location), file_names=[i.file_name for i in parsed.images]
        )
        if found == 0 and parsed.images:
            raise InputError(
                f"local image folder {given!r} holds none of the file's "
                f"{len(parsed.images)} images (e.g. {parsed.images[0].file_name!r})",
                file=file,
                field="image_location",
            )


def _check_coco_url_hosts(*, parsed: CocoCaptions, file: str) -> None:
    """Each distinct host the images' http(s) coco_urls name, checked as a fetch would check it
    (issue 47: public addresses only, CROWDVL_IMAGE_HOSTS), the first image naming it reported.
    Other coco_urls are never fetched (their images show as unavailable)."""
    seen: set[tuple[str, str | None, int | None]] = set()
    for image in parsed.images:
        url = (image.coco_url or "").strip()
        if not url.lower().startswith(("http://", "https://")):
            continue
        try:
            parts = urlsplit(url)
            key = (parts.scheme.lower(), parts.hostname, parts.port)
        except ValueError:
            key = ("", url, None)  # not a valid URL: url_refusal says so
        if key in seen:
            continue
        seen.add(key)
        why = url_refusal(url)
        if why:
            raise InputError(why, file=file, record=image.id, field="coco_url")


def _local_warning(
    *, parsed: CocoCaptions, image_source: str, image_location: str
) -> tuple[int | None, list[str]]:
    """A local folder's image files found, and a warning when some are missing."""
    if image_source != ImageSource.LOCAL_DIR:
        return None, []
    found = local_files_found(
        folder=Path(image_location), file_names=[i.file_name for i in parsed.images]
    )
    missing = len(parsed.images) - found
    if not missing:
        return found, []
    return found, [
        f"{missing} of {len(parsed.images)} image files are not in the image folder: those "
        "images cannot be shown, and a batch with any of them is not published"
    ]


def _check_option_values(*, file: str, values: dict[str, str]) -> None:
    """Refuse options the dataset's columns cannot hold."""
    for option, (model, column) in _OPTION_COLUMNS.items():
        limit = max_length(model, column)
        check_text(values[option], file=file, record=None, field=option)
        if limit is not None and len(values[option]) > limit:
            raise InputError(
                f"longer than {limit} characters ({len(values[option])})", file=file, field=option
            )


def _check_lengths(*, parsed: CocoCaptions, file: str, values: dict[str, str]) -> None:
    """Refuse what the columns cannot hold, before anything is written."""
    _check_option_values(file=file, values=values)
    for column in ("file_name", "coco_url"):
        limit = max_length(Image, column)
        assert limit is not None
        if longest_text(parsed.images, column) <= limit:
            continue
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
    update_image_source: bool = False,
) -> DatasetImportResult:
    """Validate a COCO captions file completely, then write it in one transaction.

    The file is streamed (peak memory is the parsed records, not the JSON tree; see
    ONE_PASS_BYTES for one pass or two); rows are written with COPY on PostgreSQL (a new
    dataset's while the file is read, rolled back if it fails a check) and large batched
    INSERTs elsewhere. Re-importing the
    same file (same name, same checksum) changes nothing, unless it names another image source:
    refused with the difference, or applied with `update_image_source` while no batch of the
    dataset is published.

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
    # A file up to ONE_PASS_BYTES is read once, its captions kept; a bigger one twice: a first
    # pass validates everything keeping images but not captions (memory), a second streams the
    # captions into COPY.
    one_pass = path.stat().st_size <= ONE_PASS_BYTES
    given = image_location
    if image_source == ImageSource.LOCAL_DIR:
        image_location = str(image_folder(image_location))
    name = name or path.stem
    source_file = Path(file).name  # never a server path: datasheets and manifests show it
    values = {"name": name, "path": source_file, "image_location": image_location}
    if one_pass and _streamable(name=name, file=file, values=values):
        return _import_streamed(
            path=path,
            file=file,
            checksum=checksum,
            image_source=image_source,
            image_location=image_location,
            given=given,
            values=values,
            progress=progress,
        )
    if one_pass:
        with path.open("rb") as fh:
            parsed = read_coco_captions(fh, file=file)
    else:
        parsed = scan_coco_captions(path, file=file)
    _report(
        progress, 40.0, f"validated {len(parsed.images)} images, {parsed.caption_count} captions"
    )
    image_files, folder_warnings = _checked(
        parsed=parsed,
        file=file,
        image_source=image_source,
        image_location=image_location,
        given=given,
        values=values,
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
        changed = (existing.image_source, existing.image_location) != (
            image_source,
            image_location,
        )
        if changed:
            _source_change(
                dataset=existing,
                image_source=image_source,
                image_location=image_location,
                allowed=update_image_source,
                file=file,
            )
        return DatasetImportResult(
            dataset=existing,
            created=False,
            images=existing.images.count(),
            captions=existing.captions.count(),
            skipped_images=parsed.skipped_images,
            warnings=parsed.warnings + folder_warnings,
            image_files=image_files,
            source_changed=changed,
        )

    with transaction.atomic():
        dataset = _dataset_create(
            values=values,
            checksum=checksum,
            image_source=image_source,
            image_location=image_location,
            info=parsed.info,
        )
        images, captions = dataset_rows_write(
            dataset_id=dataset.pk,
            parsed=parsed,
            captions=(
                [parsed.caption_columns]
                if one_pass
                else caption_columns(iter_coco_captions(path, file=file))
            ),
            progress=progress,
        )
    return _created(
        dataset, images, captions, parsed=parsed, warnings=folder_warnings, files=image_files
    )


def _checked(
    *,
    parsed: CocoCaptions,
    file: str,
    image_source: str,
    image_location: str,
    given: str,
    values: dict[str, str],
) -> tuple[int | None, list[str]]:
    """The checks of a parsed file against the options; a local folder's image files found
    and the warning when some are missing (`_local_warning`)."""
    _check_image_source(
        parsed=parsed,
        file=file,
        image_source=image_source,
        image_location=image_location,
        given=given,
    )
    _check_lengths(parsed=parsed, file=file, values=values)
    if image_source == ImageSource.COCO_URL:
        _check_coco_url_hosts(parsed=parsed, file=file)
    return _local_warning(parsed=parsed, image_source=image_source, image_location=image_location)


def _dataset_create(
    *, values: dict[str, str], checksum: str, image_source: str, image_location: str, info: dict
) -> Dataset:
    return Dataset.objects.create(
        name=values["name"],
        source_file=values["path"],
        checksum=checksum,
        image_source=image_source,
        image_location=image_location,
        info=info,
    )


def _created(
    dataset: Dataset,
    images: int,
    captions: int,
    *,
    parsed: CocoCaptions,
    warnings: list[str],
    files: int | None,
) -> DatasetImportResult:
    return DatasetImportResult(
        dataset=dataset,
        created=True,
        images=images,
        captions=captions,
        skipped_images=parsed.skipped_images,
        warnings=parsed.warnings + warnings,
        image_files=files,
    )


def _streamable(*, name: str, file: str, values: dict[str, str]) -> bool:
    """Whether the import may write while it reads (`_import_streamed`): on PostgreSQL, for
    a new dataset whose options the columns hold (else the usual order reports them)."""
    if connection.vendor != "postgresql":
        return False
    try:
        _check_option_values(file=file, values=values)
    except InputError:
        return False
    return not Dataset.objects.filter(name=name).exists()


def _import_streamed(
    *,
    path: Path,
    file: str,
    checksum: str,
    image_source: str,
    image_location: str,
    given: str,
    values: dict[str, str],
    progress: Progress | None,
) -> DatasetImportResult:
    """`dataset_import` of a new dataset writing while it reads: images, then each batch of
    captions into one COPY as soon as its records are checked, so the server stores one
    batch while the next is parsed. The same checks, in the same order, come before the
    transaction commits; a file that fails them rolls it back, leaving nothing."""
    limits = {column: max_length(Image, column) or 0 for column in ("file_name", "coco_url")}
    with transaction.atomic():
        dataset = _dataset_create(
            values=values,
            checksum=checksum,
            image_source=image_source,
            image_location=image_location,
            info={},  # the file's, once read
        )
        rows = StreamedRows(dataset_id=dataset.pk, limits=limits, progress=progress)
        try:
            with path.open("rb") as fh:
                parsed = stream_coco_captions(fh, file=file, sink=rows)
            image_files, folder_warnings = _checked(
                parsed=parsed,
                file=file,
                image_source=image_source,
                image_location=image_location,
                given=given,
                values=values,
            )
        except BaseException:
            rows.abort()  # the connection takes the rollback only once the COPY is ended
            raise
        images, captions = rows.finish(parsed=parsed)
        Dataset.objects.filter(pk=dataset.pk).update(info=parsed.info)
        dataset.info = parsed.info
    _report(progress, 99.0, f"validated and wrote {images} images, {captions} captions")
    return _created(
        dataset, images, captions, parsed=parsed, warnings=folder_warnings, files=image_files
    )


def _source_change(
    *, dataset: Dataset, image_source: str, image_location: str, allowed: bool, file: str
) -> None:
    """Change where an imported dataset's images come from, when asked to and while no worker
    has seen them; otherwise say what differs and how to change it."""
    was = f"{dataset.get_image_source_display()} {paths_hidden(dataset.image_location)!r}"
    now = f"{ImageSource(image_source).label} {paths_hidden(image_location)!r}"
    if not allowed:
        differs = f"dataset {dataset.name!r} exists with images from {was}; this import names {now}"
        raise InputError(
            f"{differs}. To change where its images come from, import again with "
            "--update-image-source (in the API: update_image_source: true)",
            file=file,
            field="image_source",
            page=f'{differs}. To change where its images come from, import again with "'
            f'{UPDATE_SOURCE_LABEL}" ticked',
        )
    published = Batch.objects.filter(run__dataset=dataset).exclude(status=BatchStatus.DRAFT)
    if published.exists():
        raise InputError(
            f"dataset {dataset.name!r} has published batches: its workers saw images from "
            f"{was}, so they are not changed; import under another name",
            file=file,
            field="image_source",
        )
    with transaction.atomic():
        Dataset.objects.filter(pk=dataset.pk).update(
            image_source=image_source, image_location=image_location
        )
        event_record(
            action=EventAction.DATASET_IMAGE_SOURCE_CHANGED,
            data={"dataset": dataset.pk, "from": was, "to": now},
        )
    dataset.refresh_from_db()


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
    folder = media_path("imports", "flickr8k")
    folder.mkdir(parents=True, exist_ok=True)
    converted = folder / f"{path_component(Path(path).stem)}.coco.json"
    converted.write_text(json.dumps(document))
    return dataset_import(
        path=converted,
        image_source=image_source,
        image_location=image_location,
        name=name,
        progress=progress,
    )
