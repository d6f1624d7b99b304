"""Images as workers receive them: fetched from the dataset's source, decoded, and re-encoded
into one fixed-size JPEG without metadata, so neither a name, a header nor the image's size
identifies the COCO image. Cached on disk by image pk (never exposed by name); workers get
renderings of it (`image_variant`), a different one wherever a page shows an image twice."""

from __future__ import annotations

import hashlib
import hmac
import io
import random
import secrets
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from PIL import Image as PILImage
from PIL import ImageFilter, UnidentifiedImageError

from annotation.models import (
    Batch,
    BatchImage,
    EventAction,
    Hit,
    HitImage,
    Image,
    ImageSource,
    Job,
    Worker,
)
from annotation.selectors.work.images import FIRST_VARIANTS
from annotation.services.datasets.fetch_guard import FetchFailed, fetch
from annotation.services.events import event_record
from annotation.services.jobs.jobs import job_create, job_fail, job_progress, job_start, job_succeed
from annotation.tasktypes import task_type_for
from annotation.tasktypes.base import RELAX_IMAGES

# Every image is served as a SIZE x SIZE JPEG: the picture fitted inside, the rest filled with
# a blurred copy of itself, so its own width and height (public in the COCO file) never show.
SIZE = 512
MAX_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 60_000_000
TIMEOUT = (5, 20)  # connect, read (seconds)
ACCEPTED_FORMATS = {"JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF"}


class ImageUnavailable(Exception):
    """The image could not be fetched or decoded."""


def batch_images_create(*, batch: Batch, image_ids: Iterable[int]) -> int:
    """The images a batch shows (in batch_create's transaction): what the caching job fetches
    and the publish check looks for. Their tokens are no longer served (issue 25: pages name
    images per question and assignment, selectors/work/images.py)."""
    rows = [
        BatchImage(batch=batch, image_id=pk, token=secrets.token_urlsafe(24))
        for pk in sorted(set(image_ids))
    ]
    BatchImage.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)
    return len(rows)


def cache_path(image: Image) -> Path:
    return cache_path_for(image.pk)


def cache_path_for(image_id: int) -> Path:
    return Path(settings.MEDIA_ROOT) / "image-cache" / f"{image_id}.jpg"


def image_dirs() -> list[Path]:
    """The server folders local_dir images may come from (links resolved)."""
    return [Path(p).resolve() for p in (settings.CROWDVL_IMPORT_DIR, *settings.CROWDVL_IMAGE_DIRS)]


def image_folder(location: str) -> Path:
    """A local_dir dataset's folder as given: absolute, or relative to CROWDVL_IMPORT_DIR (as
    files imported by path are), so nobody needs to know the server's folders to name one."""
    return (Path(settings.CROWDVL_IMPORT_DIR) / location).resolve()


def image_dir_allowed(path: Path) -> bool:
    """Whether `path`, links resolved, lies inside CROWDVL_IMPORT_DIR or CROWDVL_IMAGE_DIRS."""
    resolved = path.resolve()
    return any(resolved.is_relative_to(root) for root in image_dirs())


def _source_bytes(image: Image) -> bytes:
    dataset = image.dataset
    if dataset.image_source == ImageSource.LOCAL_DIR:
        root = Path(dataset.image_location).resolve()
        path = (root / image.file_name).resolve()
        # Checked again here, not only at import: a dataset imported before the check, a
        # setting narrowed since, or a link inside the folder pointing elsewhere.
        if root not in path.parents or not image_dir_allowed(path) or not path.is_file():
            raise ImageUnavailable("file missing")
        if path.stat().st_size > MAX_BYTES:
            raise ImageUnavailable("file too large")
        return path.read_bytes()
    if dataset.image_source == ImageSource.COCO_URL:
        url = image.coco_url
    else:
        url = dataset.image_location.rstrip("/") + "/" + image.file_name
    return download(url)


def image_original(*, image: Image) -> bytes:
    """The image's own bytes from its dataset's source (not the served rendering): for
    models that decode and preprocess images themselves. ImageUnavailable if not readable."""
    return _source_bytes(image)


def download(url: str) -> bytes:
    """GET `url` (http/https only) with timeouts and a size cap, from public hosts only:
    the address check, the pinned connection and the checked redirects are fetch_guard's."""
    try:
        return fetch(url, max_bytes=MAX_BYTES, timeout=TIMEOUT)
    except FetchFailed as exc:
        raise ImageUnavailable(str(exc)) from None


