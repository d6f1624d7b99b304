"""Images of the task and review pages: by a page key and place (workers, any provider:
selectors/work/images.py) or by id (researchers of the dataset's runs, staff)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from annotation.models import Image, ImageSource
from annotation.permissions import Action, is_staff, require, visible_runs
from annotation.selectors.work.images import served_image
from annotation.selectors.work.task_page import hit_image_places
from annotation.services.datasets.images import (
    ImageUnavailable,
    cache_path,
    image_cached,
    image_variant,
)


def _image_response(image: Image) -> HttpResponse:
    try:
        if image.dataset.image_source == ImageSource.LOCAL_DIR:
            data = image_cached(image=image)  # a local read: fine inside a request
        else:
            path = cache_path(image)  # remote sources are fetched by the caching job only
            if not path.exists():
                raise Http404("image not cached yet")
            data = path.read_bytes()
    except ImageUnavailable:
        raise Http404("image unavailable") from None
    return _jpeg_response(data)


def _jpeg_response(data: bytes) -> HttpResponse:
    """The re-encoded JPEG: only ever an image type, no file name, nothing to sniff."""
    response = HttpResponse(data, content_type="image/jpeg")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=86400"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response


def question_image(request: HttpRequest, key: str, place: str) -> HttpResponse:
    """An image of a worker's page: `key` is the page's signed key (its assignment), `place`
    the question's position and the image's slot. 404 once the assignment has ended. One
    query (is the assignment open?); the HIT's places come from memory and the rendering
    from disk."""
    shown = served_image(key=key, place=place, places=hit_image_places)
    if shown is None:
        raise Http404("no such image")
    try:
        return _jpeg_response(image_variant(image_id=shown.image_id, variant=shown.variant))
    except FileNotFoundError:  # not cached yet: fetch (local files) or wait for the job
        image = get_object_or_404(Image.objects.select_related("dataset"), pk=shown.image_id)
        _image_response(image)  # caches the canonical rendering, or 404
        return _jpeg_response(image_variant(image_id=shown.image_id, variant=shown.variant))


@login_required
def staff_image(request: HttpRequest, image_id: int) -> HttpResponse:
    """An image by its id, for the researcher pages (the review queue): staff see any; a
    member sees the images of datasets used by their projects' runs (404 for the others)."""
    require(request.user, Action.VIEW)
    images = Image.objects.select_related("dataset")
    if not is_staff(request.user):
        images = images.filter(dataset__runs__in=visible_runs(request.user)).distinct()
    return _image_response(get_object_or_404(images, pk=image_id))
