"""How pages name images. Workers' pages use a batch's random tokens: no image pk, file name,
COCO id or source URL reaches a worker's browser."""

from __future__ import annotations

from collections.abc import Iterable

from django.urls import reverse

from annotation.models import Batch, BatchImage, Image
from annotation.selectors.hit_cache import hit_cached


class ImageLinks:
    """The URLs a page loads its images from."""

    def __init__(self, tokens: dict[int, str] | None = None, *, staff: bool = False) -> None:
        self.tokens = tokens or {}
        self.staff = staff

    def url(self, image: Image) -> str:
        if self.staff:
            return reverse("staff-image", args=[image.pk])
        token = self.tokens.get(image.pk)
        # An image without a token of this batch is shown as "Unavailable", never by its pk.
        return reverse("batch-image", args=[token]) if token else ""


def batch_image_links(*, batch: Batch, image_ids: Iterable[int]) -> ImageLinks:
    tokens = dict(
        BatchImage.objects.filter(batch=batch, image_id__in=set(image_ids)).values_list(
            "image_id", "token"
        )
    )
    return ImageLinks(tokens)


STAFF_LINKS = ImageLinks(staff=True)


def batch_image_id(token: str) -> int | None:
    """The image a batch's token names, or None. A token never changes what it names, so the
    answer is cached like a HIT's view (an unknown token is asked again every time)."""
    return hit_cached(
        f"batch-image:v1:{token}",
        lambda: BatchImage.objects.filter(token=token).values_list("image_id", flat=True).first(),
    )