def reencode(data: bytes) -> bytes:
    """Decode an image (raster formats only: an SVG or HTML file is refused) and re-encode it
    as a SIZE x SIZE JPEG carrying no metadata."""
    try:
        with PILImage.open(io.BytesIO(data)) as source:
            if source.format not in ACCEPTED_FORMATS:
                raise ImageUnavailable(f"not an accepted image format ({source.format})")
            if source.width * source.height > MAX_PIXELS:
                raise ImageUnavailable("too many pixels")
            picture = source.convert("RGB")  # first frame; drops alpha, palette and EXIF
    except (UnidentifiedImageError, OSError, PILImage.DecompressionBombError):
        raise ImageUnavailable("not an image") from None
    scale = SIZE / max(picture.width, picture.height)
    fitted = picture.resize(
        (max(1, round(picture.width * scale)), max(1, round(picture.height * scale))),
        PILImage.Resampling.LANCZOS,
    )
    canvas = picture.resize((SIZE, SIZE), PILImage.Resampling.BILINEAR).filter(
        ImageFilter.GaussianBlur(24)
    )
    canvas.paste(fitted, ((SIZE - fitted.width) // 2, (SIZE - fitted.height) // 2))
    out = io.BytesIO()
    canvas.save(out, format="JPEG", quality=88, optimize=True)
    return out.getvalue()


def image_cached(*, image: Image) -> bytes:
    """The served bytes of `image`, fetched and re-encoded once (ImageUnavailable if not)."""
    path = cache_path(image)
    if path.exists():
        return path.read_bytes()
    encoded = reencode(_source_bytes(image))
    _write_atomic(path, encoded)
    return encoded


def variant_path(image_id: int, variant: int) -> Path:
    # "w": whole-picture renderings (issue 47); cropped ones of older versions are not reused.
    return cache_path_for(image_id).with_name(f"{image_id}.w{variant}.jpg")


def render_variant(data: bytes, *, seed: bytes) -> bytes:
    """Another rendering of a served JPEG, the whole picture as it is: a noise of at most one
    grey level per channel and a JPEG quality, drawn from `seed`, so no two renderings share
    their bytes (a byte hash links nothing) while a worker judges the same picture. No crop,
    brightness or contrast change (issue 47: they removed up to a fifth of a picture, and
    objects at its edge, from what workers judged, and stopped no one holding the originals).
    A perceptual hash still matches renderings and originals: what keeps a worker from
    linking questions is that nobody is shown one image twice (packing, claim); what catches
    one who looks the pictures up is the checks the lookup answers wrong (BISON stage 3's
    traps)."""
    import numpy as np  # here, not at start-up (issue 46)

    draw = random.Random(seed)
    with PILImage.open(io.BytesIO(data)) as source:
        pixels = np.asarray(source.convert("RGB"), dtype=np.int16)
    noise = np.random.default_rng(draw.getrandbits(64)).integers(-1, 2, size=pixels.shape)
    picture = PILImage.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8))
    out = io.BytesIO()
    picture.save(out, format="JPEG", quality=draw.randint(86, 92), optimize=True)
    return out.getvalue()


def image_variant(*, image_id: int, variant: int) -> bytes:
    """The served bytes of one rendering of an image, made once from its cached re-encoding
    and kept on disk (FileNotFoundError while the image itself is not cached)."""
    path = variant_path(image_id, variant)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    base = cache_path_for(image_id).read_bytes()
    seed = hmac.new(
        settings.SECRET_KEY.encode(), f"render:{image_id}:{variant}".encode(), hashlib.sha256
    ).digest()
    encoded = render_variant(base, seed=seed)
    _write_atomic(path, encoded)
    return encoded


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # atomic: a reader never sees half a file


def hit_images_create(*, hits: Iterable[tuple[Hit, Iterable[int]]]) -> int:
    """Record the images each HIT shows (in batch_create's transaction), for the claim's
    `image_seen_before`."""
    rows = [HitImage(hit=hit, image_id=pk) for hit, pks in hits for pk in sorted(set(pks))]
    HitImage.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)
    return len(rows)


def images_kept_apart(batch: Batch) -> bool:
    """Whether the claim keeps `batch`'s workers off HITs showing an image they saw before:
    for an image-disjoint stage (the only ones with `HitImage` rows for the rule to read),
    unless the batch relaxed the rule for a trusted pool (`RELAX_IMAGES`). Elsewhere the rule
    could keep nobody off, and the claim leaves its subquery out (a stage-2 claim's CPU
    0.90x, median of alternated blocks)."""
    return task_type_for(batch.stage).images_disjoint and not batch.options.get(RELAX_IMAGES.name)


def image_seen_before(worker: Worker) -> Exists:
    """HITs (as a filter on Hit) showing an image `worker` had in a HIT they claimed (of an
    image-disjoint stage): seeing it again would link two questions."""
    seen = HitImage.objects.filter(hit__assignments__worker=worker).values("image_id")
    return Exists(HitImage.objects.filter(hit=OuterRef("pk"), image_id__in=seen))


def images_cache_start(*, batch: Batch) -> Job:
    """Fetch and cache a batch's images as a Celery job, so no worker's request waits on a
    remote fetch."""
    from annotation import tasks

    job = job_create(name="images.cache", run=batch.run, params={"batch": batch.pk})
    transaction.on_commit(lambda: tasks.images_cache_task.delay(job.pk))
    return job


def images_cache_job(*, job_id: int) -> None:
    job = job_start(job_id=job_id, message="caching images")
    batch = Batch.objects.select_related("run").get(pk=job.params["batch"])
    try:
        images = list(
            Image.objects.filter(pk__in=batch.images.values("image_id"))
            .select_related("dataset")
            .order_by("pk")
        )
        failed = 0
        for n, image in enumerate(images, start=1):
            try:
                image_cached(image=image)
                for variant in range(FIRST_VARIANTS):  # what a page's first showing serves
                    image_variant(image_id=image.pk, variant=variant)
            except ImageUnavailable:
                failed += 1
            if n % 25 == 0 or n == len(images):
                job_progress(
                    job_id=job_id,
                    progress=100.0 * n / len(images),
                    message=f"{n}/{len(images)} images cached",
                )
    except Exception as exc:
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
    result = {"batch": batch.pk, "images": len(images), "unavailable": failed}
    event_record(action=EventAction.IMAGES_CACHED, run=batch.run, batch=batch, data=result)
    job_succeed(
        job_id=job_id,
        result=result,
        message=f"{len(images) - failed}/{len(images)} images cached, {failed} unavailable",
    )
